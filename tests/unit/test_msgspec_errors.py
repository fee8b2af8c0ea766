"""msgspec's error words, as the pinned msgspec writes them (pyproject.toml: below its next major), read by the one
translator (harness/core/records.py's read_error) and said by its two readers: a record's key (explained) and a
config file's (harness/inputs/config_problems.py). Each case is a real ValidationError of one kind."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
import pytest

from harness.core.records import Problem, explained, read_error
from harness.inputs.config import ConfigFile
from harness.inputs.config_problems import struct_problem


class _Inner(msgspec.Struct, forbid_unknown_fields=True):
    shape: list[int]


class _Record(msgspec.Struct, forbid_unknown_fields=True):
    runs: Annotated[int, msgspec.Meta(ge=2, le=9)]
    name: Annotated[str, msgspec.Meta(max_length=3)] = "x"
    env: dict[str, int] = {}
    sizes: list[int] = []
    count: int | None = None
    inner: _Inner | None = None


def _error(data: Any, kind: Any = _Record) -> msgspec.ValidationError:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert(data, kind, strict=True)
    return caught.value


CASES = [  # (data, msgspec's exact words, the parts read from them)
    ({}, "Object missing required field `runs`", Problem("Object missing required field `runs`", None, missing="runs")),
    ({"runs": 1}, "Expected `int` >= 2 - at `$.runs`", Problem("Expected `int` >= 2", ".runs", bound=(">=", 2))),
    ({"runs": 10}, "Expected `int` <= 9 - at `$.runs`", Problem("Expected `int` <= 9", ".runs", bound=("<=", 9))),
    ({"runs": 3, "zz": 1}, "Object contains unknown field `zz`",
     Problem("Object contains unknown field `zz`", None, unknown="zz")),
    ({"runs": 3, "name": "abcd"}, "Expected `str` of length <= 3 - at `$.name`",
     Problem("Expected `str` of length <= 3", ".name", longest=3)),
    ({"runs": 3, "env": {1: 2}}, "Expected `str`, got `int` - at `key` in `$.env`",
     Problem("Expected `str`, got `int`", ".env", in_key=True)),
    ({"runs": 3, "env": {"k": "v"}}, "Expected `int`, got `str` - at `$.env[...]`",
     Problem("Expected `int`, got `str`", ".env[...]")),
    ({"runs": 3, "sizes": [1, "x"]}, "Expected `int`, got `str` - at `$.sizes[1]`",
     Problem("Expected `int`, got `str`", ".sizes[1]")),
    ({"runs": 3, "count": "s"}, "Expected `int | null`, got `str` - at `$.count`",
     Problem("Expected `int | null`, got `str`", ".count")),
    ({"runs": 3, "inner": {"shape": [1], "x": 1}}, "Object contains unknown field `x` - at `$.inner`",
     Problem("Object contains unknown field `x`", ".inner", unknown="x")),
    ([1], "Expected `object`, got `array`", Problem("Expected `object`, got `array`", None)),
]


@pytest.mark.parametrize(("data", "words", "parts"), CASES, ids=[c[1] for c in CASES])
def test_each_kind_of_msgspec_error_is_read_into_its_parts(data: Any, words: str, parts: Problem) -> None:
    exc = _error(data)
    assert str(exc) == words  # the pinned msgspec's words: a new release that rewords them fails here first
    assert read_error(exc) == parts


def test_expected_int_is_said_for_an_optional_int_too() -> None:
    assert read_error(_error({"runs": "s"})).expected_int
    assert read_error(_error({"runs": 3, "count": "s"})).expected_int
    assert not read_error(_error({"runs": 3, "name": 4})).expected_int


def test_a_record_error_is_one_line_naming_the_file_key() -> None:
    assert explained(_error({"runs": 1}), "cells[3]") == "cells[3].runs: Expected `int` >= 2"
    assert explained(_error({}), "cells[3]") == "cells[3].runs: missing"
    assert explained(_error({"runs": 3, "zz": 1})) == (
        "zz: a key this harness does not know (written by a newer release? read it with that one)")
    assert explained(_error({"runs": 3, "env": {1: 2}}), "config") == (
        "config: Expected `str`, got `int` - at `key` in `$.env`")  # a mapping's key: msgspec's words whole
    assert explained(_error([1])) == "Expected `object`, got `array`"


@pytest.mark.parametrize(("data", "said"), [
    ({"name": "x", "jax_versions": ["0.4.30"], "repro": "a", "runs": 1},
     ("runs", "must be at least 2 (a single run has no later run to compare)")),
    ({"name": "x", "jax_versions": ["0.4.30"], "repro": "a", "bogus": 1}, ("bogus", "unknown key (known keys: ")),
    ({"jax_versions": ["0.4.30"], "repro": "a"}, ("name", "required key is missing")),
    ({"name": "x", "jax_versions": ["0.4.30"], "repro": "a", "device_count": "many"},
     ("device_count", "must be an integer, not 'many'")),
    ({"name": "x", "jax_versions": ["0.4.30"], "repro": "a", 3: 4}, ("3", "unknown key (known keys: ")),
])
def test_a_config_error_is_the_key_and_what_it_must_be(data: dict[Any, Any], said: tuple[str, str]) -> None:
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert(data, ConfigFile)
    key, line = struct_problem(read_error(caught.value), data, ConfigFile)
    assert key == said[0] and line.startswith(said[1])


def test_an_unknown_key_with_a_newline_is_said_not_a_crash() -> None:
    """msgspec's words may hold a newline (a YAML key can): read whole, said as msgspec said it."""
    data = {"name": "x", "jax_versions": ["0.4.30"], "repro": "a", "zz\nq": 1}
    with pytest.raises(msgspec.ValidationError) as caught:
        msgspec.convert(data, ConfigFile)
    assert struct_problem(read_error(caught.value), data, ConfigFile) == (None, "Object contains unknown field `zz\nq`")
