#!/usr/bin/env bash
# Build an offline Debian base image (with the release's Python) from Debian's own packages, so no
# image registry is needed (none is reachable on these machines). Idempotent: skips when it exists.
#   usage: harness base-image [--debian trixie] [--image NAME:TAG] [--force]  (runs this script, shipped
#          in the package; or make_base_image.sh [NAME:TAG], default jax-harness-base:$DEBIAN)
#   env:   DEBIAN=bookworm (Python 3.11, the default) or trixie (Python 3.13, for JAX 0.11 and newer)
#          DEBIAN_MIRROR (default http://deb.debian.org/debian), FORCE=1 to rebuild
set -euo pipefail

DEBIAN="${DEBIAN:-bookworm}"
case "$DEBIAN" in
    bookworm|trixie) ;;
    *) echo "base-image: DEBIAN=$DEBIAN is not supported (bookworm: Python 3.11, trixie: Python 3.13)" >&2
       exit 2 ;;
esac
IMAGE="${1:-${BASE_IMAGE:-jax-harness-base:$DEBIAN}}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

if [[ "${FORCE:-0}" != 1 ]] && docker image inspect "$IMAGE" >/dev/null 2>&1; then
    echo "base-image: $IMAGE already exists (rebuild it with: harness base-image --force)"
    exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
    echo "base-image: installing debootstrap"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
fi

ROOTFS="$(mktemp -d "${TMPDIR:-/tmp}/jax-harness-rootfs.XXXXXX")"
child=
cleanup() {
    # What debootstrap mounted inside the rootfs (proc, sys) goes first; rm never leaves the rootfs's file system.
    grep -F " $ROOTFS/" /proc/mounts 2>/dev/null | cut -d' ' -f2 | sort -r | xargs -r umount -l 2>/dev/null || true
    rm -rf --one-file-system "$ROOTFS"
}
stopped() {
    # SIGTERM/SIGINT (the harness forwards its own to this process group): debootstrap ends before its folder goes
    trap - TERM INT
    if [[ -n "$child" ]]; then kill -TERM "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; fi
    rm -f "$ROOTFS.log"
    echo "base-image: stopped; nothing was built" >&2
    exit 143
}
trap cleanup EXIT
trap stopped TERM INT

start=$(date +%s)
echo "base-image: debootstrap $DEBIAN into $ROOTFS (a minute or more)"
# minbase + python3-venv: the Dockerfiles make a venv (Debian's system Python is PEP 668 managed).
# In the background and waited for: bash runs a trap only between commands, and `wait` is one it can leave.
debootstrap --variant=minbase --include=python3,python3-venv,python3-pip,ca-certificates \
    "$DEBIAN" "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 &
child=$!
wait "$child" || {
    echo "base-image: debootstrap failed; last lines of $ROOTFS.log:" >&2
    tail -n 20 "$ROOTFS.log" >&2
    exit 1
}
child=
# Downloaded .debs and apt lists are only weight in the image.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*

echo "base-image: importing as $IMAGE"
tar -C "$ROOTFS" -c . | docker import \
    --change 'ENV LANG=C.UTF-8' \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'CMD ["python3"]' \
    - "$IMAGE" >/dev/null
rm -f "$ROOTFS.log"
echo "base-image: $IMAGE built in $(( $(date +%s) - start )) s ($(docker run --rm "$IMAGE" python3 --version))"
