"""Config validation: every bad input is one ConfigError naming the file and the key."""

from dataclasses import fields
from pathlib import Path

import pytest

import msgspec
from harness.core.records import plain as as_json
from harness.results.header import recorded_config
from harness.inputs.config import CONFIG_KEYS, load_config, parse_config
from harness.core.files import shipped_configs
from harness.core.errors import ConfigError
from harness.core.model import Mesh
from harness.core.kinds import Platform

GOOD = """\
name: shard-map-grad
repro: shard_map_grad
jax_versions: ["0.4.25", ">=0.4.26,<0.4.32"]
platform: cpu
device_count: 8
meshes:
  - shape: [8, 1, 1, 1]
    axis_names: [a, b, c, d]
runs: 8
"""


def test_shipped_configs_load():
    names = sorted(Path("configs").glob("*.yaml"))
    assert len(names) >= 4
    for name in names:
        config = load_config(name)
        assert config.repro.builtin and config.repro.path.is_file()


def test_a_shipped_config_is_found_by_name_outside_the_checkout(tmp_path, monkeypatch):
    """`harness run shard_map_grad`: the package's config of that name, when no such file is here; the
    checkout's configs/ is that same folder (one source, no copies)."""
    root = Path(__file__).resolve().parents[2]
    assert (root / "configs").resolve() == shipped_configs()["smoke"].parent.resolve()
    assert (root / "configs").is_symlink()
    monkeypatch.chdir(tmp_path)
    by_name = load_config("smoke")
    assert by_name == load_config("smoke.yaml") == load_config(root / "harness" / "configs" / "smoke.yaml")
    assert by_name.name == "smoke" and by_name.jax_versions == ("0.4.28", "0.4.29")
    (tmp_path / "smoke.yaml").write_text(GOOD)  # a file of that name here wins over the shipped one
    assert load_config("smoke.yaml").name == "shard-map-grad"
    with pytest.raises(ConfigError, match=r"nosuch: no such config file, nor a shipped config of that name "
                                          r"\(shipped: gpu_local, nightly, releases, shard_map_grad, smoke\)"):
        load_config("nosuch")
    with pytest.raises(ConfigError, match="no such config file$"):
        load_config("sub/smoke.yaml")  # a path is a path


def test_good_config(write):
    config = load_config(write("c.yaml", GOOD))
    assert config.name == "shard-map-grad"
    assert config.jax_versions == ("0.4.25", ">=0.4.26,<0.4.32")
    assert config.platform == Platform.CPU
    assert config.meshes == (Mesh((8, 1, 1, 1), ("a", "b", "c", "d")),)
    assert config.runs == 8


def test_defaults(write):
    config = load_config(write("c.yaml", "name: x\nrepro: shard_map_grad\njax_versions: ['0.4.28']\n"))
    assert config.device_count == 8 and config.runs == 8 and config.platform == Platform.CPU
    assert config.meshes == (Mesh((8, 1, 1, 1), ("a", "b", "c", "d")),)


def test_user_script_relative_to_config(write):
    script = write("sub/my_repro.py", "print('hi')\n")
    config = load_config(write("sub/c.yaml", "name: x\nrepro: my_repro.py\njax_versions: ['0.4.28']\n"))
    assert not config.repro.builtin and config.repro.path == script.resolve()
    assert config.meshes == ()  # a user's script builds its own mesh


def _error(write, text, name="c.yaml"):
    path = write(name, text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(path) in str(info.value)
    return info.value


def _replace(old, new):
    assert old in GOOD
    return GOOD.replace(old, new)


@pytest.mark.parametrize("text, key, fragment", [
    ("name: [unclosed\n", None, "YAML syntax error (line"),
    ("- a\n- b\n", None, "mapping"),
    (GOOD + "colour: blue\n", "colour", "unknown key"),
    (_replace("device_count: 8", "device_count: eight"), "device_count", "integer"),
    (_replace("runs: 8", "runs: 1"), "runs", "at least 2"),
    (_replace("runs: 8", "runs: true"), "runs", "integer"),
    (_replace('["0.4.25", ">=0.4.26,<0.4.32"]', "[]"), "jax_versions", "empty"),
    (_replace('["0.4.25", ">=0.4.26,<0.4.32"]', '["0.4.x"]'), "jax_versions", "'0.4.x'"),
    (_replace('["0.4.25", ">=0.4.26,<0.4.32"]', '[">=0.4.26,<<0.5"]'), "jax_versions", "specifier"),
    (_replace('["0.4.25", ">=0.4.26,<0.4.32"]', "[0.4]"), "jax_versions", "quote"),
    (_replace("[8, 1, 1, 1]", "[4, 1, 1, 1]"), "meshes[0].shape", "4 devices but device_count is 8"),
    (_replace("[a, b, c, d]", "[a, b, c]"), "meshes[0].axis_names", "3 names"),
    (_replace("[a, b, c, d]", "[a, b, a, d]"), "meshes[0].axis_names", "duplicate axis name 'a'"),
    (_replace("platform: cpu", "platform: gpu"), "platform", "must be one of"),
    (_replace("repro: shard_map_grad", "repro: missing_script.py"), "repro", "neither a built-in"),
    (_replace("name: shard-map-grad", "name: a/b"), "name", "letters"),
    ("name: x\nrepro: shard_map_grad\n", "jax_versions", "required"),
])
def test_bad_input_names_file_and_key(write, text, key, fragment):
    error = _error(write, text)
    assert error.key == key
    assert fragment in str(error)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "nope.yaml")


@pytest.mark.parametrize("text, key, fragment", [
    (_replace("runs: 8", "runs: 8\ntimeout_s: .nan"), "timeout_s", "finite"),
    (_replace("runs: 8", "runs: 8\ntimeout_s: .inf"), "timeout_s", "finite"),
    (_replace("runs: 8", "runs: 99999999999999999999"), "runs", "at most"),
    (_replace("runs: 8", "runs: 8\ndocker: {python: banana}"), "docker.python", "Python 3 version"),
    (_replace("runs: 8", "runs: 8\ndocker: {python: '2.7'}"), "docker.python", "Python 3 version"),
    (_replace("runs: 8", "runs: 8\nruns: 4"), "runs", "given twice (line 10)"),
])
def test_more_bad_values(write, text, key, fragment):
    error = _error(write, text)
    assert error.key == key and fragment in str(error)


def test_cache_thresholds_key():
    from harness.core.kinds import ThresholdMode

    base = {"name": "x", "repro": "shard_map_grad", "jax_versions": ["0.4.30"]}
    assert parse_config(base).cache_thresholds == ThresholdMode.HARNESS  # zeros: every module measured
    assert "cache_thresholds" not in as_json(recorded_config(parse_config(base)))  # old results folders stay the same sweep
    config = parse_config({**base, "cache_thresholds": "script"})
    assert config.cache_thresholds == ThresholdMode.SCRIPT and as_json(recorded_config(config))["cache_thresholds"] == "script"
    with pytest.raises(ConfigError, match="cache_thresholds.*must be one of script, harness"):
        parse_config({**base, "cache_thresholds": "zero"})


# ---------------------------------------------------------------- hostile input (issue 10)

BASE = "name: t\nrepro: shard_map_grad\n"
LAUGHS = BASE + "jax_versions: ['0.4.29']\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n" for i in range(1, 10))
LAUGHS_UNDER_A_KNOWN_KEY = ("x0: &x0 [a, a, a, a, a, a, a, a, a]\n"
                            + "".join(f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * 9)}]\n" for i in range(1, 10))
                            + "name: t\nrepro: shard_map_grad\njax_versions: *x9\n")


@pytest.mark.parametrize("text, fragment", [
    (BASE + "jax_versions: ['" + "1" * 5000 + "']\n", "longer than 4096 characters"),
    (BASE + "jax_versions: ['0.4.29']\ndevice_count: " + "1" * 5000 + "\n", "longer than 4096 characters"),
    (BASE + "jax_versions: ['0.4.29']\nmeshes: [{shape: [" + "9" * 4000 + "], axis_names: [a]}]\n",
     "devices but device_count is 8"),
    (BASE + "jax_versions: ['0.4.29']\n? [a, b]\n: c\n", "a key must be a word, not a list or a map"),
    (BASE + "jax_versions: ['0.4.29']\n? {a: 1}\n: c\n", "a key must be a word, not a list or a map"),
    (BASE + "jax_versions: " + "[" * 100_000 + "]" * 100_000 + "\n", "nested more than 50 levels deep"),
    (BASE + "jax_versions: " + "[" * 60 + "'0.4.29'" + "]" * 60 + "\n", "nested more than 50 levels deep"),
    (LAUGHS, "more than 10000 values once its aliases are expanded"),
    (LAUGHS_UNDER_A_KNOWN_KEY, "more than 10000 values once its aliases are expanded"),
    ("name: t\nrepro: ~nosuchuser-harness/x.py\njax_versions: ['0.4.29']\n", "cannot expand '~'"),
    (BASE + "jax_versions: ['0.4.29']\ndocker: []\n", "docker: must be a mapping"),
    (BASE + "jax_versions: ['0.4.29']\ndocker: 0\n", "docker: must be a mapping"),
    (BASE + "jax_versions: ['0.4.29']\ndocker: ''\n", "docker: must be a mapping"),
], ids=["5000-digit-version", "5000-digit-device-count", "4000-digit-mesh-size", "list-key", "map-key",
        "nested-100000", "nested-60", "laughs", "laughs-under-jax_versions", "unknown-user", "docker-list",
        "docker-0", "docker-empty-string"])
def test_hostile_yaml_is_one_line(write, text, fragment):
    """Refused before anything walks the expanded document (`make stress` shows how long each takes)."""
    with pytest.raises(ConfigError) as info:
        load_config(write("c.yaml", text))
    message = str(info.value)
    assert fragment in message, message
    assert "\n" not in message and len(message) < 300, message  # one line, nothing echoed at length


@pytest.mark.parametrize("where, value", [
    ("name", '"t\\nx"'), ("repro", '"shard_map_grad\\r"'), ("jax_versions[0]", '["0.4.29\\u001b[2J"]'),
    ("meshes[0].axis_names[0]", '[{shape: [8, 1], axis_names: ["a\\ntouch /tmp/pwned", b]}]'),
    ("docker.base_image", '{base_image: "img\\u202e"}'), ("docker", '{"py\\nthon": "3.11"}'),
])
def test_control_characters_are_refused_in_every_config_string(write, where, value):
    top = where.split(".")[0].split("[")[0]
    fields = {"name": '"t"', "repro": "shard_map_grad", "jax_versions": '["0.4.29"]', "device_count": "8"}
    fields[top] = value
    text = "".join(f"{k}: {v}\n" for k, v in fields.items())
    with pytest.raises(ConfigError) as info:
        load_config(write("c.yaml", text))
    assert f": {where}: " in str(info.value) and "control character" in str(info.value), str(info.value)


def test_absurd_files_are_refused_without_reading_them_whole(tmp_path):
    from harness.inputs.config_yaml import MAX_CONFIG_BYTES

    big = tmp_path / "big.yaml"
    with open(big, "wb") as f:
        f.truncate(MAX_CONFIG_BYTES * 100)  # sparse: 100 MiB on paper
    with pytest.raises(ConfigError, match="larger than 1 MiB"):
        load_config(big)
    with pytest.raises(ConfigError, match="not a regular file"):
        load_config("/dev/zero")


# ---------------------------------------------------------------- the keys, declared once (issue 50.2)

def test_the_config_files_keys_are_the_structs_fields(tmp_path):
    """ConfigFile declares every key once (its type and bounds among them): the known and required keys, the
    docker section's, and what results.json records of a config (recorded_config) all come from it."""
    from harness.inputs.config import KEYS, RECORDED_KEYS, REQUIRED, ConfigFile, DockerSection
    from harness.results.header import RecordedConfig

    assert CONFIG_KEYS == ConfigFile.__struct_fields__ and KEYS == set(CONFIG_KEYS)
    assert REQUIRED == {"name", "jax_versions"}
    assert DockerSection.__struct_fields__ == ("base_image", "python")
    data = {"name": "x", "module": "pkg.main", "jax_versions": ["0.4.30"], "args": ["a"], "env": {"A": "b"},
            "cache_thresholds": "script", "vary": ["cwd"], "python": "3.12", "docker": {"python": "3.11"}}
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "main.py").write_text("print('hi')\n")
    recorded = as_json(recorded_config(parse_config(data, base_dir=tmp_path)))
    assert set(recorded) - {"source"} <= KEYS and set(recorded) <= set(RECORDED_KEYS)
    assert list(recorded) == sorted(recorded, key=RECORDED_KEYS.index)  # results.json writes them in this order
    read = getattr(RecordedConfig, "__struct_fields__", None) or tuple(f.name for f in fields(RecordedConfig))
    assert read[:len(RECORDED_KEYS)] == RECORDED_KEYS  # what results.json's reader knows (a Struct or a dataclass)


@pytest.mark.parametrize("key", CONFIG_KEYS)
def test_a_value_of_the_wrong_shape_is_one_line_naming_its_key(key):
    """Whatever a key's type, a value of another shape (a mapping where a word or list goes; a word where a
    mapping or list goes) is refused by the Struct, in one line naming that key."""
    base = {"name": "x", "repro": "shard_map_grad", "jax_versions": ["0.4.30"]}
    for wrong in ({"a": 1}, 3.5):
        data = {**base, key: wrong}
        if key == "module":
            del data["repro"]
        if key == "timeout_s" and wrong == 3.5:
            continue  # a number of seconds
        with pytest.raises(ConfigError) as info:
            parse_config(data)
        assert info.value.key is not None and info.value.key.split(".")[0].split("[")[0] == key, (key, str(info.value))
        assert "\n" not in str(info.value) and str(info.value).startswith("<config>: "), str(info.value)


def test_a_bound_is_the_structs_and_says_itself():
    """runs' bounds are Meta(ge=2, le=MAX_RUNS) on the Struct (JSON Schema shows them); the error says them."""
    
    from harness.inputs.config import MAX_RUNS, ConfigFile

    schema = msgspec.json.schema(ConfigFile)
    runs = schema["$defs"]["ConfigFile"]["properties"]["runs"]
    assert (runs["minimum"], runs["maximum"]) == (2, MAX_RUNS)
    base = {"name": "x", "repro": "shard_map_grad", "jax_versions": ["0.4.30"]}
    for runs_given, said in ((1, "must be at least 2 (a single run has no later run to compare)"),
                             (MAX_RUNS + 1, f"must be at most {MAX_RUNS}"), ("8", "must be an integer, not '8'")):
        with pytest.raises(ConfigError) as info:
            parse_config({**base, "runs": runs_given})
        assert str(info.value) == f"<config>: runs: {said}"
