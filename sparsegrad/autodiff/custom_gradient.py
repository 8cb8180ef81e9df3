"""custom_gradient: define a function's gradient yourself.

The decorated ``f(*args)`` returns ``(result, grad_fn)``.  The call is recorded
as one op whose inputs are the positional arguments (plus the trainable
Variables ``f`` read without receiving them) and whose outputs are new Tensors
holding ``result``; its backward function is ``grad_fn``.  Ops that ``f`` ran
are recorded too, as ops of any function are, but the outputs are not theirs,
so the backward pass reaches the arguments only through ``grad_fn``.
"""

import functools
import inspect

import numpy as np

from ..framework.indexed_slices import IndexedSlices
from ..framework.tensor import Tensor, convert_to_tensor, wrap
from ..framework.variable import Variable
from ..ops import array_ops
from ..ops._helpers import as_tensor, read_variable
from .nest import expand_composites, flatten, pack_as, rebuild_composites
from .recording import VariableWatcher, is_recording, record_operation

__all__ = ["custom_gradient"]


def custom_gradient(f=None):
    """Decorate `f` so that its gradient is the one `f` defines.

    ``f(*x)`` must return ``(y, grad_fn)``: ``y`` is a Tensor or a nest of
    Tensors; ``grad_fn(*upstream)`` receives one gradient per flattened
    output (zeros for an output that got none) and returns one gradient per
    flattened positional argument (None allowed).  Keyword arguments are
    passed through to `f` but get no gradient.

    RaggedTensors may be arguments and outputs (as in TensorFlow, through
    their flat values): a ragged output comes back with its row partition
    around new flat values, its upstream gradient reaches ``grad_fn`` as a
    RaggedTensor with that partition, and ``grad_fn`` may give a
    RaggedTensor (or a Tensor of its flat values' shape) as the gradient of
    a ragged argument.

    If `f` reads trainable Variables it was not given as arguments,
    ``grad_fn`` must accept a ``variables`` keyword argument (the list of
    those Variables, in creation order) and return
    ``(input_grads, variable_grads)``.

    Ops run inside ``grad_fn`` are recorded by any tape still recording, so
    higher-order derivatives go through the user's backward code.

    Both ``@custom_gradient`` and ``@custom_gradient()`` work, and so do
    methods (``self`` is not a differentiable argument).

    Parameters
    ----------
    f : callable, optional
        The function; when None, return a decorator.

    Returns
    -------
    callable
        The decorated function.

    Raises
    ------
    TypeError
        At call time, if `f` reads Variables and ``grad_fn`` has no
        ``variables`` parameter (or ``**kwargs``).
    ValueError
        At gradient time, if ``grad_fn`` returns a different number of
        gradients than `f` has positional arguments (or Variables).

    Examples
    --------
    >>> import sparsegrad as sg
    >>> @sg.custom_gradient
    ... def log1pexp(x):
    ...     e = sg.exp(x)
    ...     def grad(dy):
    ...         return dy * (1 - 1 / (1 + e))
    ...     return sg.log(1 + e), grad
    >>> x = sg.constant(100.0, dtype="float32")
    >>> with sg.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = log1pexp(x)
    >>> tape.gradient(y, x)
    <sparsegrad.Tensor: shape=(), dtype=float32, numpy=1.0>

    With a RaggedTensor argument and output:

    >>> @sg.custom_gradient
    ... def clipped_identity(rt):
    ...     def grad(upstream):          # a RaggedTensor
    ...         return upstream.with_flat_values(
    ...             sg.clip_by_value(upstream.flat_values, -1.0, 1.0))
    ...     return rt, grad
    >>> rt = sg.ragged.constant([[1.0, 2.0], [3.0]])
    >>> with sg.GradientTape() as tape:
    ...     tape.watch(rt)
    ...     y = clipped_identity(rt) * 5.0
    >>> tape.gradient(y, rt).to_list()
    [[1.0, 1.0], [1.0]]
    """
    if f is None:
        return lambda fn: custom_gradient(f=fn)
    if not callable(f):
        raise TypeError(f"custom_gradient: f must be callable, got {f!r}")
    return _CustomGradientFunction(f)


class _CustomGradientFunction:
    """The wrapper; a descriptor so that methods bind ``self`` first."""

    def __init__(self, f):
        self._f = f
        functools.update_wrapper(self, f)

    def __call__(self, *args, **kwargs):
        return _call(self._f, None, args, kwargs)

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        f = self._f

        @functools.wraps(f)
        def bound(*args, **kwargs):
            return _call(f, instance, args, kwargs)

        return bound


def _accepts_variables(grad_fn):
    try:
        params = inspect.signature(grad_fn).parameters.values()
    except (TypeError, ValueError):
        return True
    for p in params:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return True
        if p.name == "variables" and p.kind in (
            inspect.Parameter.POSITIONAL_OR_KEYWORD,
            inspect.Parameter.KEYWORD_ONLY,
        ):
            return True
    return False


def _input_tensor(arg):
    """A positional argument as a Tensor (a placeholder for non-numeric ones)."""
    if isinstance(arg, (Tensor, Variable)):
        return as_tensor(arg)
    try:
        return convert_to_tensor(arg)
    except (TypeError, ValueError):
        return wrap(np.zeros(()))  # never on a tape


def _call(f, instance, args, kwargs):
    with VariableWatcher() as watcher:
        returned = (
            f(*args, **kwargs) if instance is None else f(instance, *args, **kwargs)
        )
    try:
        result, grad_fn = returned
    except (TypeError, ValueError):
        raise TypeError(
            f"@custom_gradient function {getattr(f, '__name__', f)!r} must return "
            f"a pair (result, grad_fn), got {type(returned).__name__}"
        ) from None
    flat_args = expand_composites(flatten(list(args)))
    passed = flat_args + expand_composites(flatten(kwargs))
    variables = [
        v for v in watcher.watched() if v._trainable and not any(v is a for a in passed)
    ]
    if variables and not _accepts_variables(grad_fn):
        names = ", ".join(repr(v.name) for v in variables)
        raise TypeError(
            "@custom_gradient grad_fn must accept keyword argument 'variables', "
            f"since function uses variables: [{names}]"
        )
    result_leaves = flatten(result)
    flat_result = expand_composites(result_leaves)
    outputs = []
    for r in flat_result:
        if isinstance(r, IndexedSlices):
            r = array_ops.densify(r, "custom_gradient (an IndexedSlices output)")
        t = r if isinstance(r, Tensor) else convert_to_tensor(r)
        outputs.append(wrap(t._value))  # new tensors, produced by this op
    if is_recording():
        inputs = [_input_tensor(a) for a in flat_args]
        inputs += [read_variable(v) for v in variables]
        n_args = len(flat_args)

        def backward(*upstream):
            # a ragged output's gradient as a RaggedTensor of its partition
            upstream = rebuild_composites(out_leaves, upstream)
            if variables:
                input_grads, variable_grads = grad_fn(*upstream, variables=variables)
                variable_grads = [] if variable_grads is None else list(variable_grads)
                if len(variable_grads) != len(variables):
                    raise ValueError(
                        "Must return gradient for each variable from "
                        "@custom_gradient grad_fn."
                    )
            else:
                input_grads = grad_fn(*upstream)
                variable_grads = []
            flat = expand_composites(flatten(input_grads))
            if len(flat) != n_args:
                raise ValueError(
                    f"custom_gradient function expected to return {n_args} "
                    f"gradients, but returned {len(flat)} instead."
                )
            return flat + variable_grads

        op_type = getattr(f, "__name__", "CustomGradient")
        record_operation(op_type, tuple(inputs), tuple(outputs), grad_fn=backward)
    out_leaves = rebuild_composites(result_leaves, outputs)
    if isinstance(result, (list, tuple, dict)):
        return pack_as(result, out_leaves)
    return out_leaves[0]
