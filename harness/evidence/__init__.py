"""What a cell's runs show, read from their records (pure): the keys each run computed and the comparison with
the first run, the seconds a miss costs, a script's own cache settings, misses per function and per test, the
processes of a job compared, what a failed run says failed, the program's own packages release by release.
The verdicts (harness/verdicts/) are judged from these.
"""
