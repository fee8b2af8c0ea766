"""Commands rendered into Markdown are code spans (issue 61 #9): bisect.md's "Reproduce with" line showed a
program's arguments as Markdown (backticks dropped, `<b>` made bold by a renderer); the reducer's section names
the program and its `--vary` the same way."""

from __future__ import annotations

import shlex

from harness.report.bisect_section import REPRODUCE_WITH, bisect_text
from harness.results.bisect_results import BisectSection
from tests.helpers import github_html

HOSTILE = ["--title", "<b>bold</b>", "--note", "a `tick` and *stars*", "--url", "https://evil.example/x"]


def test_bisect_md_s_reproduce_line_is_a_code_span_that_shows_the_command_as_it_is():
    command = shlex.join(["harness", "bisect", "train.py", "--versions", ">=0.4.28", "--", *HOSTILE])
    text = bisect_text(BisectSection(), command)
    last = text.splitlines()[-1]
    assert last.startswith(REPRODUCE_WITH + "`")
    shown = github_html(last)
    assert "<b>" not in shown and "<a " not in shown and "<em>" not in shown
    assert "&lt;b&gt;bold&lt;/b&gt;" in shown and "`tick`" in shown  # as it is, in one <code>
    assert shown.count("<code>") == 1
