"""Runs in, what a cell says out (pure): verdicts and boundaries, the verdict so far, why nothing was
cached, a script's own cache settings, seconds a miss costs, processes compared, --vary judged, failures.
"""
