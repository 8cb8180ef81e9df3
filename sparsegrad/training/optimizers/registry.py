"""Serialising optimizers and schedules by class name: the one
``{"class_name": ..., "config": ...}`` format of both."""

from ...errors import InvalidArgumentError

__all__ = ["to_config", "from_config"]


def to_config(obj, base, what):
    """``{"class_name": ..., "config": obj.get_config()}``; TypeError unless
    `obj` is an instance of `base` (`what` names it in the message)."""
    if not isinstance(obj, base):
        raise TypeError(f"serialize needs {what}, got {type(obj).__name__}")
    return {"class_name": type(obj).__name__, "config": obj.get_config()}


def from_config(config, classes, extra, what, **options):
    """The object `config` describes (:func:`to_config`'s dict), built by
    ``cls.from_config(config["config"], **options)`` with `cls` looked up by
    name in `classes` and then `extra` (a user's ``custom_objects``).

    Raises InvalidArgumentError (naming `what`) when a key is missing or the
    class is unknown.
    """
    classes = {**classes, **(extra or {})}
    try:
        name, kwargs = config["class_name"], config["config"]
    except (TypeError, KeyError):
        raise InvalidArgumentError(
            f"{what} config needs 'class_name' and 'config' keys, got {config!r}"
        ) from None
    if name not in classes:
        raise InvalidArgumentError(
            f"unknown {what.split()[-1]} class_name {name!r}; known: {sorted(classes)} "
            "(pass others in custom_objects)"
        )
    return classes[name].from_config(kwargs, **options)
