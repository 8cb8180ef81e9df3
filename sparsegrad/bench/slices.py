"""IndexedSlices kernels: deduplicate and scatter_add (issue 2).

The embedding gradient of :mod:`sparsegrad.bench.inputs`: 16,384 Zipf(1.1)
ids into a 1,000,000 x 64 float32 table.

* ``slices/deduplicate``: ``IndexedSlices.deduplicate()``; NumPy
  ``np.unique(return_inverse=True)`` + ``np.add.at`` into the unique rows;
  PyTorch ``sparse_coo_tensor(...).coalesce()``; TensorFlow ``tf.unique`` +
  ``tf.math.unsorted_segment_sum`` (how TensorFlow sums repeated slices).
* ``slices/scatter_add``: ``Variable.scatter_add`` into the table; NumPy
  ``np.add.at``; PyTorch ``index_put_(accumulate=True)`` (several times
  faster than ``index_add_`` here); TensorFlow ``Variable.scatter_add``.
"""

from . import inputs
from .case import Case

#: The libraries of :func:`four_way_case`, in its order.
FOUR_WAY = ("sparsegrad", "tensorflow", "torch", "numpy")


def _dedupe_bytes(quick):
    # read the rows and ids, write the unique rows
    ids, values, (_, width) = inputs.sparse_gradient(quick)
    return values.nbytes + ids.nbytes + inputs.n_distinct(ids) * width * 4


def _scatter_bytes(quick):
    # read the rows and ids, read and write each touched row of the table once
    return inputs.sparse_update_bytes(quick, 1)


def _dedupe_sparsegrad(quick):
    import sparsegrad as sg

    ids, values, shape = inputs.sparse_gradient(quick)
    slices = sg.IndexedSlices(values, ids, dense_shape=shape)
    return slices.deduplicate


def _dedupe_numpy(quick):
    import numpy as np

    ids, values, (_, width) = inputs.sparse_gradient(quick)

    def run():
        unique, inverse = np.unique(ids, return_inverse=True)
        summed = np.zeros((unique.size, width), np.float32)
        np.add.at(summed, inverse, values)
        return unique, summed

    return run


def _dedupe_torch(quick):
    import torch

    ids, values, shape = inputs.sparse_gradient(quick)
    t_ids = torch.from_numpy(ids).reshape(1, -1)
    t_values = torch.from_numpy(values)
    return lambda: torch.sparse_coo_tensor(t_ids, t_values, shape).coalesce()


def _dedupe_tensorflow(quick):
    import tensorflow as tf

    ids, values, _ = inputs.sparse_gradient(quick)
    t_ids, t_values = tf.constant(ids), tf.constant(values)

    def run():
        unique, inverse = tf.unique(t_ids)
        return unique, tf.math.unsorted_segment_sum(
            t_values, inverse, tf.shape(unique)[0])

    return run


def _scatter_sparsegrad(quick):
    import numpy as np

    import sparsegrad as sg

    ids, values, shape = inputs.sparse_gradient(quick)
    table = sg.Variable(np.zeros(shape, np.float32))
    delta = sg.IndexedSlices(values, ids, dense_shape=shape)
    return lambda: table.scatter_add(delta)


def _scatter_numpy(quick):
    import numpy as np

    ids, values, shape = inputs.sparse_gradient(quick)
    table = np.zeros(shape, np.float32)
    return lambda: np.add.at(table, ids, values)


def _scatter_torch(quick):
    import torch

    ids, values, shape = inputs.sparse_gradient(quick)
    table = torch.zeros(shape)
    t_ids, t_values = torch.from_numpy(ids), torch.from_numpy(values)
    return lambda: table.index_put_((t_ids,), t_values, accumulate=True)


def _scatter_tensorflow(quick):
    import tensorflow as tf

    ids, values, shape = inputs.sparse_gradient(quick)
    table = tf.Variable(tf.zeros(shape))
    delta = tf.IndexedSlices(tf.constant(values), tf.constant(ids))
    return lambda: table.scatter_add(delta)


def four_way_case(name, description, setups, floor_bytes):
    """A :class:`Case` timed in sparsegrad, TensorFlow, PyTorch and NumPy:
    `setups` are their setup functions, in that order."""
    return Case(name, description, dict(zip(FOUR_WAY, setups)), floor_bytes)


CASES = [
    four_way_case("slices/deduplicate", "sum the repeated rows of a 16,384 x 64 "
                  "float32 IndexedSlices (Zipf(1.1) ids of 1,000,000 rows)",
                  (_dedupe_sparsegrad, _dedupe_tensorflow, _dedupe_torch,
                   _dedupe_numpy), _dedupe_bytes),
    four_way_case("slices/scatter_add", "add a 16,384 x 64 float32 IndexedSlices "
                  "(Zipf(1.1) ids) into a 1,000,000 x 64 table in place",
                  (_scatter_sparsegrad, _scatter_tensorflow, _scatter_torch,
                   _scatter_numpy), _scatter_bytes),
]
