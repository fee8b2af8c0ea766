"""bug.md (pure): what `harness triage` found after a night's alarm, as a GitHub issue body a person files unchanged.

Everything it says comes in `BugFacts`, gathered by the service (harness/service/triaging.py); a step that failed
or did not run is said as such, so a bug.md is written whatever happened, and says what is not established.
"""

from __future__ import annotations

import enum
import re
import shlex
from dataclasses import dataclass, field

from harness.core import markdown as md
from harness.core.kinds import Platform
from harness.report.bisect_section import JAX_COMMIT_URL

BUG_FILE = "bug.md"
MAX_DIFF_LINES = 20  # the lowered module's differing lines shown; the rest are in report.md
# How a merge commit (or a squashed one) names its pull request.
# A program that names its cache folder itself: the command's folder is not where its entries go.
_OWN_CACHE_DIR = re.compile(r"set_cache_dir\(|jax_compilation_cache_dir|initialize_cache\(")
_PR = re.compile(r"Merge pull request #(\d+)|\(#(\d+)\)\s*$|\bPR #(\d+)")


class StepState(enum.StrEnum):
    DONE = "done"
    FAILED = "failed"
    NOT_RUN = "not run"


class StepName(enum.StrEnum):
    ALARM = "alarm"  # the night's regressed cell and its baseline
    BISECT = "bisect"
    REDUCE = "reduce"


@dataclass(frozen=True)
class TriageStep:
    name: StepName
    state: StepState
    detail: str = ""  # one line: what it found, or why it failed
    seconds: float = 0.0
    folder: str = ""  # its own results folder (resumed from there)


@dataclass(frozen=True)
class Culprit:
    sha: str
    subject: str
    date: str = ""
    url_base: str = JAX_COMMIT_URL  # the clone's GitHub remote, else jax-ml/jax
    before: str = ""  # the last clean commit's sha

    @property
    def url(self) -> str:
        return f"{self.url_base}{self.sha}"

    @property
    def pull_request(self) -> int | None:
        return pull_request(self.subject)


def pull_request(subject: str) -> int | None:
    """The PR number a merge (or squash) subject names: `Merge pull request #21032 from ...`, `... (#21032)`."""
    found = _PR.search(subject)
    return int(next(g for g in found.groups() if g)) if found else None


@dataclass(frozen=True)
class ReducedProgram:
    text: str  # the reduced program
    lines: int
    original_lines: int
    file: str  # where it was written
    problem: str = ""  # its own check did not keep the signature: why


@dataclass(frozen=True)
class BugFacts:
    program: str  # the night's program (its script or built-in's name)
    module: str | None  # the module that compiled again
    good: str  # the last clean point (a release, or jax@sha)
    bad: str  # the first bad point found (after the bisection when it narrowed it)
    night: str  # the night's regressed cell's point
    platform: Platform
    device_count: int
    seconds_lost: float | None = None  # per fresh process, the night's cell
    table: str = ""  # the release (and commit) table, Markdown
    culprit: Culprit | None = None
    commits_tested: int = 0
    commits_in_range: int = 0
    releases_only: bool = False  # no clone: the releases were bisected
    components: tuple[str, ...] = ()  # the key's components that moved (JAX's log)
    diff: tuple[str, ...] = ()  # the lowered module's differing lines
    reduced: ReducedProgram | None = None
    environment: dict[str, str] = field(default_factory=dict)  # jax, jaxlib, python, platform, devices
    steps: tuple[TriageStep, ...] = ()
    not_established: tuple[str, ...] = ()


def title(facts: BugFacts) -> str:
    module = facts.module or "a jitted function"
    where = f"jax commit {facts.culprit.sha[:12]}" if facts.culprit else f"{facts.bad}"
    return f"Persistent compilation cache misses for {module} in every fresh process since {where}"


def reproduce_command(facts: BugFacts, file: str, seeds: tuple[int, ...] = (1, 2, 3, 4)) -> str:
    """Runs of the reduced program as fresh processes with different hash seeds, sharing one cache folder; more
    than one entry for the module is the miss."""
    env = ["JAX_COMPILATION_CACHE_DIR=/tmp/jaxcache", "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0",
           "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=-1"]
    if facts.platform == Platform.CPU:
        env = ["JAX_PLATFORMS=cpu", f"XLA_FLAGS=--xla_force_host_platform_device_count={facts.device_count}", *env]
    module = facts.module or "jit_"
    runs = f"for seed in {' '.join(map(str, seeds))}; do PYTHONHASHSEED=$seed {' '.join(env)} python {shlex.quote(file)}; done"
    return f"rm -rf /tmp/jaxcache; {runs}; ls /tmp/jaxcache | grep -c '^{module}-'  # 1: cached; more: the miss"


def install_line(facts: BugFacts) -> str:
    jaxlib = facts.environment.get("jaxlib", "")
    if facts.culprit is not None:
        return (f"pip install 'jaxlib=={jaxlib}' 'jax @ git+https://github.com/jax-ml/jax@{facts.culprit.sha}'"
                if jaxlib else f"pip install 'jax @ git+https://github.com/jax-ml/jax@{facts.culprit.sha}'")
    return f"pip install 'jax=={facts.bad}' 'jaxlib=={facts.bad}'"


def render(facts: BugFacts) -> str:
    # The title as `gh issue create --title` takes it: a module's and a point's names, no Markdown.
    out = [f"# {md.one_line(title(facts))}", "", _what_happens(facts), ""]
    out += _reduced_section(facts)
    out += ["## Releases and commits measured", ""]
    out += [facts.table or "No table: the night's results could not be read.", ""]
    out += _culprit_section(facts)
    out += _moved_section(facts)
    out += ["## Environment", ""]
    out += [f"- {md.text(k)}: {md.code(v)}" for k, v in facts.environment.items()] or ["- not known"]
    out += ["", "## Not established", ""]
    out += [f"- {md.text(line)}" for line in facts.not_established] or ["- nothing: every step finished"]
    out += ["", "<details><summary>How this was found (harness triage)</summary>", ""]
    out += [md.pipe_table([[md.text(s.name), md.text(s.state), f"{s.seconds:.0f} s", md.text(s.detail)]
                           for s in facts.steps], ["step", "state", "time", "what it found"]), ""]
    out += ["</details>", ""]
    return "\n".join(out)


def _what_happens(facts: BugFacts) -> str:
    module = f"`{facts.module}`" if facts.module else "the program's jitted function"
    lost = f", losing {facts.seconds_lost:.2f} s per start" if facts.seconds_lost else ""
    first = (f"jax commit {md.code(facts.culprit.sha[:12])}" if facts.culprit else md.text(facts.bad))
    return (f"With JAX's persistent compilation cache, each fresh process running the program below computes a new "
            f"cache key for {module} and compiles it again{lost}: the lowered module differs from one process to "
            f"the next (its hash seed, PYTHONHASHSEED, decides it), so no entry written by one process is read "
            f"by the next. It was clean on {md.text(facts.good)} and misses from {first} on "
            f"({facts.platform}, {facts.device_count} devices; found by a nightly run at {md.text(facts.night)}).")


def _reduced_section(facts: BugFacts) -> list[str]:
    reduced = facts.reduced
    out = ["## Reproduce", ""]
    if reduced is None:
        return out + [("No reduced program: the reduction did not finish (see Not established). The night's program "
                      f"is {md.code(facts.program)}."), ""]
    out += [f"The program, reduced from {reduced.original_lines} to {reduced.lines} lines:", ""]
    out += md.fence(reduced.text.rstrip("\n").splitlines(), "python")
    out += ["", "Run it as fresh processes sharing one cache folder (saved as `repro.py`):", ""]
    out += md.fence([install_line(facts), reproduce_command(facts, "repro.py")], "bash")
    out += [""]
    if _OWN_CACHE_DIR.search(reduced.text):
        out += ["The program sets its own cache folder (above): count the entries there instead of /tmp/jaxcache.", ""]
    if reduced.problem:
        out += [f"Its own check did not keep the night's signature: {md.text(reduced.problem)}.", ""]
    return out


def _culprit_section(facts: BugFacts) -> list[str]:
    out = ["## Culprit", ""]
    culprit = facts.culprit
    if culprit is None:
        if facts.releases_only:
            return out + [(f"Between releases: the regression appears in {md.text(facts.bad)} (last clean "
                          f"{md.text(facts.good)}). With a clone of jax (`--jax-repo`) the commits between them would "
                          "be searched and the commit that broke it named."), ""]
        return out + ["Not found (see Not established).", ""]
    pr = culprit.pull_request
    out += [f"- commit: [{culprit.sha[:12]}]({culprit.url}) {md.text(culprit.subject)}"
            + (f" ({md.text(culprit.date[:10])})" if culprit.date else "")]
    if pr is not None:
        out += [f"- pull request: #{pr}"]
    if culprit.before:
        out += [f"- last clean commit: {md.code(culprit.before[:12])}"]
    out += [(f"- {facts.commits_tested} of {facts.commits_in_range} commits tested between "
            f"{md.text(facts.good)} and {md.text(facts.night)}"), ""]
    return out


def _moved_section(facts: BugFacts) -> list[str]:
    out = ["## What moved in the key", ""]
    if facts.components:
        out += [(f"JAX's cache-key log: {', '.join(md.code(c) for c in facts.components)} differs between two processes "
                "of the same program."), ""]
    if facts.diff:
        shown = list(facts.diff[:MAX_DIFF_LINES])
        out += ["The lowered module's differing lines (two fresh processes, debug locations stripped):", ""]
        out += md.fence(shown + ([f"... {len(facts.diff) - len(shown)} more"] if len(facts.diff) > len(shown) else []),
                        "diff")
        out += [""]
    if not facts.components and not facts.diff:
        out += ["Not known: the night's runs kept no lowered modules to compare.", ""]
    return out
