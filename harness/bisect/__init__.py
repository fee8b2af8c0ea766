"""Bisection: where a regression appears and where it is fixed, by release and
then by commit.

`logic` is the pure search; `bisect_state` the resumable record; `measure_point` measures one point; `bisection`
the orchestration (releases, then commits); `commits` the jax repository's side; `report` the text.
The `harness bisect` command is wired in `harness.service` and parsed in `harness.cli.commands`.
"""
