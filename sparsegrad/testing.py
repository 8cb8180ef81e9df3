"""Testing helpers: a finite-difference gradient checker, and asserts for
IndexedSlices and RaggedTensor.

:func:`check_gradients` compares what the tape computes with central finite
differences in float64, to first or second order (as autograd's
``check_grads`` does).  It ships with the library so that users who register
their own gradients can check them the same way.
"""

import numpy as np

from .autodiff.nest import flatten
from .autodiff.tape import GradientTape
from .framework.indexed_slices import IndexedSlices
from .framework.tensor import convert_to_tensor, wrap
from .ops.array_ops import densify
from .ragged.ragged_factory_ops import constant
from .ragged.ragged_tensor import RaggedTensor

__all__ = [
    "assert_indexed_slices_equal",
    "assert_ragged_equal",
    "check_gradients",
    "numerical_gradients",
]


def _dense_array(g):
    return np.asarray(densify(g))


def _as_float64_inputs(inputs):
    if isinstance(inputs, (list, tuple)):
        items = list(inputs)
    else:
        items = [inputs]
    arrays = []
    for x in items:
        a = np.asarray(x)
        if a.dtype.kind == "f":
            a = a.astype(np.float64)
        arrays.append(a)
    return arrays


def _flat_outputs(y):
    return [convert_to_tensor(t) for t in flatten(y)]


def _projection(f, arrays, rng):
    """Random seeds, one per flattened output of f, fixed for the check."""
    outputs = _flat_outputs(f(*[convert_to_tensor(a) for a in arrays]))
    return [rng.standard_normal(t.shape).astype(t.dtype) for t in outputs]


def numerical_gradients(f, inputs, seeds, delta=1e-6):
    """Central finite differences of ``sum_k <seeds[k], f(*inputs)[k]>``.

    Parameters
    ----------
    f : callable
        Takes Tensors, returns a Tensor or a nest of Tensors.
    inputs : list of ndarray
        Floating inputs are perturbed; others are passed unchanged (None).
    seeds : list of ndarray
        One per flattened output.
    delta : float, default=1e-6

    Returns
    -------
    list of ndarray or None
        One gradient per input (float64), None for a non-floating input.

    Examples
    --------
    >>> import numpy as np
    >>> import sparsegrad as sg
    >>> from sparsegrad.testing import numerical_gradients
    >>> (g,) = numerical_gradients(lambda x: x * x, [np.array([1.0, 3.0])],
    ...                            seeds=[np.ones(2)])
    >>> np.round(g, 6)
    array([2., 6.])
    """

    def scalar(args):
        outs = _flat_outputs(f(*[convert_to_tensor(a) for a in args]))
        return sum(
            float(np.sum(np.asarray(o, dtype=np.float64) * s))
            for o, s in zip(outs, seeds)
        )

    grads = []
    for i, x in enumerate(inputs):
        if x.dtype.kind != "f":
            grads.append(None)
            continue
        g = np.zeros(x.shape, np.float64)
        flat = g.reshape(-1)
        for j in range(x.size):
            args = list(inputs)
            plus = x.copy().reshape(-1)
            minus = x.copy().reshape(-1)
            plus[j] += delta
            minus[j] -= delta
            args[i] = plus.reshape(x.shape)
            f_plus = scalar(args)
            args[i] = minus.reshape(x.shape)
            f_minus = scalar(args)
            flat[j] = (f_plus - f_minus) / (2 * delta)
        grads.append(g)
    return grads


def _tape_gradients(f, tensors, seeds):
    with GradientTape() as tape:
        for t in tensors:
            if t.dtype.kind == "f":
                tape.watch(t)
        outs = _flat_outputs(f(*tensors))
    seed_tensors = [wrap(np.array(s, copy=True)) for s in seeds]
    return tape.gradient(outs, list(tensors), output_gradients=seed_tensors)


def check_gradients(f, inputs, order=1, delta=1e-6, rtol=1e-5, atol=1e-6, seed=0):
    """Check the tape's gradients of `f` against finite differences.

    The outputs of `f` are projected on a fixed random direction, so every
    output element counts; the check runs in float64.

    Parameters
    ----------
    f : callable
        Takes one Tensor per input, returns a Tensor or a nest of Tensors.
    inputs : array_like or list of array_like
        Floating inputs are cast to float64 and differentiated; integer ones
        (indices) are passed unchanged.
    order : {1, 2}, default=1
        2 also checks the gradient of the gradient (through nested tapes).
    delta : float, default=1e-6
        Finite-difference step.
    rtol, atol : float
        Tolerances of the comparison.
    seed : int, default=0
        Seeds the projection direction.

    Returns
    -------
    None
        The check passed.

    Raises
    ------
    AssertionError
        With the input index, the largest difference and both gradients, if
        they disagree.  A gradient of None counts as zeros.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.testing import check_gradients
    >>> check_gradients(lambda x: sg.tanh(x) * x, [[0.5, -1.0]], order=2)
    """
    if order not in (1, 2):
        raise ValueError(f"order must be 1 or 2, got {order!r}")
    arrays = _as_float64_inputs(inputs)
    rng = np.random.default_rng(seed)
    seeds = _projection(f, arrays, rng)
    tensors = [convert_to_tensor(a) for a in arrays]
    analytic = _tape_gradients(f, tensors, seeds)
    numeric = numerical_gradients(f, arrays, seeds, delta)
    for i, (a, n) in enumerate(zip(analytic, numeric)):
        if n is None:
            continue
        a = np.zeros_like(n) if a is None else _dense_array(a).astype(np.float64)
        if a.shape != n.shape:
            raise AssertionError(
                f"gradient of input {i} has shape {a.shape}, the input has {n.shape}"
            )
        if not np.allclose(a, n, rtol=rtol, atol=atol, equal_nan=True):
            diff = np.abs(a - n)
            raise AssertionError(
                f"gradient of input {i} does not match finite differences "
                f"(max abs diff {np.nanmax(diff):.3g}, rtol={rtol}, atol={atol})\n"
                f"tape:\n{a}\nfinite differences:\n{n}"
            )
    if order == 2:

        def first_order(*xs):
            grads = _tape_gradients(f, xs, seeds)
            out = []
            for x, g in zip(xs, grads):
                if x.dtype.kind != "f":
                    continue
                if g is None:
                    g = wrap(np.zeros(x.shape, x.dtype))
                else:
                    g = densify(g)
                out.append(g)
            return out

        check_gradients(first_order, arrays, 1, delta, rtol, atol, seed + 1)


def assert_indexed_slices_equal(actual, expected, rtol=1e-7, atol=0.0):
    """Assert `actual` is an IndexedSlices whose dense form equals `expected`.

    Rows are compared densified (order and repeats of indices are free).

    Parameters
    ----------
    actual : IndexedSlices
    expected : IndexedSlices or array_like
        Compared by dense value.
    rtol, atol : float
        Tolerances of the comparison.

    Returns
    -------
    None
        The two are equal.

    Raises
    ------
    AssertionError
        If `actual` is not an IndexedSlices or the dense values differ.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.testing import assert_indexed_slices_equal
    >>> s = sg.IndexedSlices([[1.0], [2.0]], [1, 1], dense_shape=(3, 1))
    >>> assert_indexed_slices_equal(s, [[0.0], [3.0], [0.0]])
    """
    if not isinstance(actual, IndexedSlices):
        raise AssertionError(
            f"expected IndexedSlices, got {type(actual).__name__}"
        )
    exp = _dense_array(expected)
    act = _dense_array(actual)
    if act.shape != exp.shape:
        raise AssertionError(f"dense shapes differ: {act.shape} != {exp.shape}")
    np.testing.assert_allclose(act, exp, rtol=rtol, atol=atol)


def _assert_nested_equal(actual, expected, rtol, atol):
    """:func:`assert_ragged_equal` at ragged_rank 2 and above: the row lengths
    of every level, then the flat values the rows cover."""
    if not isinstance(expected, RaggedTensor):
        expected = constant(expected, ragged_rank=actual.ragged_rank)
    if actual.ragged_rank != expected.ragged_rank:
        raise AssertionError(
            f"ragged ranks differ: {actual.ragged_rank} != {expected.ragged_rank}"
        )
    for level in range(actual.ragged_rank):
        got, want = np.asarray(actual.row_lengths()), np.asarray(expected.row_lengths())
        if got.shape != want.shape or np.any(got != want):
            raise AssertionError(
                f"row lengths of level {level} differ: {got.tolist()} != "
                f"{want.tolist()}"
            )
        # a full slice keeps only the values the rows cover
        actual, expected = actual[:].values, expected[:].values
    np.testing.assert_allclose(actual.numpy(), expected.numpy(), rtol=rtol,
                               atol=atol, equal_nan=True)


def assert_ragged_equal(actual, expected, rtol=1e-7, atol=0.0):
    """Assert `actual` is a RaggedTensor with the rows of `expected`.

    The row lengths must be equal exactly and the values to the tolerances
    (NaN equals NaN); the row splits' dtype is not compared.

    Parameters
    ----------
    actual : RaggedTensor
    expected : RaggedTensor or nested list
        A nested list is read with :func:`sparsegrad.ragged.constant`'s rule
        (rows of the outer list; at ragged_rank >= 2, with the ragged_rank of
        `actual`).
    rtol : float, default=1e-7
        Relative tolerance of the values.
    atol : float, default=0.0
        Absolute tolerance of the values.

    Returns
    -------
    None
        Returns only when every row matches.

    Raises
    ------
    AssertionError
        If `actual` is not a RaggedTensor, the ragged ranks or the row
        lengths (of any level) differ, or the values differ.

    Examples
    --------
    >>> import sparsegrad as sg
    >>> from sparsegrad.testing import assert_ragged_equal
    >>> rt = sg.ragged.range([2, 0, 1])
    >>> assert_ragged_equal(rt, [[0, 1], [], [0]])
    >>> assert_ragged_equal(sg.ragged.constant([[[1.0], []], [[2.0, 3.0]]]),
    ...                     [[[1.0], []], [[2.0, 3.0]]])
    """
    if not isinstance(actual, RaggedTensor):
        raise AssertionError(f"expected a RaggedTensor, got {type(actual).__name__}")
    if actual.ragged_rank > 1 or (isinstance(expected, RaggedTensor)
                                  and expected.ragged_rank > 1):
        _assert_nested_equal(actual, expected, rtol, atol)
        return
    if isinstance(expected, RaggedTensor):
        lengths = np.asarray(expected.row_lengths())
        values = expected.values.numpy()[: int(expected.row_splits[-1])]
    else:
        rows = [np.asarray(r) for r in expected]
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        values = np.concatenate(rows) if rows else np.empty(0)
    got_lengths = np.asarray(actual.row_lengths())
    if got_lengths.shape != lengths.shape or np.any(got_lengths != lengths):
        raise AssertionError(
            f"row lengths differ: {got_lengths.tolist()} != {lengths.tolist()}"
        )
    got = actual.values.numpy()[: int(actual.row_splits[-1])]
    np.testing.assert_allclose(got, values, rtol=rtol, atol=atol, equal_nan=True)
