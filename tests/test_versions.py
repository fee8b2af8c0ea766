"""Version resolution against a fake index: releases only, sorted, jaxlib must exist."""

from datetime import datetime, timezone

import pytest

from harness.errors import UserError
from harness.versions import Release, check_syntax, matches, resolve


class FakeIndex:
    def __init__(self, jax, jaxlib, yanked=()):
        t = datetime(2024, 1, 1, tzinfo=timezone.utc)
        self.data = {"jax": {v: Release(v, t, v in yanked) for v in jax},
                     "jaxlib": {v: Release(v, t) for v in jaxlib}}

    def releases(self, package):
        return self.data[package]


INDEX = FakeIndex(
    jax=["0.4.25", "0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30", "0.4.31", "0.4.32rc1", "0.4.33.dev1",
         "0.4.9", "0.5.0", "0.4.34"],
    jaxlib=["0.4.25", "0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.30", "0.4.31", "0.4.32rc1", "0.4.9",
            "0.5.0", "0.4.33.dev1"],
    yanked=["0.4.30"],
)


def test_seed_range():
    assert resolve(["0.4.25", ">=0.4.26,<0.4.32"], INDEX) == [
        "0.4.25", "0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.31"]  # 0.4.30 yanked, rc excluded


def test_sorted_numerically_and_deduplicated():
    assert resolve(["0.5.0", "0.4.9", ">=0.4.9,<0.4.26", "0.4.9"], INDEX) == ["0.4.9", "0.4.25", "0.5.0"]


def test_latest_is_newest_usable_release():
    assert resolve(["latest"], INDEX) == ["0.5.0"]


def test_no_match_names_the_entry():
    with pytest.raises(UserError, match="'>=0.9' matches no jax release"):
        resolve([">=0.9"], INDEX)


def test_exact_version_without_jaxlib():
    with pytest.raises(UserError, match="0.4.34 has no matching jaxlib"):
        resolve(["0.4.34"], INDEX)


def test_unknown_exact_version():
    with pytest.raises(UserError, match="'0.4.99' matches no jax release"):
        resolve(["0.4.99"], INDEX)


@pytest.mark.parametrize("entry, ok", [("0.4.28", True), (">=0.4.26,<0.4.32", True), ("latest", True),
                                       ("0.4.x", False), ("=>0.4", False), ("", False)])
def test_syntax(entry, ok):
    assert (check_syntax(entry) is None) == ok


def test_matches():
    assert matches("latest", "0.7.2") and matches(">=0.4.26", "0.7.2") and matches("0.7.2", "0.7.2")
    assert not matches("<0.5", "0.7.2")
