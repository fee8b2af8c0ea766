"""The one place a measurement is opened (backend, versions, checks, runs at once, header) and finished (its
status recorded however it ends: Ctrl-C, a failure, bad input found late)."""

from __future__ import annotations

import os
import platform as host_os
import sys
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from collections.abc import Callable

import msgspec

from harness.inputs.dependencies import JAX_OWN, Sources, sources_from
from harness.inputs.index_urls import redacted
from harness.inputs.config import VARY_WITH_PROCESSES, Config, processes_problem
from harness.environments import BackendChoice, make_backend
from harness.environments.base import Backend, BackendOptions
from harness.environments import interpreters
from harness.environments.gpus import accelerator_facts
from harness.core.errors import UserError
from harness.core.files import harness_version
from harness.core.hostinfo import scheduler_facts, tpu_facts
from harness.core.confidence import SeedStrategy, default_runs
from harness.core.factors import Factor
from harness.measure.seeds import SeedPlanner
from harness.measure.parallelism import RunsAtOnce, choose_runs_at_once, gpu_runs_per_device, usable_cores
from harness.measure.progress import Progress
from harness.environments.package_index import MAX_PRIVATE_PROJECTS, PyPIIndex, private_projects
from harness.results.header import HostFacts, RecordedOptions, ResultsHeader, host_record, recorded_config
from harness.core.kinds import BackendName, Platform
from harness.core.platforms import describe, tpu_chips
from harness.results.document import SweepStatus
from harness.service.command_options import MeasureOptions
from harness.inputs.versions import Resolution, check_syntax, matches, release_pythons, resolve
from harness.output.results_folder import ResultsWriter

T = TypeVar("T")


@dataclass(frozen=True)
class Measurement:
    """A measurement opened: the config as the options change it, the backend chosen (with where packages
    come from), the package index that resolves and dates its releases, and the options that say how many
    runs each cell gets and with which seeds, resolved once here."""

    config: Config
    choice: BackendChoice
    index: PyPIIndex
    runs: int | None = None  # most runs per cell: --runs, else the config's `runs:` (None: enough for the target)
    seeds: SeedStrategy | None = None  # --seeds
    devices_line: str = ""  # how many devices the host has, where they decide the count (with_host_devices)

    def planner(self) -> SeedPlanner:
        """The cells' seed planner: this measurement's seeds and runs."""
        return SeedPlanner(self.seeds, runs=self.runs) if self.seeds is not None else SeedPlanner(runs=self.runs)

    @property
    def backend(self) -> Backend:
        return self.choice.backend

    def versions(self, entries: tuple[str, ...] | None, progress: Progress | None) -> list[str]:
        """The releases to measure: `entries` (--versions) or the config's, resolved for this backend."""
        return sweep_versions(self.config, entries, self.choice, self.index, progress)

    def ready(self, options: MeasureOptions, progress: Progress, device_count_source: str | None = None) -> RunsAtOnce:
        """The backend checked for the platform and its GPUs (bad input said before anything is written),
        then the runs at once (said)."""
        config = self.config
        self.backend.check(config.platform, progress.say)
        if self.devices_line:
            progress.say(self.devices_line)
        self.backend.check_gpus(config.platform, config.device_count,
                                device_count_source or f"{config.source}: device_count", progress.say)
        return runs_at_once_for(config, options, progress, self.backend.devices_here(config.platform))

    def header(self, command: str, versions: list[str], options: RecordedOptions,
               config: Config | None = None) -> ResultsHeader:
        """The results document's header of `config` (this measurement's unless given) on `versions`."""
        return results_header(command, config or self.config, versions, self.choice, options)


def open(config: Config, options: MeasureOptions,
         say: Callable[[str], None] | None = None) -> Measurement:  # shadows the builtin here only: callers say measurement.open
    """The one opening of every command that measures: the config as the options change it, then the
    backend and the index (`say`, when given, hears which index: sources_line)."""
    config = configured(config, options)
    choice, index = open_backend(config, options, say)
    config, devices_line = with_host_devices(config, choice.backend)
    return Measurement(config, choice, index, runs=default_runs(options.runs, config=config.runs), seeds=options.seeds,
                       devices_line=devices_line)


def with_host_devices(config: Config, backend: Backend) -> tuple[Config, str]:
    """The config's device count where none was given: on an accelerator, the devices its probe counts here (a TPU
    host's chips, the GPUs the runs see); auto's, the first accelerator found; else (cpu, auto on a host with none)
    the default 8 simulated. A count given that the host lacks is refused later (Measurement.ready). Returns the
    line that says what was counted ("" where nothing was)."""
    if not config.host_devices:
        return config, ""
    spec = describe(config.platform)
    for found_on in spec.counts:
        if found_on != config.platform and not backend.runs_on_host:
            continue  # auto's container has no device passed in: its runs see no accelerator of the host
        found = backend.devices_here(found_on)
        if found:
            return config.with_device_count(found), (
                f"devices: {found} {found_on} {describe(found_on).devices.unit} here, each run sees them all "
                f"(--device-count N for fewer)")
    # An accelerator with none here: asking for one makes the probe's one line say why (Measurement.ready).
    return (config.with_device_count(1 if spec.accelerator else config.device_count),
            accelerators_unused(config, backend) if spec.simulated else "")


def accelerators_unused(config: Config, backend: Backend) -> str:
    """On a host whose runs could use an accelerator (a TPU host's chips, GPUs) while the platform is cpu (the
    default: a TPU user's `check --pytest` ran on 8 simulated CPU devices, said only as `cpu x8`): the line that says
    so and how to use them; "" elsewhere, and where the backend's runs see none of the host's devices."""
    if not backend.runs_on_host:
        return ""
    for platform in describe(Platform.AUTO).counts:  # the accelerators `auto` looks for, in its order
        found = backend.devices_here(platform)
        if found:
            return (f"devices: {config.device_count} simulated on the CPU (--platform {config.platform.value}); this "
                    f"host has {found} {platform.value} {describe(platform).devices.unit}: --platform "
                    f"{platform.value} runs on them")
    return ""


def configured(config: Config, options: MeasureOptions) -> Config:
    """The config with the options' replacements of its keys (--cache-thresholds, --processes, --vary),
    each checked as the key is."""
    if options.cache_thresholds is not None:
        config = replace(config, cache_thresholds=options.cache_thresholds)
    return with_vary(with_processes(config, options.processes), options.vary)


def open_backend(config: Config, options: MeasureOptions,
                 say: Callable[[str], None] | None = None) -> tuple[BackendChoice, PyPIIndex]:
    """The backend and the index the releases are read from; `say` (a progress line) is told which
    index that is, and what else the packages come from."""
    sources = sources_from(options.index_url, options.extra_index_urls, options.with_editable, os.environ)
    if sources.extra_index_urls and options.backend != BackendName.LOCAL:
        served = {url: private_projects(url) for url in sources.extra_index_urls}
        for url, names in served.items():
            # uv takes a package from an extra index before the main one: jax from there would not be the release.
            theirs = sorted(JAX_OWN.intersection(names))
            if theirs:
                raise UserError(f"--extra-index-url {url}: serves {', '.join(theirs)}; jax and jaxlib come from the "
                                "release's own index (PyPI, or --index-url), and an extra index would be taken "
                                "first: give that index as --index-url if JAX is to come from it")
        sources = replace(sources, undated=tuple(sorted({name for names in served.values()
                                                          if len(names) <= MAX_PRIVATE_PROJECTS for name in names})))
    index = PyPIIndex(index_url=sources.index_url)  # asks the network only when a version is resolved or dated
    choice = make_backend(options.backend, _backend_options(config, options, index, sources))
    if say is not None:
        say(sources_line(sources))
    return replace(choice, sources=sources), index


def sources_line(sources: Sources) -> str:
    """The one line a command says of where the releases and packages come from (PyPI: the default)."""
    indexes = [redacted(u) for u in (sources.index_url, *sources.extra_index_urls) if u]
    parts = [f"packages from {', '.join(indexes)}" + (f" (from {sources.index_variable})" if sources.index_variable
                                                      else "") if indexes
             else "packages from PyPI (the default; another index: --index-url URL)"]
    if sources.undated:
        parts.append(f"undated (as the extra index has them, not as of each release): {', '.join(sources.undated)}")
    if sources.editables:
        parts.append(f"your package(s), editable, in each release's venv: {', '.join(sources.editables)}")
    return "; ".join(parts)


def _backend_options(config: Config, options: MeasureOptions, index: PyPIIndex,
                     sources: Sources = Sources()) -> BackendOptions:
    search = options.pythons.search
    return BackendOptions(rebuild=options.rebuild, python=options.python, docker=config.docker,
                          release_date=index.release_date, python_pin=config.python,
                          interpreters=lambda: interpreters.discover(search),
                          wheel_pythons=lambda wheel_platforms: release_pythons(index, wheel_platforms),
                          install_python=interpreters.install_with_uv if options.pythons.install else None,
                          requirements=config.requirements, sources=sources)


def runs_at_once_for(config: Config, options: MeasureOptions, progress: Progress, devices_here: int = 0) -> RunsAtOnce:
    """The runs at once (--jobs, or auto from the cores, the platform and the devices here), said and then
    recorded."""
    at_once = choose_runs_at_once(options.runs_at_once, config.platform, usable_cores(), devices_here,
                                  config.device_count,
                                  gpu_runs_per_device() if describe(config.platform).sees_gpus else 1)
    progress.say(at_once.line())
    return at_once


def say_left_out(resolution: Resolution, progress: Progress | None) -> list[str]:
    if progress is not None:
        for line in resolution.notes():
            progress.say(line)
    return resolution.versions


def results_header(command: str, config: Config, versions: list[str], choice: BackendChoice,
                   options: RecordedOptions) -> ResultsHeader:
    """The results document's header: what was measured, how (`options`, the backend added), where."""
    return ResultsHeader(command=command, config=recorded_config(config), versions=versions,
                         options=msgspec.structs.replace(options, backend=BackendName(choice.backend.name), backend_reason=choice.why,
                                         **recorded_sources(choice.sources)),
                         host=host_facts(choice.backend.describe()))


def recorded_sources(sources: Sources) -> dict[str, Any]:
    """results.json's record of the sources: absent when packages came from PyPI alone (older folders); an
    index's credentials are never recorded (a resume with a new token of the same index is the same sweep)."""
    return {"index_url": redacted(sources.index_url) if sources.index_url else None,
            "extra_index_urls": tuple(redacted(u) for u in sources.extra_index_urls) or None,
            "editables": sources.editables or None, "editable_digests": sources.editable_digests or None}


def finish(writer: ResultsWriter, measure: Callable[[], T], status: Callable[[T], SweepStatus],
            new_folder: bool = False) -> tuple[SweepStatus, T] | tuple[SweepStatus, None]:
    # Not tuple[SweepStatus, T | None]: mypy then solves T as `X | None` and refuses a `status` taking X.
    """Run `measure` and record how it ended in the results: Ctrl-C (or SIGTERM) gives `interrupted`
    (what was measured stays), a failure of the harness `failed` (and goes on up), otherwise
    `status(what it returned)`. Bad input found late in a `new_folder` that holds no cell yet (a
    backend that cannot run) removes the folder: bad input leaves nothing written."""
    try:
        value = measure()
    except KeyboardInterrupt:
        writer.finish(SweepStatus.INTERRUPTED)
        return SweepStatus.INTERRUPTED, None
    except UserError:
        if new_folder and not writer.cells:
            writer.discard()
        else:
            writer.finish(SweepStatus.FAILED)
        raise
    except BaseException:
        try:
            writer.finish(SweepStatus.FAILED)  # what was measured stays; the status says it did not end well
        except OSError:
            pass  # a full disk: results.json keeps what the last cell wrote; the first error is the news
        raise
    ended = status(value)
    writer.finish(ended)
    return ended, value

def with_vary(config: Config, vary: tuple[Factor, ...] | None) -> Config:
    """The config with --vary's factors in place of its vary: key."""
    config = replace(config, vary=vary) if vary is not None else config
    if config.vary and config.processes > 1:
        raise UserError(f"--vary with --processes {config.processes}: {VARY_WITH_PROCESSES}")
    return config


def with_processes(config: Config, processes: int | None) -> Config:
    """The config with --processes in place of its processes:, checked as the key is."""
    if processes is None or processes == config.processes:
        return config
    problem = processes_problem(processes, config.device_count, config.platform, config.repro)
    if problem:
        raise UserError(f"--processes {processes}: {problem}")
    return replace(config, processes=processes)


def version_entries(config: Config, versions: tuple[str, ...] | None) -> tuple[tuple[str, ...], str]:
    """The version entries to resolve (--versions over the config's) and where they came from."""
    if not versions:
        return config.jax_versions, f"{config.source}: jax_versions"
    for entry in versions:
        problem = check_syntax(entry)
        if problem:
            raise UserError(f"--versions: {problem}")
    return tuple(versions), "--versions"

def sweep_versions(config: Config, versions: tuple[str, ...] | None, choice: BackendChoice,
                    index: PyPIIndex, progress: Progress | None) -> list[str]:
    entries, source = version_entries(config, versions)
    installed = choice.backend.installed_version()
    if installed is not None:  # a backend with one JAX (local) measures that one, if the config names it
        if any(matches(e, installed) for e in entries):
            return [installed]
        raise UserError(f"{source}: the local interpreter has jax {installed}, which "
                        f"{', '.join(entries)} does not include (pass --versions {installed})")
    return say_left_out(resolve(entries, index, source=source, pythons=choice.backend.pythons), progress)


def host_facts(backend: dict[str, Any]) -> HostFacts:
    """This machine as results.json's `host` records it: the backend's facts, then the host's own (the GPUs
    nvidia-smi answers with, the Slurm job), probed here at the edge and not by the results document."""
    host = {
        "os": host_os.platform(),
        "python": host_os.python_version(),
        "cpu_count": os.cpu_count(),
        "harness_python": sys.executable,
        "harness_version": harness_version(),
        **accelerator_facts(),  # GPUs and driver, for the report; {} without nvidia-smi
        **tpu_facts(len(tpu_chips())),  # a TPU host's chips and accelerator type; {} elsewhere
        **scheduler_facts(),  # the Slurm job and array task; {} outside Slurm
    }
    # Backend facts never overwrite the host's own (docker's "python" is the image's, say).
    return host_record({**{(f"backend_{k}" if k in host else k): v for k, v in backend.items()}, **host})
