"""`harness reduce`: shrink a user's script to the smallest one that still misses the cache the same way.

Pure parts: `signature` (what a cell's failure is, and whether a candidate keeps it), `passes` (candidate
programs from a program's syntax), `search` (the order candidates are tried in, the memo, the best so far).
Measuring parts: `measure_candidate` (a candidate through the harness's own cell runner), `reduction` (the whole
command: the original's check, the search, the reduced program's check), `reduce_state` (what --resume reads).
"""
