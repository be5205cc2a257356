"""Probe of chapter 04's ``lstm_init`` (runs in the sandbox; no reference code here).

``lstm_init(name, shape, forget_bias=1.0)`` follows the ``Cell.init`` contract
of :mod:`course.cell`: it returns the initial value of one parameter, or None
for "use the default initialiser". The probe asks it about every parameter the
grader names, once with the default forget bias and once with the grader's own
value, and returns numbers only: for each round a 0/1 vector ``none`` (1 where
the function returned None, in the order of ``inputs["names"]``) and the
returned values as float arrays (NaN-filled where they could not be read as
numbers).
"""
from __future__ import annotations

import numpy as np


def _as_numbers(value, shape) -> np.ndarray:
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        return np.full(shape, np.nan)


def init(functions: dict, inputs: dict) -> dict:
    lstm_init = functions[inputs["function"]]
    rounds = {"default": {}, "custom": {"forget_bias": inputs["forget_bias"]}}
    numbers = {}
    for round_name, kwargs in rounds.items():
        none, values = [], {}
        for name in inputs["names"]:
            shape = tuple(inputs["shapes"][name])
            value = lstm_init(name, shape, **kwargs)
            none.append(1.0 if value is None else 0.0)
            if value is not None:
                values[name] = _as_numbers(value, shape)
        numbers[round_name] = {"none": np.array(none), "values": values}
    return numbers
