"""Checks of chapter 10 (capstone): held-out perplexity of the submitted model.

The student trains a :class:`course.lm.RNNLM` (DyNet builders only) within the
stated budget and saves it next to the notebook. The probe
(:mod:`autograder.probes.ch10_capstone`) returns the model as numbers; the judge
here rebuilds it (no student code runs, and the submitted files are never parsed
in the trusted process) and computes its perplexity on
``autograder/heldout/course_hidden.txt``: sentences drawn from the course grammar
with a seed of their own, never released. Thresholds are multiples of that
set's floor, the grammar's own perplexity (``course.grammar.floor_perplexity``):

========================  ============  ==============================================
check                     perplexity    for comparison (validation set, measured)
========================  ============  ==============================================
``ch10.capstone``         <= 2.0 floor  Kneser-Ney trigram 2.11; LSTM 64/128 with
                                        ``training.train``'s defaults: 1.81 after 30 CPU-s
``ch10.capstone_good``    <= 1.5 floor  the same defaults: 1.59 after one epoch
                                        (51 CPU-s), 1.46 after 60 CPU-s
``ch10.capstone_best``    <= 1.3 floor  the reference recipe (GRU 64/128, Adam 0.005,
                                        batch 32, one epoch, last fifth at lr / 4):
                                        1.20 in 42 CPU-s (held-out set: 1.196)
========================  ============  ==============================================

The model's vocabulary must contain every word of the held-out set (the full
training vocabulary, ``Vocab.build(train)``): a perplexity over ``<unk>`` is not
comparable, and a small vocabulary would make the task easier, not the model
better. The checks call no student function: a notebook's hidden test passes
``checkpoint=`` the folder's path; the trusted grader copies the submission's
``10_capstone_model`` folder into the sandbox's working folder, where the probe
looks for it.
"""
from __future__ import annotations

import hashlib

import numpy as np

from autograder.probes import ch10_capstone as probes
from autograder.reference.grading import Check

TIERS = {"ch10.capstone": 2.0, "ch10.capstone_good": 1.5, "ch10.capstone_best": 1.3}
CHECKPOINT_NAME = probes.CHECKPOINT_NAME    # the folder next to the notebook
_scores: dict = {}                          # digest of the model -> (perplexity, problems)


def hidden_set():
    from autograder.make_heldout import HELDOUT, NAME
    from course.data import read_sentences
    from course.grammar import floor_perplexity
    return read_sentences(HELDOUT / f"{NAME}.txt"), floor_perplexity(NAME, HELDOUT)


def rebuild(numbers: dict):
    """The submitted model from the probe's numbers, or a ValueError saying what is wrong."""
    from course import lm
    from course.data import DataError, Vocab
    code = np.asarray(numbers["config"], dtype=float).astype(int).tolist()
    if len(code) != 5 or not 0 <= code[0] < len(probes.CELLS) or not 0 <= code[4] < len(probes.RESIDUALS):
        raise ValueError("the model's configuration could not be read")
    config = {"cell": probes.CELLS[code[0]], "embed": code[1], "hidden": code[2], "layers": code[3],
              "residual": probes.RESIDUALS[code[4]]}
    try:
        tokens = bytes(np.asarray(numbers["vocab"]).astype(np.uint8)).decode("utf-8").split("\n")
        vocab = Vocab(tokens)
    except (UnicodeDecodeError, DataError) as err:
        raise ValueError(f"the model's vocabulary is not usable: {err}") from None
    probes.check_config({**config, "vocab_size": len(vocab)})
    model = lm.RNNLM(vocab, **config)
    for kind, params in (("params", model.pc.parameters_list()), ("lookups", model.pc.lookup_parameters_list())):
        given = numbers[kind]
        if len(given) != len(params):
            raise ValueError(f"the checkpoint holds {len(given)} {kind}, the configuration needs {len(params)}")
        for i, param in enumerate(params):
            value = np.asarray(given[str(i)], dtype=float)
            if value.shape != tuple(param.shape()) or not np.isfinite(value).all():
                raise ValueError(f"weight {i} of the checkpoint has the wrong shape or non-finite values")
            if kind == "params":
                param.set_value(value)
            else:
                param.init_from_array(value)
    if model.param_count() > probes.MAX_PARAMETERS:
        raise ValueError(f"{model.param_count():,} parameters: the capstone allows {probes.describe_limits()}")
    return model


def _digest(numbers: dict) -> str:
    h = hashlib.sha256()
    for key in ("config", "vocab"):
        h.update(np.ascontiguousarray(np.asarray(numbers[key], dtype=float)).tobytes())
    for kind in ("params", "lookups"):
        for name in sorted(numbers[kind], key=int):
            h.update(np.ascontiguousarray(np.asarray(numbers[kind][name], dtype=float)).tobytes())
    return h.hexdigest()


def heldout_ratio(numbers: dict):
    """(perplexity / floor on the held-out set, problems); computed once per model."""
    key = _digest(numbers)
    if key not in _scores:
        from course import evaluation
        try:
            model = rebuild(numbers)
        except ValueError as err:
            _scores[key] = (None, [str(err)])
            return _scores[key]
        sentences, floor = hidden_set()
        unknown = sum(1 for s in sentences for w in s if w not in model.vocab)
        if unknown:
            _scores[key] = (None, [f"{unknown} words of the held-out text are missing from the model's "
                                   "vocabulary: build it from every training word, Vocab.build(train)"])
        else:
            ppl = evaluation.evaluate(model, sentences)
            _scores[key] = (ppl / floor, [] if np.isfinite(ppl) else ["the held-out perplexity is not finite"])
    return _scores[key]


def tier_judge(factor: float):
    def judge(numbers: dict, inputs: dict) -> list:
        ratio, problems = heldout_ratio(numbers)
        if problems:
            return problems
        if not ratio <= factor:
            return [f"the held-out perplexity is {ratio:.3f} x the floor; this check needs at most {factor} x"]
        return []
    return judge


def tier_inputs(factor: float):
    return lambda: {"factor": factor}


VISIBLE = {"ch10.capstone": "capstone_pass_tests", "ch10.capstone_good": "capstone_good_tests",
           "ch10.capstone_best": "capstone_best_tests"}
CHECKS = [Check(name, (), tier_inputs(factor), "autograder.probes.ch10_capstone:read_checkpoint",
                tier_judge(factor), about=f"your saved model's perplexity on held-out sentences of the course "
                                          f"grammar (never released), at most {factor} x their floor",
                lecture=("10_capstone", "4. What matters, in order"), visible=VISIBLE[name],
                seconds=120)                # it evaluates a whole model on the held-out text
          for name, factor in TIERS.items()]
