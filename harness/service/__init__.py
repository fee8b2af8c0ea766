"""The application service (below the CLI): what each command does, with its options already parsed.

A module per command (pip's `commands/` is the model), over two shared ones:

- `command_options`: the typed options each command takes, filled from harness/inputs/options.py's declarations;
- `outcomes`: what each command produced, for the CLI to show;
- `measurement`: the one place a measurement is opened (backend, versions, checks, runs at once, header) and
  finished (`finish`: its status however it ends, Ctrl-C included);
- `sweeping` (run, check), `reducing` (reduce: harness/reduce/ does the work), `watching` (nightly, compare), `bisecting` (bisect), `triaging` (triage: the alarm, bisect and reduce composed), `submitting` (submit),
  `reading` (versions, report, merge), `preparing` (init, base-image).

Each command returns what it produced and prints nothing but progress: the CLI shows the outcome.
"""

from harness.inputs.options import DEFAULT_RESULTS
from harness.service.bisecting import BISECT_SPELLED, bisect, bisect_command, bisect_program
from harness.service.fingerprinting import diff_files, fingerprint
from harness.service.fingerprinting import read as read_fingerprint
from harness.service.measurement import version_entries
from harness.service.command_options import (BisectOptions, FingerprintOptions, JaxRef, MeasureOptions, PythonOptions,
                                     ReduceOptions, ScriptCheck, ScriptRunOptions, SubmitOptions, SweepOptions,
                                     TriageOptions)
from harness.service.outcomes import (BISECT_REPORT_FILE, BisectOutcome, InFolder, MergeOutcome, NightlyOutcome,
                                      SubmitOutcome, SubmitWaitOutcome, SweepOutcome)
from harness.service.preparing import base_image, init_config
from harness.service.reading import list_versions, merge, report
from harness.service.reducing import reduce
from harness.service.submitting import SUBMIT_PASSES_ON, plan_submission, submit, wait_submission
from harness.service.sweeping import as_pytest, check_config, resume_command, run, sweep, with_pytest, with_script_packages
from harness.service.watching import compare_folders, nightly
from harness.service.triaging import TriageOutcome, triage

__all__ = ["BISECT_REPORT_FILE", "BISECT_SPELLED", "DEFAULT_RESULTS", "SUBMIT_PASSES_ON", "BisectOptions",
           "FingerprintOptions", "diff_files", "fingerprint", "read_fingerprint",
           "BisectOutcome", "InFolder", "JaxRef", "MeasureOptions", "MergeOutcome", "NightlyOutcome",
           "PythonOptions", "ReduceOptions", "ScriptCheck", "ScriptRunOptions", "SubmitOptions", "SubmitOutcome", "SubmitWaitOutcome", "SweepOptions",
           "SweepOutcome", "as_pytest", "base_image", "bisect", "bisect_command", "bisect_program", "check_config", "with_script_packages", "with_pytest", "compare_folders",
           "init_config", "list_versions", "merge", "nightly", "plan_submission", "reduce", "report", "resume_command", "run", "submit",
           "sweep", "triage", "TriageOptions", "TriageOutcome", "version_entries", "wait_submission"]
