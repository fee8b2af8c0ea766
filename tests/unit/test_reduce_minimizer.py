"""pysource-minimize in a process of its own, forked at a question: the copy goes on as if told the real answer."""

import warnings

from pysource_minimize import minimize

from harness.reduce.minimizer import Minimizer

SOURCE = "import os\nimport json\nn = 4\nlog = [n, 2]\nprint(os.sep, json.dumps(log))\nprint(n * 2)\n"


def keeps(text: str) -> bool:
    return "n * 2" in text and "n = 4" in text


def asked_one_at_a_time() -> list[str]:
    asked: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        minimize(SOURCE, lambda text: asked.append(text) or keeps(text))
    return asked


def test_a_copy_forked_at_a_kept_question_goes_on_as_one_at_a_time_and_every_copy_ends():
    expected = asked_one_at_a_time()
    minimizer = Minimizer(SOURCE)
    asked, snapshot, wrong_path, kept_at = [], None, [], 0
    try:
        while (text := minimizer.question()) is not None:
            if snapshot is not None and len(wrong_path) < 3:
                wrong_path.append(text)  # told "rejected": it went on as if the kept one were not
                minimizer.answer(keeps(text))
                if len(wrong_path) == 3:
                    minimizer.resume(snapshot)  # the kept one: its copy goes on from it
                continue
            asked.append(text)
            if snapshot is None and keeps(text) and len(asked) > 2:
                snapshot, kept_at = minimizer.answer_rejected_for_now(), len(asked)
            else:
                minimizer.answer(keeps(text))
    finally:
        minimizer.close()
    assert snapshot is not None and len(wrong_path) == 3
    assert asked == expected and wrong_path != expected[kept_at:kept_at + 3]
    assert minimizer.result is not None and keeps(minimizer.result)
    # Its first process waits for every copy (they are its children or, orphaned, reparented to it): ended, so are
    # they.
    assert minimizer._process.returncode == 0
