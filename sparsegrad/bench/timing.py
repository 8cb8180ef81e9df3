"""Timing a call: the timings of repeated calls, and the block medians and
their ratio that tell a steady step from one whose cost drifts."""

import statistics
import time


def time_calls(fn, repeat, warmup=1):
    """Seconds taken by each of `repeat` calls of `fn`, after `warmup` calls.

    Parameters
    ----------
    fn : callable
        Called with no arguments.
    repeat : int
        Number of timed calls (at least 1).
    warmup : int, optional
        Calls made first, not timed.

    Returns
    -------
    list of float
        One duration per timed call, measured with :func:`time.perf_counter`.

    Raises
    ------
    ValueError
        If `repeat` is below 1 or `warmup` below 0.

    Examples
    --------
    >>> times = time_calls(lambda: sum(range(100)), repeat=3)
    >>> len(times), all(t >= 0 for t in times)
    (3, True)
    """
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat!r}")
    if warmup < 0:
        raise ValueError(f"warmup must be at least 0, got {warmup!r}")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return times


def block_medians(times, block):
    """The median of each run of `block` consecutive timings.

    Only whole blocks count: the timings after the last whole block (fewer
    than `block`) are left out, and fewer than `block` timings give no block.

    Parameters
    ----------
    times : sequence of float
        Timings in the order they were taken.
    block : int
        Timings per block (at least 1).

    Returns
    -------
    list of float
        One median per whole block, in order.

    Raises
    ------
    ValueError
        If `block` is below 1.

    Examples
    --------
    >>> block_medians([1, 5, 2, 9, 9, 8, 4], block=3)
    [2, 9]
    >>> block_medians([1.0, 2.0], block=3)
    []
    """
    if block < 1:
        raise ValueError(f"block must be at least 1, got {block!r}")
    return [statistics.median(times[i:i + block])
            for i in range(0, len(times) - block + 1, block)]


def block_ratio(blocks):
    """The slowest block median over the fastest, over every block given.

    Parameters
    ----------
    blocks : sequence of float
        Block medians (:func:`block_medians`), of one process or of several.

    Returns
    -------
    float or None
        1.0 when every block took the same time; None for fewer than two
        blocks, or when the fastest took no time.

    Examples
    --------
    >>> block_ratio([2.0, 3.0, 2.5])
    1.5
    >>> block_ratio([2.0]) is None
    True
    """
    if len(blocks) < 2 or min(blocks) <= 0:
        return None
    return max(blocks) / min(blocks)
