"""The sizes of the benchmark inputs, full and with ``--quick``, in one place.

Each entry is a :class:`Size`: the full value, the ``--quick`` value and the
words that describe it.  The area modules read their sizes from here, and
``sparsegrad bench --help`` and the header of its table print
:func:`describe`, so the sizes stated are the sizes run.  This module imports
nothing heavy: the command line reads it to build its help.
"""

from typing import NamedTuple


class Size(NamedTuple):
    """One size of the suite: its full and its quick value, and its meaning.

    Parameters
    ----------
    full, quick : int or tuple of int
        The value of a normal run and of a ``--quick`` run.
    what : str
        A format string naming the value's parts, filled with the value's
        items (``{0}``, ``{1}``, ...) written with thousands separators.
    """

    full: object
    quick: object
    what: str

    def pick(self, quick):
        """The value for a quick run (`quick` true) or a full one.

        Examples
        --------
        >>> DENSE_UPDATE.pick(True), DENSE_UPDATE.pick(False)
        (10000, 10000000)
        """
        return self.quick if quick else self.full

    def text(self, quick):
        """The value for `quick`, in words.

        Examples
        --------
        >>> EMBEDDING.text(True)
        'embedding table 10,000 x 16 float32, 512 Zipf ids'
        """
        value = self.pick(quick)
        items = value if isinstance(value, tuple) else (value,)
        return self.what.format(*(f"{x:,}" for x in items))


#: The embedding setting of :mod:`sparsegrad.bench.inputs`: (rows, width, ids).
EMBEDDING = Size((1_000_000, 64, 16_384), (10_000, 16, 512),
                 "embedding table {0} x {1} float32, {2} Zipf ids")
#: Parameters of the dense Adam update (``training_ops/apply_adam``).
DENSE_UPDATE = Size(10_000_000, 10_000, "dense Adam {0} float32")
#: Side of each of the ten square dense gradients of ``clip/``.
CLIP_SIDE = Size(1024, 64, "clip 10 dense {0} x {0} float32")
#: Values and segments of the segment sums: (values, segments).
SEGMENT = Size((10_000_000, 200_000), (10_000, 200),
               "segment sums {0} values into {1} segments")
#: Rows of ``segment/ragged_range_*`` (lengths 0..99).
RAGGED_ROWS = Size(200_000, 2_000, "ragged.range {0} rows")
#: Flat values of ``segment/ragged_reduce_sum_rank2`` (float32).
RAGGED_VALUES = Size(10_000_000, 20_000, "ragged reduce {0} float32 values")
#: Flat values and segments of ``segment/ragged_segment_sum`` (float32).
RAGGED_SEGMENT = Size((10_000_000, 100_000), (20_000, 200),
                      "ragged segment_sum {0} float32 values into {1} segments")
#: Bags of the embedding bag (20 ids each, on the embedding table).
BAGS = Size(16_384, 128, "embedding bag {0} bags")
#: The end-to-end CTR step: (batch, table rows).
END_TO_END = Size((4_096, 1_000_000), (256, 10_000),
                  "CTR step batch {0}, table {1} rows")
#: MiB of each in-place update that measures the bandwidth.
BANDWIDTH_MIB = Size(256, 16, "bandwidth update {0} MiB")
#: Side of the square float32 matrix product that measures the GEMM rate.
GEMM_N = Size(1_024, 128, "GEMM rate {0} x {0} float32")

#: The most timed steps per process of a steady-state case (one with
#: ``Case.steps``) in a ``--quick`` run: two blocks of ten.
QUICK_STEPS = 20

#: Every size, in the order :func:`describe` names them.
ALL = (EMBEDDING, DENSE_UPDATE, CLIP_SIDE, SEGMENT, RAGGED_ROWS, RAGGED_VALUES, BAGS,
       END_TO_END, BANDWIDTH_MIB, GEMM_N)


def describe(quick):
    """Every size of a quick (`quick` true) or a full run, in one line.

    Parameters
    ----------
    quick : bool
        Describe the ``--quick`` sizes rather than the full ones.

    Returns
    -------
    str
        The sizes, separated by semicolons.

    Examples
    --------
    >>> describe(True).split("; ")[1]
    'dense Adam 10,000 float32'
    """
    return "; ".join(size.text(quick) for size in ALL)
