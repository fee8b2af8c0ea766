"""A lowered module's long lines made short (pure: text in, text out).

A module can hold a line of megabytes: a constant's bytes (`stablehlo.constant dense<"0x3F80...">`, a random
array the function closes over). No reader diffs, tokenises or scans such a line: before anything else a long
line's dense constants become their size and a digest (`dense<"elided: 1.5 MiB constant #sha256_1a2b3c4d5e6f">`),
and what is still long keeps its head and tail around the digest of its middle. Two lines that differed still
differ (their digests), two that were equal stay equal, and every step is one pass over the text.
"""

from __future__ import annotations

import hashlib

from harness.core.bounded_read import size_words

LONG_LINE = 4096  # longer than a module's own lines (ops, attributes, a signature of many arguments is more)
PAYLOAD_MIN = 256  # a dense constant's text longer than this is shown by its size and digest
LINE_CAP = 64 * 1024  # a line still longer keeps LINE_HEAD and LINE_TAIL characters around its middle's digest
LINE_HEAD = 2048
LINE_TAIL = 1024
ELIDED = "elided: "  # the start of a constant's stand-in (what_differs reads it back)
_DENSE = "dense<"
_CONSTANT_WORD = " constant #sha256_"


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def condense_line(line: str) -> str:
    """`line`, or where it is longer than LONG_LINE, with each long dense constant as its size and digest, and
    then, past LINE_CAP, its head and tail around the size and digest of its middle."""
    if len(line) <= LONG_LINE:
        return line
    out: list[str] = []
    i = 0
    while (j := line.find(_DENSE, i)) >= 0:
        start = j + len(_DENSE)
        if line.startswith('"', start):  # `dense<"0x...">`: hex, no escapes, its end is the next quote
            close = line.find('"', start + 1)
            end = line.find(">", close) if close >= 0 else -1
        else:  # `dense<[1.0, 2.0]>`, `dense<1.0>`: numbers hold no `>`
            end = line.find(">", start)
        if end < 0:
            break
        out.append(line[i:start])
        payload = line[start:end]
        out.append(f'"{ELIDED}{size_words(len(payload))}{_CONSTANT_WORD}{digest(payload)}"'
                   if len(payload) > PAYLOAD_MIN else payload)
        i = end
    out.append(line[i:])
    short = "".join(out) if i else line
    if len(short) <= LINE_CAP:
        return short
    middle = short[LINE_HEAD:-LINE_TAIL]
    return f"{short[:LINE_HEAD]} …[{size_words(len(middle))} elided #sha256_{digest(middle)}]… {short[-LINE_TAIL:]}"


def condense(text: str) -> str:
    """A module's text with every long line condensed (`condense_line`); lines split on "\\n" alone."""
    if len(text) <= LONG_LINE:
        return text
    return "\n".join(condense_line(line) for line in text.split("\n"))


def elided_constants(line: str) -> list[tuple[str, str]]:
    """(size, digest) of each constant `condense_line` put into this line as its stand-in."""
    found: list[tuple[str, str]] = []
    i = 0
    while (j := line.find(ELIDED, i)) >= 0:
        k = line.find(_CONSTANT_WORD, j)
        if k < 0:
            break
        size = line[j + len(ELIDED):k]
        start = k + len(_CONSTANT_WORD)
        found.append((size, line[start:start + 12]))
        i = start
    return found
