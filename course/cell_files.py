"""A recurrent cell from its name: one of DyNet's builders, or a step function in a Python file.

The command line's ``--cell`` (``lstm``, or ``path/to/file.py:lstm_step``) goes through
:func:`resolve_cell`; :meth:`course.lm.RNNLM.load` rebuilds a saved model's file cell through
:func:`saved_cell`, refusing a file that changed since the model was trained. A user's file that
fails to import or to run one step is reported in one line, with the line it came from.
"""
from __future__ import annotations

import hashlib
import importlib.util
import traceback
from pathlib import Path

import numpy as np

from course import runtime
from course.cell import Cell
from course.checkpoint import CheckpointError
from course.files import sha256_of
from course.layers import BUILDERS

dy = runtime.dynet()


def saved_cell(config) -> Cell:
    """The cell of a saved model that is not a builder, from the file it was loaded from
    (``config``: the model's :class:`course.lm.Config`, which names the file and its checksum)."""
    source = config.extra.get("cell_file")
    if source is None:
        raise ValueError(f"the model's cell {config.cell!r} is hand-written: pass it in, "
                         f"RNNLM.load(directory, cell=...) (DyNet's builders {sorted(BUILDERS)} "
                         "rebuild by name).")
    if not Path(source).is_file() or sha256_of(source) != config.extra.get("cell_sha256"):
        raise CheckpointError(f"{source}, the file the model's cell comes from, is missing or has changed "
                              "since the model was trained: restore it, or train again.")
    return load_cell(f"{source}:{config.extra['cell_function']}")


def resolve_cell(name: str) -> "str | Cell":
    """A cell from its command-line name: a DyNet builder (``srnn``, ``lstm``, ``gru``),
    or ``path/to/file.py:lstm_step``, a step function in a file (see :func:`load_cell`).

    The course's own hand-written cells are graded exercises and are not in this
    package: build them yourself and pass the Cell to :class:`course.lm.RNNLM`."""
    if name in BUILDERS:
        return name
    if ":" in name and name.rpartition(":")[0].endswith(".py"):
        return load_cell(name)
    raise ValueError(f"unknown cell {name!r}: use one of DyNet's builders {sorted(BUILDERS)}, or "
                     "your own step function as path/to/file.py:lstm_step (with lstm_shapes beside it).")


def load_cell(spec: str) -> Cell:
    """``path/to/file.py:lstm_step``: the step function ``lstm_step`` of a Python file,
    as the exercises define it (see :mod:`course.cell`), with its parameter shapes from
    ``lstm_shapes`` in the same file and, if the file has one, initial values from
    ``lstm_init(name, shape)``. ``ran_identity_step`` may also take ``ran_shapes``: the
    longest name that exists wins. The state size (1 for (h,), 2 for (h, c)) is found
    by running one step on a small batch."""
    path_text, _, function = spec.rpartition(":")
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"--cell {spec}: there is no file {path}")
    if not function.endswith("_step"):
        raise ValueError(f"--cell {spec}: name a step function, e.g. {path_text}:lstm_step")
    module_name = "course_cell_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    loader = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(loader)
    try:
        loader.loader.exec_module(module)
    except Exception as err:          # the user's own code: report it in one line
        raise ValueError(f"--cell {spec}: importing {path.name} failed: {_where(err, path)}") from None
    step = getattr(module, function, None)
    if not callable(step):
        raise ValueError(f"--cell {spec}: {path.name} defines no function {function}")
    words = function.removesuffix("_step").split("_")
    prefixes = ["_".join(words[:k]) for k in range(len(words), 0, -1)]
    shapes = next((getattr(module, p + "_shapes") for p in prefixes
                   if callable(getattr(module, p + "_shapes", None))), None)
    if shapes is None:
        raise ValueError(f"--cell {spec}: {path.name} defines no {prefixes[0]}_shapes(d_in, d_h) "
                         "returning {parameter name: shape}, which the step function's parameters need")
    init = next((getattr(module, p + "_init") for p in prefixes
                 if callable(getattr(module, p + "_init", None))), None)
    cell = Cell(f"{path.name}:{function}", step, shapes, init=init)
    cell.n_state = _state_size(cell, spec, path)
    return cell


def _where(err: Exception, path: Path) -> str:
    """An exception raised by a user's file, in one line, with the line it came from."""
    line = getattr(err, "lineno", None)
    frames = [f for f in traceback.extract_tb(err.__traceback__) if Path(f.filename) == path]
    if frames:
        line = frames[-1].lineno
    message = err.msg if isinstance(err, SyntaxError) else err
    hint = runtime.explain(err)                   # `1 - x` on a DyNet that refuses it: the fix
    return (f"{type(err).__name__}: {message}" + (f" (line {line} of {path.name})" if line else "")
            + (f". {hint}" if hint else ""))


def _state_size(cell: Cell, spec: str, path: Path) -> int:
    """1 or 2: the size of state that the step function takes and returns (checked on
    a batch of 2, d_in = 3, d_h = 2)."""
    try:
        shapes = {name: tuple(shape) for name, shape in cell.shapes(3, 2).items()}
    except Exception as err:
        raise ValueError(f"--cell {spec}: the shapes function failed: {_where(err, path)}") from None
    failures = []
    for n_state in (1, 2):
        dy.renew_cg()
        rng = np.random.default_rng(0)
        p = {name: dy.inputTensor(rng.uniform(-0.5, 0.5, shape)) for name, shape in shapes.items()}
        x = dy.inputTensor(rng.normal(size=(3, 2)), batched=True)
        state = tuple(dy.zeros((2,), batch_size=2) for _ in range(n_state))
        try:
            out = cell.step(p, x, state)
            if isinstance(out, tuple) and len(out) == n_state and all(e.dim() == ((2,), 2) for e in out):
                return n_state
            failures.append(f"with a state of {n_state} it returned {_describe(out)}")
        except Exception as err:
            failures.append(f"with a state of {n_state}: {_where(err, path)}")
    raise ValueError(f"--cell {spec}: one step on a batch of 2 (d_in = 3, d_h = 2) did not return a "
                     f"state like the one it was given ({'; '.join(failures)}). A step function takes "
                     "(p, x, state) and returns the new state, a tuple such as (h,) or (h, c).")


def _describe(value) -> str:
    if isinstance(value, tuple):
        return f"a tuple of {len(value)} of dimensions {[getattr(e, 'dim', lambda: '?')() for e in value]}"
    return f"a {type(value).__name__}"
