"""What to install for a JAX version on a platform, and why an install failed (pure): shared by the
venv and docker backends."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from harness.core.kinds import Platform
from harness.core.platforms import describe


def find_links_for(jax_version: str, platform: Platform) -> list[str]:
    return describe(platform).install.find_links_for(jax_version)


def jax_requirements(jax_version: str, platform: Platform, driver_cuda: str | None = None) -> list[str]:
    """Pip requirement strings that give exactly `jax_version` for `platform`.

    The extra is the platform's (harness/core/platforms.py): the CUDA extra was renamed (0.4.x up to 0.4.25
    published `cuda12_pip`, wheels on Google's find-links page; from 0.4.26 `cuda12` pulls the CUDA libraries from
    the package index; from 0.7.2 `cuda13` too, taken where the host's driver runs CUDA 13: `driver_cuda`, `13.0`);
    `tpu` brings libtpu.
    """
    extra = describe(platform).install.extra_for(jax_version, driver_cuda)
    return [f"jax[{extra}]=={jax_version}" if extra else f"jax=={jax_version}", f"jaxlib=={jax_version}"]


def exclude_newer(release_date: datetime | None) -> str | None:
    """uv's `--exclude-newer` for a release: its dependencies (numpy, scipy, ml_dtypes...) as they were
    the day after it came out, so an old jax gets the numpy it was made for. None when the date is unknown."""
    if release_date is None:
        return None
    return (release_date + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
# uv's error lines start with `error:` (or `×` on a terminal); the cause follows, indented, after
# `cause:` or `╰─▶`; `hint:` lines are advice, not the reason.
_UV_DECORATION = re.compile(r"^(?:error:|×|╰─▶|│|cause:|caused by:)\s*", re.IGNORECASE)


def resolver_reason(log_text: str, limit: int = 400) -> str:
    """uv's reason for a failed install or resolution, as one line ("" when the log has none):
    the last command's error and its causes, joined."""
    last_command = log_text.rsplit("\n$ ", 1)[-1]
    lines = [line.strip() for line in last_command.splitlines()[1:]]
    start = next((i for i, line in enumerate(lines) if line.startswith(("error:", "×"))), None)
    if start is None:
        return ""
    parts = []
    for line in lines[start:]:
        if not line or line.startswith("hint:"):
            break
        text = line
        while True:  # "× ╰─▶ cause:" may stack
            stripped = _UV_DECORATION.sub("", text)
            if stripped == text:
                break
            text = stripped
        if text:
            parts.append(text)
    reason = parts[0].rstrip(":") + (": " + " ".join(parts[1:]) if len(parts) > 1 else "")
    return reason if len(reason) <= limit else reason[: limit - 1] + "…"
