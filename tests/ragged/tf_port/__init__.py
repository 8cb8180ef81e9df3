"""TensorFlow's own ragged unit tests, ported as golden fixtures.

Each ``cases_<area>.py`` lists the cases of one TensorFlow test file as
``(name, code)`` pairs: `code` is a Python expression written against
TensorFlow's API (``tf.ragged.constant(...)``, ``tf.reduce_sum(rt, axis=1)``,
``rt.to_tensor()``...), with ``np`` at hand, or several lines of statements
that assign the outcome to ``result``.  ``generate.py`` evaluates every
case once under TensorFlow 2.21 and stores what it gave (values, nested row
splits, dtypes, or the error's class) in ``data/tf_port_<area>.npz``;
``tests/ragged/test_tf_port.py`` evaluates the same expression with ``tf``
bound to :func:`replay.shim` (sparsegrad under TensorFlow's names, the
translation a new user makes) and compares everything.
"""
