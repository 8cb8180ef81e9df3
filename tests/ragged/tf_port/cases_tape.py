"""RaggedTensors through GradientTape and custom_gradient.

TensorFlow's backprop_test.py checks that ``tape.watch`` expands a composite
value and watches its component Tensors (``testWatchComposite``, there with
a SparseTensor), and custom_gradient.py passes composite arguments, outputs
and gradients through their components; gradients_test.py's
``CustomGradientTest`` has no RaggedTensor case.  These cases run the same
programs with RaggedTensors, using only ops that take RaggedTensors today
(``rt * scalar``, ``tf.reduce_sum``, ``with_flat_values``, ``tf.gather`` of
the flat values).  Each assigns one value to ``result``.
"""

_RT = "rt = tf.ragged.constant([[1.0, 2.0], [], [3.0]])\n"
_R2 = "r2 = tf.ragged.constant([[[1.0, 2.0], []], [[3.0]]])\n"

CASES = [
    # backprop_test.testWatchComposite with a RaggedTensor: watching the
    # composite watches its flat values
    ("watch_composite_grad_of_values",
     "values = tf.constant([1.0, 2.0, 3.0], tf.float32)\n"
     "rt = tf.RaggedTensor.from_row_splits(values, [0, 2, 2, 3])\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = tf.reduce_sum(rt)\n"
     "result = t.gradient(z, values)\n"),
    ("ragged_source_of_a_sum",
     _RT + "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = tf.reduce_sum(rt * rt)\n"
     "result = t.gradient(z, rt)\n"),
    ("ragged_target",
     _RT + "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = rt * 3.0\n"
     "result = t.gradient(z, rt)\n"),
    ("ragged_target_ragged_output_gradients",
     _RT + "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = rt * 3.0\n"
     "result = t.gradient(z, rt, output_gradients="
     "tf.ragged.constant([[1.0, 2.0], [], [5.0]]))\n"),
    ("ragged_target_dense_output_gradients",
     _RT + "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = rt * 3.0\n"
     "seed = tf.constant([1.0, 0.0, 2.0], tf.float32)\n"
     "result = t.gradient(z, rt, output_gradients=[seed])\n"),
    ("ragged_target_dense_source",
     "x = tf.constant([1.0, 2.0, 3.0], tf.float32)\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(x)\n"
     "    z = tf.ragged.constant([[0.0], [0.0, 0.0]]).with_flat_values(x * x)\n"
     "result = t.gradient(z, x)\n"),
    ("row_sums_target",
     _RT + "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = tf.reduce_sum(rt, axis=1)\n"
     "seed = tf.constant([1.0, 2.0, 3.0], tf.float32)\n"
     "result = t.gradient(z, rt, output_gradients=[seed])\n"),
    ("list_of_sources_second_is_ragged",
     _RT + "x = tf.constant(2.0, tf.float32)\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch([x, rt])\n"
     "    z = tf.reduce_sum(rt) * x\n"
     "result = t.gradient(z, [x, rt])[1]\n"),
    ("list_of_sources_first_is_dense",
     _RT + "x = tf.constant(2.0, tf.float32)\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch([x, rt])\n"
     "    z = tf.reduce_sum(rt) * x\n"
     "result = t.gradient(z, [x, rt])[0]\n"),
    ("unconnected_ragged_source_is_none",
     _RT + "x = tf.constant(2.0, tf.float32)\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch([x, rt])\n"
     "    z = x * 2.0\n"
     "result = t.gradient(z, rt) is None\n"),
    ("ragged_rank_2_source",
     _R2 + "with tf.GradientTape() as t:\n"
     "    t.watch(r2)\n"
     "    z = tf.reduce_sum(r2 * r2)\n"
     "result = t.gradient(z, r2)\n"),
    ("uniform_inner_dimension_source",
     "r = tf.RaggedTensor.from_row_splits("
     "tf.constant([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], tf.float32), [0, 2, 3])\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(r)\n"
     "    z = tf.reduce_sum(r * r)\n"
     "result = t.gradient(z, r)\n"),
    ("gather_of_flat_values",
     _RT + "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = tf.gather(rt.flat_values, [0, 0])\n"
     "result = t.gradient(z, rt)\n"),
    ("persistent_tape_two_gradients",
     _RT + "with tf.GradientTape(persistent=True) as t:\n"
     "    t.watch(rt)\n"
     "    y = rt * 2.0\n"
     "    z = tf.reduce_sum(y * y)\n"
     "first = t.gradient(y, rt)\n"
     "result = t.gradient(z, rt)\n"),
    ("gradient_with_respect_to_intermediate_ragged",
     _RT + "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    y = rt * 2.0\n"
     "    z = tf.reduce_sum(y * y)\n"
     "result = t.gradient(z, y)\n"),
    ("jacobian_of_ragged_source_fails",
     _RT + "with tf.GradientTape(persistent=True) as t:\n"
     "    t.watch(rt)\n"
     "    z = tf.reduce_sum(rt * rt, axis=1)\n"
     "result = t.jacobian(z, rt)\n"),
    # custom_gradient with composite arguments and outputs
    ("custom_gradient_ragged_in_out",
     _RT + "@tf.custom_gradient\n"
     "def f(x):\n"
     "    def grad(dy):\n"
     "        return dy * 10.0\n"
     "    return x * 2.0, grad\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = tf.reduce_sum(f(rt))\n"
     "result = t.gradient(z, rt)\n"),
    ("custom_gradient_output_is_ragged",
     _RT + "@tf.custom_gradient\n"
     "def f(x):\n"
     "    return x * 2.0, lambda dy: dy\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    result = f(rt)\n"),
    ("custom_gradient_upstream_is_ragged",
     _RT + "seen = []\n"
     "@tf.custom_gradient\n"
     "def f(x):\n"
     "    def grad(dy):\n"
     "        seen.append(dy)\n"
     "        return dy\n"
     "    return x * 2.0, grad\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = f(rt)\n"
     "t.gradient(z, rt, output_gradients=tf.ragged.constant([[1.0, 2.0], [], [5.0]]))\n"
     "result = seen[0]\n"),
    ("custom_gradient_returns_flat_values_for_ragged_arg",
     _RT + "k = tf.constant(2.0, tf.float32)\n"
     "@tf.custom_gradient\n"
     "def f(x, y):\n"
     "    def grad(dy):\n"
     "        return dy.flat_values * 10.0, tf.reduce_sum(dy)\n"
     "    return x * y, grad\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch([rt, k])\n"
     "    z = f(rt, k)\n"
     "result = t.gradient(z, [rt, k])[0]\n"),
    ("custom_gradient_dense_arg_grad_from_ragged_upstream",
     _RT + "k = tf.constant(2.0, tf.float32)\n"
     "@tf.custom_gradient\n"
     "def f(x, y):\n"
     "    def grad(dy):\n"
     "        return dy.flat_values * 10.0, tf.reduce_sum(dy)\n"
     "    return x * y, grad\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch([rt, k])\n"
     "    z = f(rt, k)\n"
     "result = t.gradient(z, [rt, k])[1]\n"),
    ("custom_gradient_ragged_grad_for_dense_output",
     _RT + "@tf.custom_gradient\n"
     "def f(x):\n"
     "    def grad(dy):\n"
     "        return tf.ragged.constant([[1.0, 2.0], [], [3.0]]) * dy\n"
     "    return tf.reduce_sum(x), grad\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = f(rt) * 2.0\n"
     "result = t.gradient(z, rt)\n"),
    ("custom_gradient_too_many_gradients",
     _RT + "@tf.custom_gradient\n"
     "def f(x):\n"
     "    return x * 2.0, lambda dy: (dy, dy)\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = f(rt)\n"
     "result = t.gradient(z, rt)\n"),
    ("custom_gradient_none_for_ragged_arg",
     _RT + "@tf.custom_gradient\n"
     "def f(x):\n"
     "    return x * 2.0, lambda dy: None\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(rt)\n"
     "    z = f(rt)\n"
     "result = t.gradient(z, rt) is None\n"),
    ("custom_gradient_ragged_rank_2",
     _R2 + "@tf.custom_gradient\n"
     "def f(x):\n"
     "    def grad(dy):\n"
     "        return dy * 3.0\n"
     "    return x * x, grad\n"
     "with tf.GradientTape() as t:\n"
     "    t.watch(r2)\n"
     "    z = tf.reduce_sum(f(r2))\n"
     "result = t.gradient(z, r2)\n"),
]
