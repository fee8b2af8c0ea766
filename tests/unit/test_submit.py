"""`harness submit` without a cluster: the job scripts it writes, and the bad input it refuses.

The scripts are checked by bash itself (`bash -n`) and run by hand with `echo` standing in for the
harness, so their resume and merge logic is exercised; the real cluster is in test_slurm.py.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

import harness.cli.commands as cli
import harness.service as service
from harness.core.errors import UserError
from harness.core.kinds import Platform
from harness.slurm import submission
from harness.slurm.jobs import Resources, SweepJobs, check_time
from harness.slurm.scheduler import Slurm, SlurmError
from tests.cells import junit_cases, shard_folders


pytestmark = pytest.mark.usefixtures("fake_index")


def jobs(tmp_path, **kwargs) -> SweepJobs:
    defaults = dict(name="smoke", sweep_dir=tmp_path / "sweep", harness=("echo", "harness"),
                    config=Path("/cfg/smoke.yaml"), shards=3,
                    sweep_args=("--versions", "0.4.28", "0.4.29", "--runs", "4"), workdir=tmp_path)
    return SweepJobs(**{**defaults, **kwargs})


def bash(script: str, tmp_path, **env) -> str:
    path = tmp_path / "script.sbatch"
    path.write_text(script)
    done = subprocess.run(["bash", str(path)], capture_output=True, text=True,
                          env={"PATH": os.environ["PATH"], **env})
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_scripts_are_valid_bash_with_the_resources_asked_for(tmp_path):
    j = jobs(tmp_path, resources=Resources(cpus_per_task=4, time="90", partition="gpu", gpus=8,
                                           extra=("--account=lab",)))
    for script in (j.shard_script(), j.merge_script()):
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
        assert "#SBATCH --partition=gpu" in script and "#SBATCH --account=lab" in script
    shard = j.shard_script()
    assert "#SBATCH --array=1-3" in shard and "#SBATCH --gres=gpu:8" in shard
    assert "#SBATCH --cpus-per-task=4" in shard and "#SBATCH --time=90" in shard
    merge = j.merge_script()
    assert "--gres" not in merge and "--array" not in merge and "#SBATCH --cpus-per-task=1" in merge
    # No shard's results: the merge job fails as the harness does (3), not as a regression (1).
    assert "nothing to merge\" >&2; exit 3; fi" in merge


def test_a_folder_with_a_space_and_a_percent_is_one_word_of_the_output_line(tmp_path):
    """Issue 27, item 6: sbatch splits a directive at spaces unless quoted, and expands `%` in its file
    names: the folder is quoted and its own `%` doubled, the pattern's `%a` / `%j` kept."""
    j = jobs(tmp_path, sweep_dir=Path('/r/my "results" 100%/s'))
    shard, merge = j.shard_script(), j.merge_script()
    assert '#SBATCH --output="/r/my \\"results\\" 100%%/s/slurm-logs/shard-%a-%A.out"' in shard
    assert '#SBATCH --output="/r/my \\"results\\" 100%%/s/slurm-logs/merge-%j.out"' in merge
    for script in (shard, merge):
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0


def test_a_directive_with_a_control_character_is_never_written(tmp_path):
    with pytest.raises(ValueError, match="control character"):
        jobs(tmp_path, resources=Resources(extra=("--account=a\nb",))).shard_script()


def test_resources_follow_the_platform():
    assert Resources.for_config(Platform.CUDA, 8).devices == "#SBATCH --gres=gpu:8"
    assert Resources.for_config(Platform.CPU, 8).devices == ""
    assert Resources.for_config(Platform.TPU, 4).devices == "#SBATCH --exclusive"


def test_shard_task_runs_its_shard_and_resumes_what_an_earlier_task_left(tmp_path):
    j = jobs(tmp_path)
    first = bash(j.shard_script(), tmp_path, SLURM_ARRAY_TASK_ID="2").split()
    assert first[:3] == ["harness", "run", "/cfg/smoke.yaml"]
    assert first[3:8] == ["--versions", "0.4.28", "0.4.29", "--runs", "4"]
    assert first[first.index("--shard") + 1] == "2/3"
    assert first[first.index("--out") + 1] == str(tmp_path / "sweep" / "shard-2")
    assert "--resume" not in first

    earlier = tmp_path / "sweep" / "shard-2" / "20260101T000000Z-smoke"
    earlier.mkdir(parents=True)
    (earlier / "results.json").write_text("{}")
    again = bash(j.shard_script(), tmp_path, SLURM_ARRAY_TASK_ID="2").split()
    assert again[again.index("--resume") + 1] == str(earlier)


def test_shard_script_outside_slurm_asks_for_the_task_id(tmp_path):
    path = tmp_path / "shard.sbatch"
    path.write_text(jobs(tmp_path).shard_script())
    done = subprocess.run(["bash", str(path)], capture_output=True, text=True)
    assert done.returncode != 0 and "SLURM_ARRAY_TASK_ID" in done.stderr


def test_merge_joins_the_shards_that_left_results(tmp_path):
    j = jobs(tmp_path)
    for index in (1, 3):
        folder = tmp_path / "sweep" / f"shard-{index}" / "20260101T000000Z-smoke"
        folder.mkdir(parents=True)
        (folder / "results.json").write_text("{}")
    out = bash(j.merge_script(), tmp_path)
    assert "shard 2: no results" in out
    words = out.splitlines()[-1].split()
    assert words[:2] == ["harness", "merge"]
    assert words[2:4] == [str(tmp_path / "sweep" / f"shard-{i}" / "20260101T000000Z-smoke") for i in (1, 3)]
    assert words[-2:] == ["--out", str(tmp_path / "sweep" / "merged")]


def test_slurm_time_limits():
    for good in ("90", "02:00:00", "1-00:00:00", "1-12", "30:00"):
        assert check_time(good) is None, good
    for bad in ("2h", "", "0", "00:00:00", "1:2:3:4", "-5"):
        assert check_time(bad), bad


# --- the command: bad input is one line, exit 2, nothing written or submitted ---

def run_submit(argv, capsys):
    code = cli.main(["submit", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(argv, capsys, tmp_path, fragment):
    out_dir = tmp_path / "results"
    code, out, err = run_submit([*argv, "--out", str(out_dir)], capsys)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("harness: error: ") and fragment in lines[0], err
    assert not out_dir.exists()


@pytest.fixture
def no_slurm(monkeypatch, tmp_path):
    """A PATH with bash and the like but no Slurm command: what a laptop has."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "ls", "dirname", "seq"):
        os.symlink(subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip(), bin_dir / tool)
    monkeypatch.setenv("PATH", str(bin_dir))


def test_no_slurm_on_the_machine(no_slurm, capsys, tmp_path):
    assert_refused(["configs/smoke.yaml", "--shards", "2"], capsys, tmp_path, "Slurm's commands are not on this machine")


def test_config_error_is_refused_before_slurm_is_asked(no_slurm, capsys, tmp_path, write):
    bad = write("bad.yaml", "name: x\nrepro: shard_map_grad\njax_versions: ['0.4.28']\nruns: 1\n")
    assert_refused([str(bad), "--shards", "2"], capsys, tmp_path, "runs")


@pytest.mark.parametrize("argv, fragment", [
    (["--shards", "3"], "the sweep has only 2 cell(s)"),
    (["--shards", "2", "--time", "2h"], "--time"),
    (["--shards", "2", "--only-shards", "3"], "shards are numbered 1 to 2"),
    (["--shards", "2", "--shard", "1/2"], "--shards N"),
    (["--shards", "2", "--rebuild"], "--rebuild"),
    (["--shards", "2", "--versions", "0.4.99"], "0.4.99"),
    (["--shards", "2", "--partition", " "], "--partition"),
    # Issue 27, item 3: a newline would start a line of its own in both scripts (and end their directives).
    (["--shards", "2", "--sbatch-arg", "--account=lab\n#SBATCH --array=9"],
     "--sbatch-arg '--account=lab\\n#SBATCH --array=9': contains a control character (U+000A)"),
    (["--shards", "2", "--sbatch-arg=--comment=a\rb"], "control character (U+000D)"),
    (["--shards", "2", "--partition", "debug\nx"], "--partition 'debug\\nx': contains a control character"),
])
def test_bad_options(argv, fragment, capsys, tmp_path):
    assert_refused(["configs/smoke.yaml", *argv], capsys, tmp_path, fragment)


def test_only_shards_needs_the_folder_of_a_submission(capsys, tmp_path):
    (tmp_path / "results").mkdir()
    code, _, err = run_submit(["configs/smoke.yaml", "--shards", "2", "--only-shards", "1",
                               "--out", str(tmp_path / "results")], capsys)
    assert code == 2 and "not a folder harness submit made" in err
    assert list((tmp_path / "results").iterdir()) == []


def test_dry_run_prints_the_scripts_and_writes_nothing(no_slurm, capsys, tmp_path):
    code, out, err = run_submit(["configs/smoke.yaml", "--shards", "2", "--dry-run", "--jobs", "2",
                                 "--out", str(tmp_path / "results")], capsys)
    assert code == 0, err
    assert "# shard.sbatch" in out and "# merge.sbatch" in out and "#SBATCH --array=1-2" in out
    assert "#SBATCH --cpus-per-task=2" in out  # --jobs 2: two runs at once, a core each
    assert "--versions 0.4.28 0.4.29 --runs 4 --jobs 2" in out  # resolved once, here
    assert "nothing submitted" in err and not (tmp_path / "results").exists()


def test_the_tasks_get_the_sweep_options(no_slurm, capsys, tmp_path):
    code, out, err = run_submit(["configs/smoke.yaml", "--shards", "2", "--dry-run", "--all-runs", "--seeds",
                                 "random", "--runs", "5", "--python-search", str(tmp_path), "--install-python",
                                 "--out", str(tmp_path / "results")], capsys)
    assert code == 0, err
    run = next(line for line in out.splitlines() if line.startswith("exec ") and " run " in line)
    assert (f"--versions 0.4.28 0.4.29 --runs 5 --jobs auto --backend venv --seeds random --all-runs "
            f"--python-search {tmp_path} --install-python") in run


class RecordingSlurm(Slurm):
    """Slurm's answers for the submit logic: job ids in order, what was submitted, a refusal on demand."""

    def __init__(self, refuse_merge=False):
        self.calls, self.next_id, self.refuse_merge = [], 100, refuse_merge

    def check(self, partition):
        self.calls.append(("check", partition))

    def submit(self, script, *options):
        if self.refuse_merge and script.name == "merge.sbatch":
            raise SlurmError("sbatch merge.sbatch: invalid dependency")
        self.next_id += 1
        self.calls.append(("sbatch", script.name, options))
        return str(self.next_id)

    def cancel(self, *job_ids):
        self.calls.append(("scancel", job_ids))


def options(tmp_path, **kwargs):
    return service.SubmitOptions(**{"shards": 2, "out": tmp_path / "r", **kwargs})


SMOKE = Path("configs/smoke.yaml")


def test_submit_writes_the_folder_then_an_array_and_a_merge_after_it(tmp_path):
    slurm = RecordingSlurm()
    done = service.submit(SMOKE, options(tmp_path), slurm=slurm).submitted
    assert slurm.calls == [("check", None), ("sbatch", "shard.sbatch", ()),
                           ("sbatch", "merge.sbatch", ("--dependency=afterany:101",))]
    assert (done.array_job, done.merge_job, done.shards) == ("101", "102", (1, 2))
    record = json.loads((done.sweep_dir / "submission.json").read_text())
    assert record["versions"] == ["0.4.28", "0.4.29"] and record["submissions"][0]["array_job"] == "101"
    assert os.access(done.sweep_dir / "shard.sbatch", os.X_OK)
    script = (done.sweep_dir / "shard.sbatch").read_text()

    # Again, one shard, into the same folder: the same scripts, that array index only.
    service.submit(SMOKE, options(tmp_path, out=done.sweep_dir, only_shards=(2,), time="04:00:00"), slurm=slurm)
    assert slurm.calls[-2:] == [("sbatch", "shard.sbatch", ("--time=04:00:00", "--array=2")),
                                ("sbatch", "merge.sbatch", ("--dependency=afterany:103",))]
    assert (done.sweep_dir / "shard.sbatch").read_text() == script
    record = json.loads((done.sweep_dir / "submission.json").read_text())
    assert [s["shards"] for s in record["submissions"]] == [[1, 2], [2]]
    assert submission.resubmit_command(record, done.sweep_dir, (2,)).endswith(
        f"--only-shards 2 --out {done.sweep_dir}")


def test_resubmission_with_another_sweep_is_refused(tmp_path):
    done = service.submit(SMOKE, options(tmp_path), slurm=RecordingSlurm()).submitted
    with pytest.raises(UserError, match="pass the same options"):
        service.submit(SMOKE, options(tmp_path, out=done.sweep_dir, only_shards=(1,), runs=9),
                       slurm=RecordingSlurm())


def test_a_submission_an_earlier_release_spelled_otherwise_is_resubmitted(tmp_path):
    done = service.submit(SMOKE, options(tmp_path), slurm=RecordingSlurm()).submitted
    path = done.sweep_dir / "submission.json"
    record = json.loads(path.read_text())
    words = record["sweep_args"]  # the same options in another order, as an earlier harness wrote them
    at = words.index("--seeds")
    record["sweep_args"] = words[at:at + 2] + words[:at] + words[at + 2:]
    path.write_text(json.dumps(record))
    service.submit(SMOKE, options(tmp_path, out=done.sweep_dir, only_shards=(1,)), slurm=RecordingSlurm())
    assert json.loads(path.read_text())["sweep_args"] == record["sweep_args"]


def test_a_refused_merge_cancels_the_array_and_leaves_no_folder(tmp_path):
    slurm = RecordingSlurm(refuse_merge=True)
    with pytest.raises(SlurmError, match="invalid dependency"):
        service.submit(SMOKE, options(tmp_path), slurm=slurm)
    assert slurm.calls[-1] == ("scancel", ("101",))
    assert list((tmp_path / "r").iterdir()) == []


# --- --junit-xml, GITHUB_STEP_SUMMARY and --fail-on: of the merged cells, with --wait ---

@pytest.mark.parametrize("flags", [["--junit-xml", "j.xml"], ["--fail-on", "reproduced"]])
def test_ci_outputs_without_wait_are_refused(flags, capsys, tmp_path):
    assert_refused(["configs/smoke.yaml", "--shards", "2", *flags], capsys, tmp_path, "with --wait")


def test_the_tasks_do_not_get_the_ci_outputs(no_slurm, capsys, tmp_path):
    """Each task's share is not the sweep: the JUnit file and --fail-on are of the merged cells."""
    code, out, err = run_submit(["configs/smoke.yaml", "--shards", "2", "--dry-run", "--wait", "--junit-xml",
                                 str(tmp_path / "j.xml"), "--fail-on", "reproduced"], capsys)
    assert code == 0, err
    run = next(line for line in out.splitlines() if line.startswith("exec ") and " run " in line)
    assert "--junit-xml" not in run and "--fail-on" not in run and not (tmp_path / "j.xml").exists()


class MergingSlurm(RecordingSlurm):
    """A cluster whose jobs are done as soon as submitted: the merge job merges the shards of
    tests/cells.py (those in `shards`) into the sweep's merged/ folder, as merge.sbatch would."""

    def __init__(self, shards=(1, 2)):
        super().__init__()
        self.shards = shards

    def submit(self, script, *options):
        if script.name == "merge.sbatch":
            folders = shard_folders(script.parent / "shards", keep=self.shards)
            service.merge([Path(f) for f in folders], script.parent / "merged", "harness merge")
        return super().submit(script, *options)

    def states(self, *job_ids):
        return {}  # every job has ended


@pytest.mark.parametrize("shards, flags, code, said", [
    ((1, 2), [], 0, ""),
    ((1, 2), ["--fail-on", "reproduced"], 1, "harness: --fail-on reproduced: 4 cell(s) failed"),
    ((1,), [], 3, "harness: incomplete: shard 2 missing; re-submit with: harness submit"),
    ((1,), ["--fail-on", "reproduced"], 1, "harness: incomplete: shard 2 missing"),
])
def test_submit_wait_writes_the_ci_outputs_of_the_merged_cells(shards, flags, code, said, monkeypatch, capsys,
                                                               tmp_path):
    monkeypatch.setattr(service.submitting, "Slurm", lambda: MergingSlurm(shards))
    summary, junit = tmp_path / "summary.md", tmp_path / "junit.xml"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    code_, out, err = run_submit(["configs/smoke.yaml", "--shards", "2", "--wait", "--out", str(tmp_path / "r"),
                                  "--junit-xml", str(junit), *flags], capsys)
    assert code_ == code, err
    assert said in err
    suite = junit_cases(junit)
    assert suite["@name"] == "s" and suite["@tests"] == str(5 * len(shards))
    assert summary.read_text().startswith("### s\n\n" + ("" if len(shards) == 2 else
                                                         "**incomplete: shard 2 missing**\n\n"))
