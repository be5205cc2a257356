"""Chapter 10's capstone checks: the judge scores exactly the model that was saved, and
refuses checkpoints outside the rules with a reason."""
import json
import re

import nbformat
import numpy as np
import pytest

from autograder.probes import ch10_capstone as probes
from autograder.reference import ch10_capstone as ch10
from autograder.reference.grading import all_checks, run_check
from course import evaluation, lm, runtime
from course.corpora import read_corpus
from course.data import Vocab
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def train_vocab():
    return Vocab.build(read_corpus("course", "train"))


def problems(name, checkpoint):
    try:
        return run_check(all_checks()[name], {"checkpoint": str(checkpoint)})
    except Exception as err:                 # a probe that refuses the checkpoint fails the check
        return [f"{type(err).__name__}: {err}"]


def save_small(vocab, directory, **sizes):
    runtime.init(seed=3)
    model = lm.RNNLM(vocab, sizes.pop("cell", "gru"), **{"embed": 8, "hidden": 8, **sizes})
    model.save(directory)
    return model


def test_the_judge_scores_exactly_the_saved_model(train_vocab, tmp_path):
    model = save_small(train_vocab, tmp_path / "m", layers=2)
    numbers = probes.read_checkpoint({"checkpoint": tmp_path / "m"}, {})
    ratio, found = ch10.heldout_ratio(numbers)
    sentences, floor = ch10.hidden_set()
    assert found == []
    assert ratio == pytest.approx(evaluation.evaluate(model, sentences) / floor, rel=1e-6)
    # and an untrained model is far from every threshold, with its ratio in the message
    for name in ch10.TIERS:
        assert "x the floor" in " ".join(problems(name, tmp_path / "m"))


def test_thresholds_decide(train_vocab, tmp_path, monkeypatch):
    save_small(train_vocab, tmp_path / "m")
    ratio, _ = ch10.heldout_ratio(probes.read_checkpoint({"checkpoint": tmp_path / "m"}, {}))
    c = all_checks()["ch10.capstone"]
    monkeypatch.setattr(c, "judge", ch10.tier_judge(ratio * 1.001))
    assert run_check(c, {"checkpoint": str(tmp_path / "m")}) == []
    monkeypatch.setattr(c, "judge", ch10.tier_judge(ratio * 0.999))
    assert run_check(c, {"checkpoint": str(tmp_path / "m")})


def test_a_truncated_vocabulary_is_refused(tmp_path):
    small = Vocab.build(read_corpus("course", "train")[:2000], max_size=300)
    save_small(small, tmp_path / "m")
    assert "missing from the model's vocabulary" in " ".join(problems("ch10.capstone", tmp_path / "m"))


@pytest.mark.parametrize("change, says", [
    ({"cell": "hand-lstm"}, "DyNet builder"),
    ({"hidden": 5000}, "at most"),
    ({"residual": "lateral"}, "lateral"),
])
def test_configurations_outside_the_rules_are_refused(train_vocab, tmp_path, change, says):
    save_small(train_vocab, tmp_path / "m")
    path = tmp_path / "m" / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))
    assert says in " ".join(problems("ch10.capstone", tmp_path / "m"))


def test_missing_and_broken_checkpoints_fail_with_a_reason(train_vocab, tmp_path):
    assert "no saved model" in " ".join(problems("ch10.capstone", tmp_path / "nothing"))
    save_small(train_vocab, tmp_path / "m")
    params = tmp_path / "m" / "params.dy"
    params.write_bytes(params.read_bytes()[:1000])
    assert problems("ch10.capstone", tmp_path / "m")


def test_non_finite_weights_are_refused(train_vocab, tmp_path):
    model = save_small(train_vocab, tmp_path / "m")
    numbers = probes.read_checkpoint({"checkpoint": tmp_path / "m"}, {})
    numbers["params"]["0"] = numbers["params"]["0"] * np.nan
    _, found = ch10.heldout_ratio(numbers)
    assert found and "non-finite" in found[0]
    assert model.param_count() < probes.MAX_PARAMETERS


def test_the_notebook_states_the_graders_thresholds():
    source = "\n".join(c.source for c in nbformat.read(ROOT / "solutions" / "10_capstone.ipynb", as_version=4).cells)
    stated = re.search(r"TIERS = \{([^}]*)\}", source)
    assert stated, "the capstone notebook must state its thresholds in TIERS = {...}"
    assert sorted(float(x) for x in re.findall(r":\s*([0-9.]+)", stated.group(1))) == sorted(ch10.TIERS.values())
    assert ch10.CHECKPOINT_NAME in source


def test_without_a_path_the_probe_reads_the_folder_in_the_working_folder(train_vocab, tmp_path, monkeypatch):
    """The trusted grader copies the submission's 10_capstone_model folder into the sandbox's
    working folder and names no path: the probe must find it there."""
    model = save_small(train_vocab, tmp_path / ch10.CHECKPOINT_NAME)
    monkeypatch.chdir(tmp_path)
    numbers = probes.read_checkpoint({}, {})
    assert np.array_equal(numbers["params"]["0"], model.pc.parameters_list()[0].as_array())
    assert all_checks()["ch10.capstone"].functions == ()


def test_the_trusted_grader_takes_the_saved_model_next_to_the_submission(train_vocab, tmp_path):
    """A capstone submission is the notebook plus 10_capstone_model/ beside it; the
    sandbox gets a copy of the folder, and the judge scores that model."""
    import shutil
    from autograder import grader
    shutil.copy(ROOT / "solutions" / "10_capstone.ipynb", tmp_path / "10_capstone.ipynb")
    without = grader.grade(tmp_path / "10_capstone.ipynb", limits=grader.Limits(wall_s=120))
    assert without.score == 0 and "no saved model" in json.dumps(without.cells)
    save_small(train_vocab, tmp_path / "10_capstone_model")
    result = grader.grade(tmp_path / "10_capstone.ipynb", limits=grader.Limits(wall_s=120))
    messages = json.dumps(result.cells)
    assert "no saved model" not in messages and "x the floor" in messages   # scored, too weak to pass
