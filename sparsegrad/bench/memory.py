"""Resident memory of a worker process: what a case's setup and warm-up
leave in memory, measured rather than computed from array sizes.

The worker reads :func:`resident_bytes` before it calls the case's setup and
again after the warm-up calls; the difference is the case's resident-memory
growth (its tables, slots, inputs, and whatever the library's allocator
keeps).  Linux gives the current resident set size (``VmRSS`` of
``/proc/self/status``); elsewhere ``resource.getrusage`` gives only its peak
(``ru_maxrss``), so the growth there is that of the peak, which also counts
temporaries freed before the warm-up ended.
"""

import sys

try:
    import resource
except ImportError:          # not on Windows
    resource = None

STATUS = "/proc/self/status"


def resident_bytes(status=STATUS):
    """This process's resident set size in bytes, and where it was read.

    Parameters
    ----------
    status : str, optional
        The file to read ``VmRSS`` from (the process's own status file).

    Returns
    -------
    tuple
        ``(bytes, "VmRSS")`` from `status`; where that file or its line is
        absent, ``(bytes, "ru_maxrss")``, the peak resident set size from
        ``resource.getrusage``; ``(None, None)`` where neither is available.

    Examples
    --------
    >>> n_bytes, source = resident_bytes()
    >>> n_bytes > 0 and source in ("VmRSS", "ru_maxrss")
    True
    >>> resident_bytes("/no/such/file")[1] in ("ru_maxrss", None)
    True
    """
    try:
        with open(status) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024, "VmRSS"
    except (OSError, ValueError, IndexError):
        pass
    if resource is None:
        return None, None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # kilobytes on Linux and the BSDs, bytes on macOS
    return (peak if sys.platform == "darwin" else peak * 1024), "ru_maxrss"


def growth(before, after):
    """The growth from one :func:`resident_bytes` reading to a later one.

    Parameters
    ----------
    before, after : tuple
        Two readings, ``(bytes, source)``.

    Returns
    -------
    dict
        ``{"rss_growth": bytes, "rss_source": source}``; empty when either
        reading has no figure or the two come from different sources.

    Examples
    --------
    >>> growth((1000, "VmRSS"), (5096, "VmRSS"))
    {'rss_growth': 4096, 'rss_source': 'VmRSS'}
    >>> growth((None, None), (5096, "VmRSS"))
    {}
    """
    if before[0] is None or after[0] is None or before[1] != after[1]:
        return {}
    return {"rss_growth": after[0] - before[0], "rss_source": after[1]}
