"""Probe of chapter 10 (capstone): the submitted model, as numbers.

A capstone submission is a saved :class:`course.lm.RNNLM` built from DyNet's
builders: data, not code, so no student code runs here. The probe loads the
checkpoint folder with DyNet and returns the model as plain numbers: its
configuration, its vocabulary (UTF-8 bytes) and every weight. The folder is
``functions["checkpoint"]`` when given (a notebook's hidden test passes its
path), else ``10_capstone_model`` in the working folder: the trusted grader
copies the submission's folder of that name into the sandbox's working folder. The trusted judge
(:mod:`autograder.reference.ch10_capstone`) rebuilds the model from those
numbers and evaluates it on held-out text, so the untrusted files are parsed
only here (in the autograder's sandbox) and the trusted side never reads them.
Like every probe, this module never imports reference code.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

CHECKPOINT_NAME = "10_capstone_model"          # the folder next to the notebook
CELLS = ("srnn", "lstm", "gru")               # DyNet's builders (course.lm.BUILDERS)
RESIDUALS = (None, "vertical", "lateral")
LIMITS = {"embed": 1024, "hidden": 1024, "layers": 4}
MAX_PARAMETERS = 3_000_000
MAX_VOCABULARY = 20_000


def describe_limits() -> str:
    return (f"a DyNet builder ({', '.join(CELLS)}), embed and hidden at most {LIMITS['hidden']}, "
            f"at most {LIMITS['layers']} layers, at most {MAX_PARAMETERS:,} parameters")


def check_config(config: dict) -> None:
    """Refuse a configuration outside the capstone's rules before building anything."""
    if config.get("cell") not in CELLS:
        raise ValueError(f"the model's cell is {config.get('cell')!r}: the capstone needs {describe_limits()}")
    for key, top in LIMITS.items():
        value = config.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= top:
            raise ValueError(f"{key} = {value!r}: the capstone needs {describe_limits()}")
    if config.get("residual") not in (None, "vertical"):
        raise ValueError(f"residual = {config.get('residual')!r}: DyNet's builders take None or "
                         "'vertical' (lateral residuals need a hand-written cell)")
    if config.get("residual") and config.get("embed") != config.get("hidden"):
        raise ValueError("residual connections need embed == hidden")
    vocab_size = config.get("vocab_size")
    if not isinstance(vocab_size, int) or not 4 <= vocab_size <= MAX_VOCABULARY:
        raise ValueError(f"vocab_size = {vocab_size!r}: build the vocabulary with Vocab.build(train)")


def read_checkpoint(functions: dict, inputs: dict) -> dict:
    """The saved model as numbers: config, vocabulary bytes, weights."""
    from course import lm
    where = functions.get("checkpoint", CHECKPOINT_NAME)
    directory = Path(where() if callable(where) else where)
    if not (directory / "config.json").is_file():
        raise FileNotFoundError(f"no saved model in {directory.name}/: run the training cell, which saves "
                                "it with model.save(CHECKPOINT), and submit that folder with the notebook")
    config = json.loads((directory / "config.json").read_text(encoding="utf-8"))
    if not isinstance(config, dict):
        raise ValueError("config.json does not hold a model configuration: save the model with model.save")
    check_config(config)
    model = lm.RNNLM.load(directory)
    return {
        "config": np.array([CELLS.index(config["cell"]), config["embed"], config["hidden"],
                            config["layers"], RESIDUALS.index(config["residual"])], dtype=float),
        "vocab": np.frombuffer("\n".join(model.vocab.tokens).encode("utf-8"), dtype=np.uint8),
        "params": {str(i): p.as_array() for i, p in enumerate(model.pc.parameters_list())},
        "lookups": {str(i): p.as_array() for i, p in enumerate(model.pc.lookup_parameters_list())},
    }
