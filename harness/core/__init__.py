"""The vocabulary (pure, imports nothing above it): platforms, verdicts, runs and cells; errors and exit
codes; atomic files; JAX's cache log; cache listings; confidence bounds; --vary factors; host facts; signals.
"""
