"""A jax commit as one more version of a backend: `harness triage` reduces a program on the first bad commit as
`harness reduce` does on a release (the version asked for is the commit's label; every other is the backend's)."""

from __future__ import annotations

from typing import Any

from harness.bisect.commits import CommitEnvironment, CommitSources
from harness.core.kinds import Platform
from harness.environments.base import Backend, Environment, Say


def _quiet(_: str) -> None:
    pass


class CommitBackend(Backend):
    """`base`, with `label` (a commit's PEP 440 label, as bisect's cells name it) run as the commit's `jax/` on
    the path of `jaxlib`'s release environment."""

    def __init__(self, base: Backend, label: str, sha: str, sources: CommitSources, jaxlib: str):
        self.base, self.label, self.sha, self.sources, self.jaxlib = base, label, sha, sources, jaxlib
        self.name = base.name
        self.pythons = base.pythons
        self.runs_on_host = base.runs_on_host

    def prepare(self, jax_version: str, platform: Platform, say: Say = _quiet) -> Environment:
        if jax_version != self.label:
            return self.base.prepare(jax_version, platform, say)
        folder, _ = self.sources.get(self.sha)
        return CommitEnvironment(self.base.prepare(self.jaxlib, platform, say), folder, self.sha, self.label,
                                 self.jaxlib)

    def check(self, platform: Platform, say: Say = _quiet) -> None:
        self.base.check(platform, say)

    def installed_version(self) -> str | None:
        return self.base.installed_version()

    def describe(self) -> dict[str, Any]:
        return self.base.describe()
