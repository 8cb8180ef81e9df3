"""Saving and restoring an optimizer's state: its slots, step count and
learning rate, in an ``.npz`` file (:meth:`Optimizer.save_state
<sparsegrad.training.optimizers.base.Optimizer.save_state>` and
:meth:`~sparsegrad.training.optimizers.base.Optimizer.load_state`, which the
class takes from here).  Every header is read and checked before any data,
and nothing changes before the whole file has passed.
"""

import json

import numpy as np

from ...errors import InvalidArgumentError
from ...framework import sparse_rows
from ...framework.archives import NpzArchive, write_npz
from ...framework.backend import backend_of
from .checks import check_number

__all__ = ["save_state", "load_state"]

_STATE_FORMAT = "sparsegrad.optimizer_state/1"


def _check_entry(path, header, like, what):
    """Raise unless the archive entry `what`, of header `header` (None when
    absent), has the shape and dtype of array `like`."""
    if header is None:
        raise _bad_state(path, f"{what} is missing")
    if header != (like.shape, like.dtype):
        raise _bad_state(
            path, f"{what} has shape {header[0]} and dtype {header[1]}; "
            f"expected {like.shape} and {like.dtype}"
        )


def _bad_state(path, what):
    return InvalidArgumentError(f"load_state: the state in {path!r} is invalid: {what}")


def _is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


# Each saved variable's fields: (what they must be, the check).
_SAVED_VARIABLE_FIELDS = {
    "name": ("a string", lambda v: isinstance(v, str)),
    "shape": ("a list of non-negative ints",
              lambda v: isinstance(v, list) and all(map(_is_count, v))),
    "dtype": ("a string", lambda v: isinstance(v, str)),
    "slots": ("a list of strings",
              lambda v: isinstance(v, list)
              and all(isinstance(s, str) for s in v)),
}


def _read_meta(archive, path):
    """The checked ``meta`` dict of a state file (an open NpzArchive); its
    header is checked before its data is read."""
    def not_a_state(what):
        return InvalidArgumentError(
            f"load_state: {path!r} is not a sparsegrad optimizer state file: {what}"
        )

    header = archive.header("meta")
    if header is None:
        raise not_a_state("it has no 'meta' array")
    shape, dtype = header
    if shape != () or dtype.kind != "U":
        raise not_a_state(
            f"'meta' must be a 0-d string array, got shape {shape} dtype {dtype}"
        )
    (meta,) = archive.read("meta")
    try:
        meta = json.loads(meta.item())
    except (ValueError, RecursionError) as exc:
        raise not_a_state(f"'meta' is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise not_a_state(f"'meta' is not a JSON object: {meta!r}")
    if meta.get("format") != _STATE_FORMAT:
        raise not_a_state(
            f"meta 'format' is {meta.get('format')!r}, expected {_STATE_FORMAT!r}"
        )
    if not isinstance(meta.get("class"), str):
        raise _bad_state(path, f"meta 'class' is missing or not a string: "
                               f"{meta.get('class')!r}")
    if not isinstance(meta.get("variables"), list):
        raise _bad_state(path, f"meta 'variables' is missing or not a list: "
                               f"{meta.get('variables')!r}")
    for k, info in enumerate(meta["variables"]):
        where = f"meta 'variables'[{k}]"
        if not isinstance(info, dict):
            raise _bad_state(path, f"{where} is not an object: {info!r}")
        for key, (expected, ok) in _SAVED_VARIABLE_FIELDS.items():
            if key not in info:
                raise _bad_state(path, f"{where} has no {key!r}")
            if not ok(info[key]):
                raise _bad_state(
                    path, f"{where} {key!r} must be {expected}, got {info[key]!r}"
                )
    return meta


def _read_iterations(archive, path):
    """The saved step count, checked to be an int64 value >= 0 (its header
    first)."""
    header = archive.header("iterations")
    if header is None:
        raise _bad_state(path, "it has no 'iterations' array")
    shape, dtype = header
    if shape != () or dtype.kind not in "iu":
        raise _bad_state(
            path, f"'iterations' must be a 0-d integer array, got shape "
            f"{shape} dtype {dtype}"
        )
    (iterations,) = archive.read("iterations")
    value = int(iterations)
    if not 0 <= value <= sparse_rows.INT64_MAX:
        raise _bad_state(
            path, f"'iterations' must be in [0, 2**63 - 1] (int64), got {value}"
        )
    return np.int64(value)


def save_state(self, path):
    """Write the optimizer state to an ``.npz`` file.

    The file holds the step count, the learning rate (when it is a
    number), the class name, and every slot of every tracked
    variable in the order the optimizer first saw them (see
    :meth:`tracked_variables`).  Model variables are not saved.  Slots
    of float16 and bfloat16 are stored as their bits with their dtype's
    name (:func:`~sparsegrad.framework.archives.write_npz`), and load
    back bit for bit.

    Parameters
    ----------
    path : str or os.PathLike or file-like
    """
    arrays = {"iterations": np.asarray(self._iterations._value, np.int64)}
    variables = []
    for k, (var, state) in enumerate(self._slots.values()):
        slots = []
        for field in state._fields:
            slot = getattr(state, field)
            if slot is not None:
                value = slot._value
                arrays[f"slot/{k}/{field}"] = backend_of(value).host(value)
                slots.append(field)
        variables.append({"name": var.name, "shape": list(var.shape),
                          "dtype": var.dtype.name, "slots": slots})
    for key, value in self._state_arrays().items():
        arrays[f"optimizer/{key}"] = value
    lr = self._learning_rate
    meta = {
        "format": _STATE_FORMAT,
        "class": type(self).__name__,
        "learning_rate": lr if isinstance(lr, float) else None,
        "variables": variables,
    }
    arrays["meta"] = np.asarray(json.dumps(meta))
    write_npz(path, arrays)


def load_state(self, path, var_list=None):
    """Restore what :meth:`save_state` wrote; training then resumes exactly.

    The whole file is read and checked first; only then are the slots,
    the step count and the learning rate replaced, all together.

    Parameters
    ----------
    path : str or os.PathLike or file-like
    var_list : list of Variable, optional
        The model variables, in the order the saving optimizer first saw
        them (its :meth:`tracked_variables`).  Defaults to this
        optimizer's tracked variables, which must then number as many.
        Slots this optimizer held for other variables are dropped.

    Raises
    ------
    InvalidArgumentError
        Nothing is changed then: the slots (and their values), the step
        count and the learning rate stay as they were.  Raised if

        - `path` cannot be read as an ``.npz`` archive: it does not exist,
          is empty or corrupt, holds a single ``.npy`` array, holds
          object (pickled) arrays, or an entry's header declares more
          data than the entry holds (every header is read and checked
          before any data);
        - it is not a state :meth:`save_state` writes: no ``meta``, or
          ``meta`` not a JSON object with this ``format``, a string
          ``class`` and a list ``variables`` of objects with a string
          ``name`` and ``dtype``, a ``shape`` of ints >= 0 and a list of
          string ``slots``;
        - it was saved by another optimizer class, or with other slots
          (e.g. other hyper-parameters);
        - ``iterations`` is missing, not a 0-d integer array, negative or
          beyond int64;
        - a slot array is missing or its shape or dtype is not exactly
          that of the slot (read from its header, before its data: a
          bfloat16 slot is not loaded into a float16 or float32 one);
        - a half-precision entry's stored dtype name is unknown, names no
          entry, or its bits are not stored as uint16;
        - the optimizer's own state (Nadam's ``u_product``) is missing, of
          another shape or dtype, or out of its range;
        - the arrays need more memory than the process may allocate;
        - the saved learning rate is one the constructor would reject;
        - `var_list` differs from the saved variables in number, shape or
          dtype, or holds a variable twice.
    TypeError
        If an entry of `var_list` is not a Variable.
    """
    slots, iterations, learning_rate, own = _read_state(self, path, var_list)
    self._set_state_arrays(own, path)
    self._slots = slots
    self._iterations._value[...] = iterations
    self._iterations._bump()
    if learning_rate is not None and not callable(self._learning_rate):
        self._learning_rate = learning_rate


def _read_state(self, path, var_list):
    """Read and check a state for :meth:`load_state`, changing nothing.

    Returns the new ``_slots`` dict (new slot Variables), the step count,
    the saved learning rate (a float, or None) and the optimizer's own state
    arrays (``_state_arrays``' names).
    """
    with NpzArchive(
            path, "load_state: cannot read an optimizer state from") as archive:
        return _read_archive(self, archive, path, var_list)


def _read_archive(self, archive, path, var_list):
    """:meth:`_read_state` of an open archive: every header is checked
    against the variables before the slots' data is read."""
    meta = _read_meta(archive, path)
    if meta["class"] != type(self).__name__:
        raise InvalidArgumentError(
            f"load_state: the state in {path!r} was saved by {meta['class']}, "
            f"not {type(self).__name__}"
        )
    iterations = _read_iterations(archive, path)
    learning_rate = meta.get("learning_rate")
    if learning_rate is not None:
        try:
            learning_rate = check_number(learning_rate, "learning_rate", low=0.0)
            self._validate_learning_rate(learning_rate)
        except (InvalidArgumentError, OverflowError) as exc:
            raise _bad_state(path, f"saved learning_rate: {exc}") from None
    saved = meta["variables"]
    var_list = self.tracked_variables() if var_list is None else list(var_list)
    if len(var_list) != len(saved):
        raise InvalidArgumentError(
            f"load_state: the state in {path!r} holds slots for {len(saved)} "
            f"variables, var_list has {len(var_list)}"
        )
    new_slots, targets = {}, []
    for k, (var, info) in enumerate(zip(var_list, saved)):
        self._check_variable(var, f"var_list[{k}]")
        if var._uid in new_slots:
            raise InvalidArgumentError(
                f"load_state: var_list[{k}] ({var.name!r}) appears twice in "
                f"var_list, for the state in {path!r}"
            )
        if list(var.shape) != info["shape"] or var.dtype.name != info["dtype"]:
            raise InvalidArgumentError(
                f"load_state: var_list[{k}] ({var.name!r}, {var.shape}, "
                f"{var.dtype}) does not match variable {info['name']!r} "
                f"({tuple(info['shape'])}, {info['dtype']}) saved in {path!r}"
            )
        state = self._create_slots(var)
        present = [f for f in state._fields if getattr(state, f) is not None]
        if present != info["slots"]:
            raise InvalidArgumentError(
                f"load_state: the slots {info['slots']} of {info['name']!r} "
                f"in {path!r} differ from this optimizer's {present}; are the "
                "hyper-parameters the same?"
            )
        for field in present:
            slot, key = getattr(state, field), f"slot/{k}/{field}"
            header = archive.header(key)
            _check_entry(path, header, slot,
                         f"slot {field!r} of {info['name']!r} ({key!r})")
            targets.append((slot, key))
        new_slots[var._uid] = (var, state)
    own_keys = []
    for name, value in self._state_arrays().items():
        key = f"optimizer/{name}"
        _check_entry(path, archive.header(key), value,
                     f"the optimizer state {key!r}")
        own_keys.append((name, key))
    # the headers all agree with the slots: now the data, all at once
    values = archive.read(*(key for _, key in targets), *(k for _, k in own_keys))
    for (slot, _), value in zip(targets, values):
        # a new Variable, not yet visible (on var's device)
        slot._value[...] = backend_of(slot._value).asarray(value)
    own = {name: value for (name, _), value in zip(own_keys, values[len(targets):])}
    return new_slots, iterations, learning_rate, own
