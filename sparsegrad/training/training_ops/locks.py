"""The locks of ``use_locking=True``: one per underlying buffer, held weakly.

Concurrent raw-op calls on the same arrays from several Python threads (the
kernels release the GIL) take the locks of every buffer they update, each
once and in a fixed order, so that they run one after another.
"""

import threading
import weakref

import numpy as np

__all__ = ["Held"]

# id(root array) -> Lock; an entry goes when its array is collected (ndarrays
# are not hashable, so a WeakKeyDictionary cannot hold them).
_LOCKS = {}
_LOCKS_GUARD = threading.Lock()


def _root(array, on_gpu):
    """The ndarray (numpy or cupy) that owns the memory `array` views."""
    kind = type(array) if on_gpu else np.ndarray
    while isinstance(array.base, kind):
        array = array.base
    return array


def _lock_of(array, on_gpu):
    root = _root(array, on_gpu)
    if on_gpu:
        # A device buffer, by its address (cupy arrays take no weak
        # references): a lock per address, kept; a reused address reuses it.
        key = ("device", root.data.ptr)
        with _LOCKS_GUARD:
            return _LOCKS.setdefault(key, threading.Lock())
    key = id(root)
    with _LOCKS_GUARD:
        lock = _LOCKS.get(key)
        if lock is None:
            lock = _LOCKS[key] = threading.Lock()
            weakref.finalize(root, _forget_lock, key)
        return lock


def _forget_lock(key):
    with _LOCKS_GUARD:
        _LOCKS.pop(key, None)


class Held:
    """Context manager: hold the locks of `arrays` (all on the device of the
    backend `be`), each once, in a fixed order."""

    def __init__(self, arrays, be):
        locks = {id(lock): lock for lock in (_lock_of(a, be.on_gpu) for a in arrays)}
        self._locks = [locks[key] for key in sorted(locks)]

    def __enter__(self):
        for lock in self._locks:
            lock.acquire()

    def __exit__(self, *exc):
        for lock in reversed(self._locks):
            lock.release()
