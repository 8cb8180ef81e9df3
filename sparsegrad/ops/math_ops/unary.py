"""What the one-operand elementwise ops share: the forward (convert, check,
compute, record), the docstring text, and the gradient ops written in terms
of the forward op's output (``SqrtGrad``, ``TanhGrad``, ...)."""

import numpy as np

from ...autodiff.recording import record_operation
from ...autodiff.registry import register_gradient
from ...framework import dispatch
from ...framework.backend import CPU, backend_of
from ...framework.indexed_slices import IndexedSlices
from ...framework.tensor import wrap
from .._helpers import check_float, unary_operand
from ..array_ops import densify

__all__ = ["elementwise_doc", "output_gradient", "unary_doc", "unary_op"]

_ndarray = np.ndarray

_ELEMENTWISE_DOC = """{summary}

Parameters
----------
{params}
name : str, optional
    Ignored (TensorFlow compatibility).

Returns
-------
{returns}
{raises}
Examples
--------
>>> import sparsegrad as sg
>>> sg.{name}({args}).numpy()
{result}
"""

_SAME = "Tensor\n    Of the shape and dtype of `x`."


def elementwise_doc(name, summary, params, returns, args, result, raises=""):
    """The docstring of elementwise op `name`: `summary` (one or more
    paragraphs), the Parameters text `params` (before ``name``), the Returns
    text `returns`, a Raises section `raises` (with its blank lines), and the
    example ``sg.name(args)`` printing `result`."""
    return _ELEMENTWISE_DOC.format(name=name, summary=summary, params=params,
                                   returns=returns, raises=raises, args=args,
                                   result=result)


def unary_doc(name, summary, args, result, floating=False,
              x_type="Tensor, Variable or array_like", returns=_SAME):
    """The docstring of one-operand op `name`: `summary`, the parameter `x`
    of `x_type` (of a floating dtype if `floating`), the Returns text
    `returns` and the example ``sg.name(args)`` printing `result`."""
    params = f"x : {x_type}" + ("\n    Of a floating dtype." if floating else "")
    return elementwise_doc(name, summary, params, returns, args, result)


def unary_op(compute, op_type, op_name, doc, floating=False, slices=False):
    """The public one-operand op `op_name`: ``compute(value, be)`` of the
    converted operand's value (:func:`~sparsegrad.ops._helpers.unary_operand`;
    `be` its backend, chosen once here), recorded as `op_type`, with
    docstring `doc`.  `floating` ops reject other dtypes; a `slices` op maps
    an IndexedSlices to an IndexedSlices of its values' results.  The op
    dispatches (:func:`~sparsegrad.framework.dispatch.api`)."""

    def op(x, name=None):
        if slices and type(x) is IndexedSlices:
            return IndexedSlices._from_trusted(op(x.values), x.indices, x.dense_shape)
        x = unary_operand(x, op_name)
        if floating:
            check_float(x, op_name)
        v = x._value
        z = wrap(compute(v, CPU if type(v) is _ndarray else backend_of(v)))
        record_operation(op_type, (x,), (z,))
        return z

    op.__name__ = op.__qualname__ = op_name
    op.__doc__ = doc
    return dispatch.api(op)


def output_gradient(forward_type, grad_type, compute, second):
    """Register the gradient of op `forward_type` as op `grad_type` of its
    output ``y`` and the incoming gradient ``g``: ``compute(y, g)`` of their
    values.  `grad_type`'s own gradient (with respect to ``y``) is
    ``second(y, g, z, grad)`` for its output ``z`` and incoming `grad`; with
    respect to ``g`` it is `grad_type` again.  Returns the function that
    records `grad_type`."""

    def grad_op(y, g):
        z = wrap(compute(y._value, g._value))
        record_operation(grad_type, (y, g), (z,))
        return z

    grad_op.__name__ = grad_op.__qualname__ = f"_{grad_type}"

    @register_gradient(forward_type)
    def _forward_grad(op, grad):
        return grad_op(op.outputs[0], densify(grad))

    @register_gradient(grad_type)
    def _grad_grad(op, grad):
        y, g = op.inputs
        grad = densify(grad)
        gy = second(y, g, op.outputs[0], grad)
        return gy, grad_op(y, grad)

    return grad_op
