"""The typed options each command's service takes. A field of an option is not written here: harness/inputs/
options.py declares every option once (its type and default among the rest) and `@takes_options(dest, ...)`
makes the field from that declaration; a class's own annotations are what the service needs besides the
options. `from_given` fills both kinds from what was given. For readers and type checkers, options.pyi
beside this file lists every field (`make docs` writes it; tests/unit/test_options.py checks it)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from harness.inputs.options import Given, dataclass_stub, takes_options


@dataclass(frozen=True)
@takes_options(search="python_search", install="install_python")
class PythonOptions:
    """Where to look for the Pythons that releases need besides the harness's own (harness/inputs/pythons.py):
    --python-search interpreters or folders, --install-python (uv downloads one none here has)."""


@dataclass(frozen=True)
@takes_options("backend", "versions", "runs", "jobs", "out", "rebuild", "python", "seeds", "shard",
               "cache_thresholds", "processes", "vary", "index_url", "extra_index_urls", "with_editable")
class MeasureOptions:
    """What every measuring command takes (run, check, nightly, bisect): where it runs, what replaces the
    config's keys, where packages come from (harness/inputs/dependencies.py's Sources)."""

    pythons: PythonOptions = PythonOptions()
    # The command as parsed (harness/inputs/options.py): every command line printed for it is spelled from this.
    given: Given | None = field(default=None, compare=False)
    # The command line as typed, which the results header records ("harness" alone for options built by hand).
    command: str = field(default="harness", compare=False)


@dataclass(frozen=True)
@takes_options("all_runs", "resume")
class SweepOptions(MeasureOptions):
    """run, check, nightly: every run even after a cell reproduced; finish the sweep of a results folder."""


@dataclass(frozen=True)
@takes_options("shards", "all_runs", "partition", "cpus_per_task", "time", "sbatch_args", "only_shards")
class SubmitOptions(MeasureOptions):
    """`harness submit`: the sweep's options (as for run) and what each Slurm task asks for."""


@dataclass(frozen=True)
@takes_options("good", "bad", "jax_repo", "fresh")
class BisectOptions(MeasureOptions):
    """`harness bisect`: the known endpoints, a jax clone for the commits, whether to start over."""


@dataclass(frozen=True)
@takes_options("good", "resume", "max_candidates")
class ReduceOptions(MeasureOptions):
    """`harness reduce`: the measuring options (as for check), the good release, the search's budget."""


@dataclass(frozen=True)
@takes_options("module", "cwd", "with_requirements", "requirements_files", args="script_args")
class ScriptRun:
    """How `harness check` runs the user's code: a module instead of the script, arguments, environment
    additions, working folder (validated as a config's module/args/env/cwd keys), and the script's
    requirements besides its inline metadata (--with strings, --requirements files)."""

    # --env NAME=VALUE ... as a mapping (an option's value made into another type: not the option's field).
    env: dict[str, str] = field(default_factory=dict, metadata={"derived_from": "env"})


@dataclass(frozen=True, kw_only=True)
@takes_options("script", "versions", "platform", "device_count", "runs", defaults=False, timeout_s="timeout")
class ScriptCheck:
    """The user's code that `harness check` (and reduce, fingerprint) measures, and how: what becomes its
    config (sweeping.check_config). No defaults: each is given (versions None or empty: the latest release;
    runs None: enough runs for the confidence target)."""

    script_run: ScriptRun


@dataclass(frozen=True)
@takes_options("ref", repo="jax_repo")
class JaxRef:
    """nightly --jax-repo PATH --ref REF: the jax commit measured beside the releases (made only with a repo)."""


@dataclass(frozen=True)
@takes_options("seed", "cache_dir", "output")
class FingerprintOptions(MeasureOptions):
    """`harness fingerprint`: one run per release with one hash seed, in a cache folder at a fixed path (so
    that two machines compare the same thing), written as JSON to `output` (stdout when None)."""


STUB = Path(__file__).with_suffix(".pyi")


def stub() -> str:
    """options.pyi's text: every class here with every field, typed."""
    return dataclass_stub(sys.modules[PythonOptions.__module__], ["STUB: Path", "", "", "def stub() -> str: ..."])

