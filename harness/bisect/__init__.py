"""Bisection: where a regression appears and where it is fixed, by release and then by commit.

`logic` is the pure search; `state` the resumable record; `releases` and `commits` the orchestration;
`report` what is printed; `cli` the `harness bisect` command.
"""
