"""Embedding bags over ids of ragged_rank 2, against TensorFlow's 3-D
SparseTensor ids.

TensorFlow 2.21 refuses RaggedTensor ids of ragged_rank 2 (its ragged
dispatch pairs the outer row ids with the flat ids and fails); its
SparseTensor path takes 3-D ids.  So under TensorFlow each case passes
``rt.to_sparse()`` (dense shape ``[d0, d1, d2]``, the bounding shape), and
under sparsegrad the RaggedTensor itself: ``as_ids`` below picks the form
(the shim has no ``__version__``).  The 3-D cases follow embedding_ops_test's
``_ids_and_weights_3d`` (ids with invalid entries, zero and negative
weights) with ragged rows in place of the fixed dense shape.
"""

_PRE = (
    "as_ids = ((lambda rt: rt.to_sparse()) if hasattr(tf, '__version__') "
    "else (lambda rt: rt))\n"
    "params = tf.constant(np.arange(12, dtype=np.float32).reshape(6, 2) / 7)\n"
    "ids = as_ids(tf.ragged.constant([[[1, 2], [3]], [], [[4], [], [5, 0, 1]], []],"
    " dtype=tf.int64))\n"
    "w = as_ids(tf.ragged.constant([[[1.0, 2.0], [3.0]], [], [[4.0], [],"
    " [5.0, 0.5, 1.0]], []]))\n"
)
# _ids_and_weights_3d, ragged: invalid ids (-1), a zero and a negative weight
_PRE_3D = (
    "as_ids = ((lambda rt: rt.to_sparse()) if hasattr(tf, '__version__') "
    "else (lambda rt: rt))\n"
    "params = tf.constant(np.arange(10, dtype=np.float32).reshape(5, 2) / 3)\n"
    "ids = as_ids(tf.ragged.constant([[[0, 1, -1], [-1]], [[2], [0, 1]]],"
    " dtype=tf.int64))\n"
    "w = as_ids(tf.ragged.constant([[[1.0, 2.0, 1.0], [1.0]], [[3.0], [0.0, -0.5]]]))\n"
)

CASES = []
for _c in ("sum", "mean", "sqrtn"):
    CASES += [
        (f"lookup_sparse_{_c}",
         _PRE + f"result = tf.nn.embedding_lookup_sparse(params, ids, None, "
         f"combiner='{_c}')\n"),
        (f"lookup_sparse_weighted_{_c}",
         _PRE + f"result = tf.nn.embedding_lookup_sparse(params, ids, w, "
         f"combiner='{_c}')\n"),
        (f"safe_{_c}",
         _PRE + f"result = tf.nn.safe_embedding_lookup_sparse(params, ids, "
         f"combiner='{_c}')\n"),
        (f"safe_weighted_default_id_{_c}",
         _PRE + f"result = tf.nn.safe_embedding_lookup_sparse(params, ids, w, "
         f"combiner='{_c}', default_id=3)\n"),
        (f"safe_3d_return_zero_vector_{_c}",
         _PRE_3D + f"result = tf.nn.safe_embedding_lookup_sparse(params, ids, w, "
         f"combiner='{_c}')\n"),
        (f"safe_3d_default_id_{_c}",
         _PRE_3D + f"result = tf.nn.safe_embedding_lookup_sparse(params, ids, w, "
         f"combiner='{_c}', default_id=4)\n"),
        (f"safe_3d_no_weights_{_c}",
         _PRE_3D + f"result = tf.nn.safe_embedding_lookup_sparse(params, ids, "
         f"combiner='{_c}')\n"),
    ]
CASES += [
    # the table's gradient (a multiply in front makes it dense in both)
    ("lookup_sparse_table_gradient",
     _PRE + "with tf.GradientTape() as t:\n"
     "    t.watch(params)\n"
     "    y = tf.nn.embedding_lookup_sparse(params * 1.0, ids, w, combiner='mean')\n"
     "    z = tf.reduce_sum(y * y)\n"
     "result = t.gradient(z, params)\n"),
    ("safe_table_gradient",
     _PRE_3D + "with tf.GradientTape() as t:\n"
     "    t.watch(params)\n"
     "    y = tf.nn.safe_embedding_lookup_sparse(params * 1.0, ids, w,"
     " combiner='sqrtn', default_id=4)\n"
     "    z = tf.reduce_sum(y * y)\n"
     "result = t.gradient(z, params)\n"),
    ("lookup_sparse_id_out_of_range",
     _PRE + "result = tf.nn.embedding_lookup_sparse(params, as_ids("
     "tf.ragged.constant([[[0, 9]]], dtype=tf.int64)), None)\n"),
]
