"""What a user sets up before measuring: `harness init` (a starter config for their script) and
`harness base-image` (the offline Debian image `--backend docker` builds on), both from the installed
package alone."""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from harness.core.confidence import default_runs
from harness.inputs.config import MAX_NAME, parse_config, parse_config_text, starter_config, starter_values
from harness.core.errors import UserError
from harness.core.files import fitting_name, harness_version, write_atomic

if TYPE_CHECKING:  # (named here, so that the layers contract sees the import `base_image` makes late)
    from harness.environments.docker import build_base_image  # noqa: F401


def init_config(script: Path, output: Path | None = None, force: bool = False) -> Path:
    """`harness init SCRIPT`: a commented config that runs SCRIPT (written to `output`, default the script's
    name with .yaml, in the current folder), checked by the config's own reader before it replaces anything."""
    if not script.is_file():
        raise UserError(f"{script}: no such script")
    if script.suffix in (".yaml", ".yml"):
        raise UserError(f"{script}: is a config; give the Python script the config should run")
    output = output if output is not None else Path(f"{script.stem}.yaml")
    if output.exists() and _same_file(output, script):  # --force too: the script is never replaced
        raise UserError(f"{output}: is the script itself; give another file for the config")
    if output.exists() and not force:
        raise UserError(f"{output}: already exists (--force to replace it)")
    if output.is_dir():
        raise UserError(f"{output}: is a folder; give the file to write")
    for above in output.parents:
        if above.exists() and not above.is_dir():
            raise UserError(f"{output}: {above} is not a folder")
    name = fitting_name("check-" + (re.sub(r"[^A-Za-z0-9._-]", "_", script.stem) or "script"), MAX_NAME)
    repro = os.path.relpath(script.resolve(), output.resolve().parent)
    runs = default_runs()  # a script's, as check's
    text = starter_config(repro, name, runs,
                          f"A starter config for {script.name}, written by harness {harness_version()} "
                          f"(`harness init`).", shlex.join(["harness", "run", str(output)]))
    # Before anything is replaced: the text must mean the starter's keys and nothing else (a script's name
    # is in its comments; one that broke out of them would add keys of its own).
    base = output.resolve().parent
    if parse_config_text(text, str(output), base) != parse_config(starter_values(repro, name, runs), str(output), base):
        raise UserError(f"{script}: its name cannot be written into a config's comment; rename the script")
    try:
        write_atomic(output, text)
    except OSError as exc:
        raise UserError(f"{output}: cannot write the config ({exc.strerror})") from None
    return output


def _same_file(a: Path, b: Path) -> bool:
    """Whether `a` and `b` are one file: through links (symbolic or hard) too."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def base_image(debian: str, image: str | None = None, force: bool = False) -> int:
    """`harness base-image`: build (or keep) the offline base image; the build script's exit code."""
    # Late, as harness.environments imports the docker backend: the Docker SDK only where it is used.
    from harness.environments.docker import build_base_image  # noqa: PLC0415

    return build_base_image(debian, image, force)
