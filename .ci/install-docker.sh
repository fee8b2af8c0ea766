#!/usr/bin/env bash
# Install Debian's Docker engine (and debootstrap, for `make base-image`) and make sure dockerd runs.
# Idempotent: a second call only checks that the daemon answers. Needs root (CI machines run as root).
set -euo pipefail

WAIT_S="${DOCKERD_WAIT_S:-60}"
LOG="${DOCKERD_LOG:-/var/log/dockerd.log}"

need_install=()
command -v dockerd >/dev/null 2>&1 || need_install+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need_install+=(debootstrap)
if ((${#need_install[@]})); then
    echo "install-docker: apt-get install ${need_install[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need_install[@]}" >/dev/null
fi

# The daemon check uses the engine's own CLI when there is one; `docker info` is what a user would run.
daemon_answers() { docker info >/dev/null 2>&1; }

if daemon_answers; then
    echo "install-docker: dockerd already answers"
    exit 0
fi

start_dockerd() {  # $1: storage driver
    echo "install-docker: starting dockerd (storage driver $1, log $LOG)"
    nohup dockerd --storage-driver="$1" >>"$LOG" 2>&1 &
    local pid=$!
    for _ in $(seq "$WAIT_S"); do
        if daemon_answers; then echo "install-docker: dockerd up (pid $pid)"; return 0; fi
        kill -0 "$pid" 2>/dev/null || break  # it exited: try the next driver
        sleep 1
    done
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 1
}

# overlay2 is fast; vfs works on filesystems where overlay cannot be mounted (nested containers).
start_dockerd overlay2 || start_dockerd vfs || {
    echo "install-docker: dockerd did not answer within ${WAIT_S}s; last log lines:" >&2
    tail -n 20 "$LOG" >&2
    exit 1
}
