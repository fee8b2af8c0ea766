"""A config file's text read as YAML, within bounds (pure: no network, no processes): a file of at most
MAX_CONFIG_BYTES, a key given once and a word, no document that grows past MAX_VALUES once its aliases are
expanded. Every error is a ConfigError naming the file (its keys are checked in harness/inputs/config.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from harness.core.errors import ConfigError

# Bounds on what a config file may be, so that no input can cost unbounded time or memory. A real
# config is a few hundred bytes, a dozen values, four levels deep.
MAX_CONFIG_BYTES = 1 << 20  # 1 MiB
MAX_VALUES = 10_000  # scalars, lists and maps, counted after YAML aliases are expanded
MAX_DEPTH = 50
MAX_TEXT = 4096  # characters in one value (a path, a version)


class _DuplicateKey(Exception):
    def __init__(self, key: str, line: int):
        self.key, self.line = key, line


class _BadKey(Exception):
    def __init__(self, line: int):
        self.line = line


class _TooBig(Exception):
    """The YAML is larger than any config (after alias expansion), nested too deeply, or recursive."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """safe_load, except that a key given twice is an error (plain YAML keeps the last silently), and
    so is a key that is a list or a map (`? [a, b] : c`)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise _BadKey(key_node.start_mark.line + 1)
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise _DuplicateKey(str(key), key_node.start_mark.line + 1)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _check_size(root: yaml.Node) -> None:
    """Refuse a document of more than MAX_VALUES values once aliases are expanded (the "billion
    laughs": nine aliases of nine aliases... are small on disk and huge once walked), deeper than
    MAX_DEPTH, with a value longer than MAX_TEXT, or with an alias inside itself. Counted on the node
    graph with each shared node's size computed once, so the check itself stays small."""
    sizes: dict[int, int] = {}
    in_progress: set[int] = set()
    stack: list[tuple[yaml.Node, int, bool]] = [(root, 1, False)]
    while stack:
        node, depth, children_done = stack.pop()
        if depth > MAX_DEPTH:
            raise _TooBig(f"nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, yaml.ScalarNode):
            if len(node.value) > MAX_TEXT:
                raise _TooBig(f"a value longer than {MAX_TEXT} characters (line {node.start_mark.line + 1})")
            sizes[id(node)] = 1
            continue
        children = ([n for pair in node.value for n in pair] if isinstance(node, yaml.MappingNode)
                    else list(node.value))
        if children_done:
            in_progress.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[id(node)] > MAX_VALUES:
                raise _TooBig(f"more than {MAX_VALUES} values once its aliases are expanded")
            continue
        if id(node) in sizes:
            continue
        if id(node) in in_progress:
            raise _TooBig("an alias refers to a node that contains it")
        in_progress.add(id(node))
        stack.append((node, depth, True))
        stack.extend((c, depth + 1, False) for c in children if id(c) not in sizes)


def read_text(path: Path, source: str) -> str:
    """The file's text, read up to MAX_CONFIG_BYTES (so /dev/zero or a huge file cannot fill memory)."""
    if path.exists() and not path.is_file():
        raise ConfigError(source, None, "not a regular file")
    if not path.is_file():
        raise ConfigError(source, None, "no such config file")
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
        if len(raw) > MAX_CONFIG_BYTES:
            raise ConfigError(source, None, f"larger than {MAX_CONFIG_BYTES >> 20} MiB: not a config")
        return raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, None, f"cannot read: {exc}") from None


def _parse_yaml(text: str) -> Any:
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_size(node)
        return loader.construct_document(node)
    finally:
        loader.dispose()


def read_yaml(text: str, source: str) -> Any:
    """A config's text as YAML's values (`source` names it in errors)."""
    try:
        return _parse_yaml(text)
    except _DuplicateKey as exc:
        raise ConfigError(source, exc.key, f"given twice (line {exc.line})") from None
    except _BadKey as exc:
        raise ConfigError(source, None, f"line {exc.line}: a key must be a word, not a list or a map") from None
    except _TooBig as exc:
        raise ConfigError(source, None, f"not a config: {exc}") from None
    except RecursionError:  # composing nests Python calls before _check_size can look
        raise ConfigError(source, None, f"not a config: nested more than {MAX_DEPTH} levels deep") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(source, None, f"YAML syntax error{where}: {problem}") from None
    except ValueError as exc:  # a YAML integer past Python's 4300-digit limit, say
        raise ConfigError(source, None, f"not a config: {str(exc).split(';')[0]}") from None
