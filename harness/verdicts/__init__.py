"""What a cell says, judged from what its runs show (harness/evidence/; pure): verdicts and boundaries, the
verdict so far, the finished cell, why nothing was cached, --vary judged, whether a failure follows the seed.
"""
