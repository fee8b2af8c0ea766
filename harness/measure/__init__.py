"""Measuring (processes): a sweep of cells, one cell's runs, a multi-process run, hash seeds, progress.
"""
