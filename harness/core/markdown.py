"""Text from a program or a results file, made safe for Markdown (pure; imports nothing of the harness).

report.md and table.md are meant to be pasted into a GitHub issue, and much of what they show comes from
places nobody checked: file names a program wrote into its cache folder (module names, the listing), the
last line a crashed run printed, JAX's own words, IR attributes, a hand-edited `results.json`. Such text
must read as text: it cannot open HTML (`<!--` would hide the rest of an issue, `<img>` would load),
start a line of its own (a newline would split a title or a table row), add table columns (`|`), open a
code span or a link, or notify anyone (`@name` mentions a user or team, `#123` cross-references an issue).
Our own Markdown is written around it; each function here is for one place:

- `text`: running text (a title, a sentence, a list item), a URL or an e-mail address in it as code;
- `code`: an inline code span around the text (a key, a module, an attribute's value);
- `cell`: a table cell, after `text` or `code` (GFM splits a row at every `|`, even in a code span);
- `fence`: a fenced block (a diff, a listing, a config) that no line inside can close.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence

# Line breaks and other controls (a newline, a carriage return, an escape) and the bidirectional
# overrides that reorder what a reader sees: none of them belongs inside one line of a report.
_BIDI = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_HTML = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Backslash escapes: a backslash itself, a code span, a link or an image. (Emphasis, `*` and `_`, is
# left alone: it can restyle a word, not hide or add anything, and module names are full of `_`.)
_ESCAPED = re.compile(r"([\\`\[\]])")
_BACKTICKS = re.compile(r"`+")
# GitHub makes `@name` a mention (a notification to that user or team) where no letter, digit or `_`
# comes before the `@` (`user@host` is none), and `#123` or `owner/repo#123` a reference (a line in that
# issue's timeline), after the Markdown is rendered, so no backslash escape stops it; a zero-width space
# after the `@` or `#` does (as Renovate and Dependabot do), and shows nothing. Inside a code span or a
# fence GitHub links neither.
_ZERO_WIDTH_SPACE = "\u200b"
_REFERENCE = re.compile(r"((?<![A-Za-z0-9_])@(?=[A-Za-z0-9])|#(?=[0-9]))")


def one_line(value: object) -> str:
    """The text on one line: each control character (newline included) a space."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI else ch
                   for ch in str(value))


# GitHub's autolinks (GFM's extension): a URL with a scheme, a `www.` address and an e-mail address become
# links in running text, after the Markdown is rendered, so no escape stops them; in a code span they stay
# text. What a results file says is never a link in a report.
_AUTOLINK = re.compile(r"(?i)(?:\b[a-z][a-z0-9+.-]*://|\bwww\.)\S+|[A-Za-z0-9._+-]+@[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)+")


def text(value: object) -> str:
    """Running text: one line, its HTML characters as entities, Markdown's own characters escaped, no
    mention or issue reference GitHub would act on, and what GitHub would make a link (a URL, a `www.`
    address, an e-mail address) in a code span."""
    line = one_line(value)
    out, at = [], 0
    for found in _AUTOLINK.finditer(line):
        out += [_plain(line[at:found.start()]), code(found.group())]
        at = found.end()
    return "".join([*out, _plain(line[at:])])


def _plain(line: str) -> str:
    escaped = _ESCAPED.sub(r"\\\1", line)
    return _REFERENCE.sub(r"\1" + _ZERO_WIDTH_SPACE, "".join(_HTML.get(ch, ch) for ch in escaped))


def code(value: object) -> str:
    """An inline code span that shows the text as it is: delimited by more backticks than the text's
    longest run of them, padded when it starts or ends with one."""
    content = one_line(value)
    longest = max((len(m) for m in _BACKTICKS.findall(content)), default=0)
    fence = "`" * (longest + 1)
    if content.startswith("`") or content.endswith("`"):
        content = f" {content} "
    return f"{fence}{content}{fence}"


def cell(value: str) -> str:
    """A table cell's Markdown (already `text` or `code`): its pipes escaped, as GFM asks inside code too."""
    return value.replace("|", "\\|")


def pipe_table(rows: Iterable[Sequence[object]], headers: Sequence[object]) -> str:
    """A GitHub Markdown table with no padding (GitHub renders it as a padded one; report.md stays small): each
    value already Markdown (`text`, `code`, then `cell`), written as `str` gives it, one line a row."""
    def line(values: Sequence[object]) -> str:
        return "| " + " | ".join(one_line(v) for v in values) + " |"
    return "\n".join([line(headers), "|" + "---|" * len(headers), *(line(row) for row in rows)])


def fence(lines: Iterable[object], info: str = "") -> list[str]:
    """A fenced block around `lines` (each kept on one line) whose fence no line can close: longer
    than the longest run of backticks anywhere in them."""
    body = [one_line(line) for line in lines]
    longest = max((len(m) for line in body for m in _BACKTICKS.findall(line)), default=0)
    marks = "`" * max(3, longest + 1)
    return [f"{marks}{info}", *body, marks]


def _hidden(ch: str) -> bool:
    """A character a terminal or an XML parser must not get raw: a control (ESC, NUL, BEL, BS, DEL, the C1
    range), a lone surrogate (a file name's bytes that are not UTF-8), U+FFFE/U+FFFF, a bidi override."""
    return unicodedata.category(ch) in ("Cc", "Cs") or ch in _BIDI or ch in "\ufffe\uffff"


def visible(value: object, keep: str = "\n\t") -> str:
    """The text with each such character shown as its escape (`\\x1b`, `\\udcff`), the characters in `keep`
    as they are: what a program printed stays readable and can move no cursor, colour no line and break
    no XML. (Python's own escapes, so the text says exactly which character it was.)"""
    text = str(value)
    if not any(_hidden(ch) and ch not in keep for ch in text):
        return text
    return "".join(ch.encode("unicode_escape", "backslashreplace").decode("ascii")
                   if _hidden(ch) and ch not in keep else ch for ch in text)
