"""One sweep identity for --resume, merge and the bisection state: what counts, what does not."""

from harness.results.identity import SweepIdentity
from harness.results.document import read_header

DOCUMENT = {"config": {"name": "smoke", "runs": 4, "source": "configs/smoke.yaml"}, "versions": ["0.4.28"],
            "options": {"runs": 4, "seeds": "chosen", "all_runs": False, "jobs": 1, "backend": "venv"}}


def identity(**changes):
    doc = {**DOCUMENT, "config": dict(DOCUMENT["config"]), "options": dict(DOCUMENT["options"])}
    for key, value in changes.items():
        section, _, name = key.partition("__")
        if name:
            doc[section][name] = value
        else:
            doc[section] = value
    return SweepIdentity.of(read_header(doc))


def test_where_the_config_lives_and_how_the_runs_were_made_do_not_count():
    same = identity(config__source="/elsewhere/smoke.yaml", options__jobs=4, options__backend="docker")
    assert identity().differences(same) == []
    assert identity().key() == same.key()


def test_each_difference_is_named_as_the_results_file_names_it():
    other = identity(config__runs=8, versions=["0.4.29"], options__seeds="random", options__all_runs=True)
    assert identity().differences(other) == ["config.runs", "versions", "seeds", "all_runs"]


def test_the_key_follows_the_identity_and_what_else_names_the_folder():
    assert identity().key() != identity(versions=["0.4.29"]).key()
    assert identity().key(good="0.4.26") != identity().key(good="0.4.27")
    assert len(identity().key()) == 10
