"""What the MPI workers of tests/distributed share."""


def attempt(errors, label, call):
    """Run ``call()``; ``errors[label]`` is then ``[class name, message]`` of
    what it raised, or None (the tests check that every rank raised)."""
    try:
        call()
    except Exception as exc:
        errors[label] = [type(exc).__name__, str(exc)]
    else:
        errors[label] = None
