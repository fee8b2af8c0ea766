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
    """`base`, with each label of `commits` (a commit's PEP 440 label, as bisect's cells name it) run as that
    commit's `jax/` on the path of its jaxlib's release environment: {label: (sha, jaxlib)}."""

    def __init__(self, base: Backend, sources: CommitSources, commits: dict[str, tuple[str, str]]):
        self.base, self.sources, self.commits = base, sources, commits
        self.name = base.name
        self.pythons = base.pythons
        self.runs_on_host = base.runs_on_host

    def prepare(self, jax_version: str, platform: Platform, say: Say = _quiet) -> Environment:
        if jax_version not in self.commits:
            return self.base.prepare(jax_version, platform, say)
        sha, jaxlib = self.commits[jax_version]
        folder, _ = self.sources.get(sha)
        return CommitEnvironment(self.base.prepare(jaxlib, platform, say), folder, sha, jax_version, jaxlib)

    def check(self, platform: Platform, say: Say = _quiet) -> None:
        self.base.check(platform, say)

    def installed_version(self) -> str | None:
        return self.base.installed_version()

    def describe(self) -> dict[str, Any]:
        return self.base.describe()
