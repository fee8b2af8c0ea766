"""The quick screen's state through a reduction (harness/reduce/screening.py): handed to the measurer to reject only
until the original was measured fresh, then as the original's forked children found it."""

from harness.reduce.measure_candidate import Measurer
from harness.reduce.screening import QuickScreen
from harness.reduce.search import Tried


class _Server:
    def __init__(self, cpu_s):
        self.cpu_s, self.closed = cpu_s, False

    def close(self):
        self.closed = True


def test_the_screen_decides_only_once_handed_over_deciding_and_only_where_it_was_found_to():
    measurer = Measurer.__new__(Measurer)
    bad, good = _Server(2.0), _Server(1.5)
    quick = QuickScreen(bad, good, decides=True)
    quick.attach(measurer, deciding=False)
    assert (measurer.screen, measurer.good_screen, measurer.screen_decides) == (bad, good, False)
    quick.attach(measurer, deciding=True)
    assert measurer.screen_decides
    QuickScreen(bad).attach(measurer, deciding=True)  # found to reject only: it never decides
    assert not measurer.screen_decides and measurer.good_screen is None
    assert quick.cpu_s == 3.5
    quick.close()
    assert bad.closed and good.closed


def test_no_screen_hands_the_measurer_none():
    measurer = Measurer.__new__(Measurer)
    quick = QuickScreen()
    quick.attach(measurer, deciding=True)
    assert (measurer.screen, measurer.good_screen, measurer.screen_decides) == (None, None, False)
    assert quick.cpu_s == 0.0
    quick.close()


def test_the_good_release_s_screen_starts_only_once_a_checkpoint_finds_a_kept_program_not_clean_there():
    """The good release's forked children cost a quarter of a --good reduction's children and, in every reduction
    of the integration tests, rejected nothing: they start only where a checkpoint's fresh processes found a kept
    program not clean on the good release, and from then on ask each provisional keep there."""
    measurer = Measurer.__new__(Measurer)
    bad, good, made = _Server(2.0), _Server(1.5), []
    quick = QuickScreen(bad, decides=True, good_maker=lambda: made.append(1) or good)
    quick.attach(measurer, deciding=False)
    assert measurer.start_good_screen is None  # rejecting only: no provisional keep to ask about
    quick.attach(measurer, deciding=True)
    assert measurer.good_screen is None and made == []
    assert measurer._good_checked(Tried(True, "clean on 0.4.29")).kept
    assert measurer.good_screen is None and made == []  # clean there: still not started
    assert not measurer._good_checked(Tried(False, "reproduced on 0.4.29, the good release")).kept
    assert measurer.good_screen is good and made == [1] and measurer.start_good_screen is None
    measurer._good_checked(Tried(False, "reproduced on 0.4.29, the good release"))
    assert made == [1]  # started once
    quick.close()
    assert bad.closed and good.closed


def test_a_good_release_whose_own_children_are_not_clean_never_gets_a_screen():
    measurer = Measurer.__new__(Measurer)
    quick = QuickScreen(_Server(1.0), decides=True, good_maker=lambda: None)
    quick.attach(measurer, deciding=True)
    measurer._good_checked(Tried(False, "reproduced on 0.4.29, the good release"))
    assert measurer.good_screen is None and quick.good is None and quick.cpu_s == 1.0
