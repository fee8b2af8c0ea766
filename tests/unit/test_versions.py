"""Version resolution against a fake index: releases only, sorted, jaxlib must exist."""


import json

import pytest

from harness.core.errors import UserError
from harness.inputs.pythons import PythonVersion
from harness.inputs.versions import check_syntax, matches, resolve
from tests.fakes import INDEX


def test_seed_range():
    assert resolve(["0.4.25", ">=0.4.26,<0.4.32"], INDEX).versions == [
        "0.4.25", "0.4.26", "0.4.27", "0.4.28", "0.4.29", "0.4.31"]  # 0.4.30 yanked, rc excluded


def test_sorted_numerically_and_deduplicated():
    assert resolve(["0.5.0", "0.4.9", ">=0.4.9,<0.4.26", "0.4.9"], INDEX).versions == ["0.4.9", "0.4.25", "0.5.0"]


def test_latest_is_newest_usable_release():
    assert resolve(["latest"], INDEX).versions == ["0.5.0"]


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


def test_pypi_json_parsing():
    from harness.inputs.versions import parse_pypi

    data = {"releases": {"0.4.28": [
        {"filename": "jaxlib-0.4.28-cp311-cp311-manylinux2014_x86_64.whl", "requires_python": ">=3.9",
         "upload_time_iso_8601": "2024-05-09T23:25:06.562981Z", "yanked": False},
        {"filename": "jaxlib-0.4.28-cp312-cp312-manylinux2014_x86_64.whl", "requires_python": ">=3.9",
         "upload_time_iso_8601": "2024-05-09T23:20:00Z", "yanked": False}], "0.1": []}}
    (release,) = parse_pypi(json.dumps(data).encode()).values()
    assert release.requires_python == ">=3.9"
    assert release.uploaded.isoformat() == "2024-05-09T23:25:06.562981+00:00"
    assert release.pythons(("manylinux2014_x86_64",)) == {PythonVersion(3, 11), PythonVersion(3, 12)}
