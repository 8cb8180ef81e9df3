"""The public functions of the raw training ops, made from their specs.

Each op is declared once, in its family module, as
``apply_x = define("apply_x(var, slot, lr, grad, use_locking=False)", SPEC,
doc)``: the signature in TensorFlow's order (a sparse op's keyword-only
``coalesce_duplicates=False`` is added), the spec that checks and runs it, and
the docstring's own text (summary, formula, notes and the Examples section).
:func:`define` makes a real function with that signature (Sphinx and
``inspect.signature`` see it; a call costs no more than a hand-written one),
whose body hands the arguments by name to :meth:`Spec.call`, and completes its
docstring with the Parameters, Returns and Raises sections, written once here
for every parameter name (:data:`PARAMETERS`).
"""

import inspect
import sys
import textwrap
import types

__all__ = ["PARAMETERS", "define"]

#: The description of each parameter, by name; a name with a ``_sparse`` or
#: ``_dense`` variant uses the one of the op's kind.
PARAMETERS = {
    "accum": """\
accum : ndarray or Variable
    Accumulator slot of var's shape and dtype. Updated in place.""",
    "delta": """\
delta : array_like of var's shape
    The gradient; an array must have var's dtype.""",
    "global_step": """\
global_step : int
    The training step number (an integer scalar).""",
    "m": """\
m : ndarray or Variable
    First-moment slot of var's shape and dtype. Updated in place.""",
    "multiply_linear_by_lr": """\
multiply_linear_by_lr : bool, default=False
    Keep `linear` multiplied by `lr` (TensorFlow's variant of the update).""",
    "update_slots": """\
update_slots : bool, default=True
    When False, `accum` is left as it is.""",
    "use_nesterov": """\
use_nesterov : bool, default=False
    Use Nesterov momentum.""",
    "v": """\
v : ndarray or Variable
    Second-moment slot of var's shape and dtype. Updated in place.""",
    "var_sparse": """\
var : ndarray or Variable of shape (n_rows, ...)
    float32, float64, float16 or bfloat16 (``ml_dtypes.bfloat16``; the half
    types follow TensorFlow's half kernels: every operation in float32,
    rounded back at once). Updated in place.""",
    "var_dense": """\
var : ndarray or Variable
    float32, float64, float16 or bfloat16 (``ml_dtypes.bfloat16``; the half
    types follow TensorFlow's half kernels: every operation in float32,
    rounded back at once). Updated in place.""",
    "grad_sparse": """\
grad : array_like of shape (len(indices),) + var.shape[1:]
    Gradient rows, one per index; an array must have var's dtype.""",
    "grad_dense": """\
grad : array_like of var's shape
    The gradient; an array must have var's dtype.""",
    "indices": """\
indices : array_like of shape (n,), int32 or int64
    Rows of var, each in ``[0, var.shape[0])``; repeats allowed.""",
    "use_locking": """\
use_locking : bool, default=False
    Hold a lock on var and the slots for the update, so that concurrent calls
    on the same arrays from several Python threads run one after another.""",
    "coalesce_duplicates": """\
coalesce_duplicates : bool, default=False
    Sum the rows of each repeated index first (in their original order) and
    update once per distinct index, as Keras' optimizers do; otherwise every
    occurrence gets the full update, in order, as in TensorFlow.""",
}


def _wrapped(head, text):
    """A parameter's description: `head`, then `text` wrapped under it."""
    return head + "\n" + textwrap.fill(text, 78, initial_indent="    ",
                                        subsequent_indent="    ")


# Scalar hyper-parameters, by what they are.
for _name, _text in {
    "alpha": 'Learning rate.',
    "beta": 'Decay rate of `m`.',
    "beta1": 'Decay rate of the first moment.',
    "beta1_power": '``beta1 ** t`` at step t.',
    "beta2": 'Decay rate of the second moment.',
    "beta2_power": '``beta2 ** t`` at step t.',
    "epsilon": 'Small constant for numerical stability.',
    "l1": 'L1 regularisation strength.',
    "l2": 'L2 regularisation strength.',
    "l2_shrinkage": 'L2 shrinkage regularisation strength (FTRL-V2).',
    "lr": 'Learning rate.',
    "lr_power": 'Power of the accumulator in the learning rate (<= 0).',
    "logbase": 'Base of the logarithm of the sign term.',
    "momentum": 'Momentum.',
    "rho": 'Decay rate.',
    "sign_decay": 'Decay of the sign term.',
    "u_t": "Nadam's momentum coefficient at step t, "
           "``beta1 * (1 - 0.5 * 0.96 ** t)``.",
    "u_t_1": "Nadam's momentum coefficient at step t + 1, "
             "``beta1 * (1 - 0.5 * 0.96 ** (t + 1))``.",
    "u_product": "Product of Nadam's momentum coefficients u_1 ... u_t.",
}.items():
    PARAMETERS[_name] = _wrapped(f"{_name} : float",
                                 f"{_text} A scalar, rounded to var's dtype.")

# Slots of var's shape, by what they hold.
for _name, _text in {
    "accum_update": 'running average of squared updates.',
    "gradient_accumulator": 'sum of the gradients.',
    "gradient_squared_accumulator": 'sum of the squared gradients.',
    "linear": "FTRL's linear term.",
    "mg": 'mean of the gradients.',
    "mom": 'the momentum of the update.',
    "ms": 'mean square of the gradients.',
    "vhat": 'the running maximum of `v`.',
}.items():
    PARAMETERS[_name] = _wrapped(
        f"{_name} : ndarray or Variable",
        f"Slot of var's shape and dtype: {_text} Updated in place.")


_RETURNS = """\
Returns
-------
None
    var and the slots are updated in place (a Variable's version is bumped).

Raises
------
InvalidArgumentError
    On a bad argument (shape, dtype, rank, a non-scalar hyper-parameter{}),
    checked in TensorFlow's order and with its message, before anything is
    written: var and the slots are then bit-for-bit unchanged."""
PARAMETERS["returns_dense"] = _RETURNS.format("")
PARAMETERS["returns_sparse"] = _RETURNS.format(",\n    an index out of range")

_EXAMPLES = "\nExamples\n--------\n"


def define(signature, spec, doc, params=None):
    """The public function of raw op `spec`.

    Parameters
    ----------
    signature : str
        ``"name(arguments)"``, as in a ``def``; a sparse op's
        ``*, coalesce_duplicates=False`` is appended.
    spec : Spec
        The op's checks and kernel; the function's body is
        ``spec.call({name: value, ...})``.
    doc : str
        The docstring without its Parameters, Returns and Raises sections,
        which are inserted before its Examples section.
    params : dict, optional
        Descriptions (``"name : type\\n    text"``) that replace those of
        :data:`PARAMETERS` for this op.

    Returns
    -------
    function
    """
    name, _, arguments = signature.partition("(")
    arguments = arguments.rstrip(")")
    if spec.sparse:
        arguments += ", *, coalesce_duplicates=False"
    names = [a.split("=")[0].strip() for a in arguments.split(",")]
    names = [n for n in names if n != "*"]
    # A factory closes over `spec`; the function made gets the calling
    # module's globals, so that it belongs to that module as a def there
    # would (doctest finds its examples; tracebacks name the module).
    source = (f"def factory(spec):\n"
              f"    def {name}({arguments}):\n"
              f"        spec.call({{{', '.join(f'{n!r}: {n}' for n in names)}}})\n"
              f"    return {name}\n")
    namespace = {}
    exec(compile(source, f"<raw training op {name}>", "exec"), namespace)
    made = namespace["factory"](spec)
    module_globals = sys._getframe(1).f_globals
    function = types.FunctionType(made.__code__, module_globals, name,
                                  made.__defaults__, made.__closure__)
    function.__kwdefaults__ = made.__kwdefaults__
    function.__qualname__ = name
    function.__doc__ = _docstring(doc, names, spec.sparse, params or {})
    return function


def _docstring(doc, names, sparse, params):
    kind = "_sparse" if sparse else "_dense"
    described = [params.get(n) or PARAMETERS.get(n + kind) or PARAMETERS[n]
                 for n in names]
    head, examples, tail = inspect.cleandoc(doc).partition(_EXAMPLES)
    sections = [head.rstrip(), "", "Parameters", "----------", *described, "",
                PARAMETERS["returns" + kind]]
    return "\n".join(sections) + "\n" + examples + tail
