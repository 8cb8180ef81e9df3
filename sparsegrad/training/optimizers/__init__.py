"""Keras-style optimizers built on the raw training ops.

Each optimizer takes dense gradients and ``IndexedSlices`` in
``apply_gradients``; sparse gradients are summed per row inside the update
kernel and applied once per distinct row.  See :class:`Optimizer`.
"""

from ...errors import InvalidArgumentError
from . import schedules
from .adadelta import Adadelta, AdadeltaState
from .adagrad import Adagrad, AdagradState, RowwiseAdagrad, RowwiseAdagradState
from .adam import Adam, Adamax, AdamaxState, AdamState, AdamW
from .base import Optimizer
from .ftrl import Ftrl, FtrlState
from .lamb import Lamb, LambState
from .lion import Lion, LionState
from .loss_scale import LossScaleOptimizer
from .nadam import Nadam, NadamState
from .proximal import (
    ProximalAdagrad,
    ProximalAdagradState,
    ProximalGradientDescent,
    ProximalGradientDescentState,
)
from .registry import from_config, to_config
from .rmsprop import RMSprop, RMSpropState
from .sgd import SGD, SGDState

__all__ = [
    "Optimizer",
    "SGD",
    "Adagrad",
    "RowwiseAdagrad",
    "Adadelta",
    "Adam",
    "AdamW",
    "Adamax",
    "Ftrl",
    "RMSprop",
    "ProximalGradientDescent",
    "ProximalAdagrad",
    "SGDState",
    "AdagradState",
    "RowwiseAdagradState",
    "AdadeltaState",
    "AdamState",
    "AdamaxState",
    "FtrlState",
    "RMSpropState",
    "ProximalGradientDescentState",
    "ProximalAdagradState",
    "Lamb",
    "LambState",
    "Lion",
    "LionState",
    "Nadam",
    "NadamState",
    "LossScaleOptimizer",
    "schedules",
    "serialize",
    "deserialize",
    "get",
]

_CLASSES = {
    cls.__name__: cls
    for cls in (SGD, Adagrad, RowwiseAdagrad, Adadelta, Adam, AdamW, Adamax, Ftrl,
                RMSprop, ProximalGradientDescent, ProximalAdagrad, Lion,
                Nadam, Lamb, LossScaleOptimizer)
}
# from_config of a LossScaleOptimizer rebuilds its inner optimizer by name.
LossScaleOptimizer._known_classes.update(_CLASSES)


def serialize(optimizer):
    """``{"class_name": ..., "config": ...}`` of an optimizer (no state).

    Parameters
    ----------
    optimizer : Optimizer
        A sparsegrad optimizer.

    Returns
    -------
    dict
        JSON-compatible: the class name and :meth:`Optimizer.get_config`.

    Raises
    ------
    TypeError
        If `optimizer` is not a sparsegrad optimizer.

    Examples
    --------
    >>> cfg = sg.optimizers.serialize(sg.optimizers.SGD(learning_rate=0.1))
    >>> cfg["class_name"], cfg["config"]["learning_rate"]
    ('SGD', 0.1)
    >>> sg.optimizers.deserialize(cfg).get_config() == cfg["config"]
    True
    """
    return to_config(optimizer, Optimizer, "a sparsegrad optimizer")


def deserialize(config, custom_objects=None):
    """Rebuild an optimizer from :func:`serialize`'s dict.

    Parameters
    ----------
    config : dict
        ``{"class_name": ..., "config": ...}``, as :func:`serialize` gives.
    custom_objects : dict, optional
        Further class names mapped to optimizer or schedule classes.

    Returns
    -------
    Optimizer
        A new optimizer with that configuration (and no state).

    Raises
    ------
    InvalidArgumentError
        If `config` lacks its keys or names an unknown class.

    Examples
    --------
    >>> opt = sg.optimizers.deserialize(
    ...     {"class_name": "Adagrad", "config": {"learning_rate": 0.5}})
    >>> type(opt).__name__, opt.learning_rate
    ('Adagrad', 0.5)
    """

    return from_config(config, _CLASSES, custom_objects, "an optimizer",
                       custom_objects=custom_objects)


def get(identifier):
    """An optimizer from an instance, a class name (defaults) or a config dict.

    Parameters
    ----------
    identifier : Optimizer, str or dict
        An optimizer (returned as it is), a class name in any case (built
        with its defaults), or a :func:`serialize` dict.

    Returns
    -------
    Optimizer

    Raises
    ------
    InvalidArgumentError
        If `identifier` names no optimizer.

    Examples
    --------
    >>> sg.optimizers.get("adam").get_config()["learning_rate"]
    0.001
    """

    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        by_lower = {k.lower(): v for k, v in _CLASSES.items()}
        cls = _CLASSES.get(identifier) or by_lower.get(identifier.lower())
        if cls is None:
            raise InvalidArgumentError(
                f"unknown optimizer {identifier!r}; known: {sorted(_CLASSES)}"
            )
        return cls()
    raise InvalidArgumentError(
        f"cannot interpret {identifier!r} as an optimizer (an instance, a name or "
        "a config dict)"
    )
