"""The quick screen's state through a reduction (harness/reduce/screening.py): handed to the measurer to reject only
until the original was measured fresh, then as the original's forked children found it."""

from harness.reduce.measure_candidate import Measurer
from harness.reduce.screening import QuickScreen


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
