"""What a failed run says failed (harness/evidence/failure.py): the exception, never the harness's own log level's output."""

from pathlib import Path

from harness.evidence.failure import exception_line, failure_detail, is_harness_noise, with_detail

# As a run's log ends when a compile fails on 0.5.3 with the harness's JAX_LOGGING_LEVEL=DEBUG: the
# traceback, then JAX's debug records at exit.
SHARDY_LIKE = """\
DEBUG:2026-12-01 13:56:35,761:jax._src.compiler:697: get_compile_options: num_replicas=1 num_partitions=8
Traceback (most recent call last):
  File "/work/prog.py", line 20, in <module>
    f(x)
  File "/venv/lib/python3.11/site-packages/jax/_src/compiler.py", line 266, in backend_compile
    return backend.compile(built_c, compile_options=options)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
jaxlib.xla_extension.XlaRuntimeError: INTERNAL: replicated axes are not ordered w.r.t. mesh
DEBUG:2026-12-01 13:56:36,001:jax._src.xla_bridge:1154: Clearing JAX backend caches.
DEBUG:jax._src.xla_bridge:Clearing JAX backend caches.
""".splitlines()

CHAINED = """\
Traceback (most recent call last):
  File "a.py", line 3, in <module>
    import missing
ModuleNotFoundError: No module named 'missing'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "a.py", line 5, in <module>
    raise RuntimeError("setup failed:")
RuntimeError: setup failed:
  the device mesh does not fit
""".splitlines()


def test_the_exception_is_the_detail_not_jaxs_debug_record_after_it():
    assert failure_detail(SHARDY_LIKE) == ("jaxlib.xla_extension.XlaRuntimeError: INTERNAL: replicated axes are "
                                           "not ordered w.r.t. mesh")
    assert with_detail("exit code 1", SHARDY_LIKE).startswith("exit code 1: jaxlib.xla_extension.XlaRuntimeError")


def test_the_last_traceback_counts_and_a_colon_brings_the_next_line():
    assert exception_line(CHAINED) == "RuntimeError: setup failed: the device mesh does not fit"


def test_without_a_traceback_the_programs_own_last_line():
    lines = ["step 1", "error: the loss is NaN", "INFO:jax._src.xla_bridge:Unable to initialize backend 'tpu'",
             "I1201 13:47:13.123456   1234 cpu_client.cc:12] TfrtCpuClient destroyed.",
             "[harness: 12 lines cut here to keep the log under 2 MiB; JAX's cache lines kept]"]
    assert failure_detail(lines) == "error: the loss is NaN"
    assert exception_line(lines) is None


def test_warnings_and_fatal_errors_the_author_would_see_are_kept():
    assert not is_harness_noise("WARNING:jax._src.xla_bridge:An NVIDIA GPU may be present on this machine")
    assert not is_harness_noise("F1201 13:47:13.123456   1234 hlo.cc:12] Check failed: shape.ok()")
    assert is_harness_noise("DEBUG:jax._src.dispatch:Finished tracing + transforming f for pjit in 0.01 sec")


def test_nothing_said_leaves_the_reason_alone_and_long_lines_are_cut():
    assert with_detail("killed by signal SIGKILL", ["DEBUG:jax:x"]) == "killed by signal SIGKILL"
    assert with_detail("could not start: boom", ["could not start: boom"]) == "could not start: boom"
    detail = failure_detail(["ValueError: " + "x" * 500])
    assert len(detail) == 200 and detail.endswith("…")


def test_a_real_failing_run_of_shardys_verifier_on_0_5_3():
    """Recorded with `harness check tests/fixtures/as_it_runs/shardy_replicated_axes.py --versions 0.5.3`:
    the log's last line is JAX's debug record at exit; the detail is the exception."""
    lines = (Path(__file__).parents[1] / "fixtures" / "jax_logs" / "shardy-0.5.3-failing.err").read_text().splitlines()
    assert lines[-1].endswith("Clearing JAX backend caches.")
    assert failure_detail(lines) == ("ValueError: Cannot lower jaxpr with verifier errors: 'sdy.sharding_constraint' "
                                     "op replicated axes are not ordered w.r.t. mesh")


# A pytest run on a TPU (issue 60, item 6): a test failed on a tolerance, then at interpreter exit JAX's atexit
# clear_backends logged to a handler whose stream pytest had closed.
PYTEST_THEN_LOGGING_ERROR = """\
....................................F...............................                [100%]
=================================== FAILURES ===================================
______________________________ test_pytree_jacfwd ______________________________
    def test_pytree_jacfwd():
>       np.testing.assert_allclose(a, b, rtol=1e-6)
E       AssertionError: Not equal to tolerance rtol=1e-06, atol=0
tests/test_api.py:312: AssertionError
=========================== short test summary info ============================
FAILED tests/test_api.py::test_pytree_jacfwd - AssertionError: Not equal to tolerance rtol=1e-06, atol=0
1 failed, 68 passed in 41.20s
--- Logging error ---
Traceback (most recent call last):
  File "/usr/lib/python3.11/logging/__init__.py", line 1113, in emit
    stream.write(msg + self.terminator)
ValueError: I/O operation on closed file.
Call stack:
  File "/usr/lib/python3/dist-packages/jax/_src/xla_bridge.py", line 1195, in clear_backends
    logger.info("Clearing JAX backend caches.")
Message: 'Clearing JAX backend caches.'
Arguments: ()
""".splitlines()


def test_a_pytest_runs_reason_is_its_own_summary_never_a_logging_error_at_exit():
    detail = failure_detail(PYTEST_THEN_LOGGING_ERROR)
    assert detail == ("1 failed, 68 passed in 41.20s; FAILED tests/test_api.py::test_pytree_jacfwd - AssertionError: "
                      "Not equal to tolerance rtol=1e-06, atol=0")
    assert "I/O operation on closed file" not in with_detail("exit code 1", PYTEST_THEN_LOGGING_ERROR)


def test_a_logging_error_is_no_traceback_of_the_programs():
    script = ["Traceback (most recent call last):", '  File "s.py", line 3, in <module>', "RuntimeError: boom",
              *PYTEST_THEN_LOGGING_ERROR[-10:]]
    assert failure_detail(script) == "RuntimeError: boom"
    assert failure_detail(["done", *PYTEST_THEN_LOGGING_ERROR[-10:]]) == "done"
