"""Tests of sparsegrad.nn activations and losses.

Golden values and gradients come from TensorFlow 2.21 (``data/nn_golden.npz``,
written by ``generate_nn_fixtures.py``); the rest are NumPy references,
hand-computed values, finite differences and the argument errors.
"""

import os

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.errors import InvalidArgumentError
from sparsegrad.testing import check_gradients

# Op types whose gradients this module checks (the registry sweep reads it).
CHECKED_OPS = (
    "Relu",
    "ReluGrad",
    "Softplus",
    "Softmax",
    "LogSoftmax",
    "L2Loss",
    "SigmoidCrossEntropyWithLogits",
    "SoftmaxCrossEntropyWithLogits",
    "SparseSoftmaxCrossEntropyWithLogits",
)

GOLDEN = np.load(os.path.join(os.path.dirname(__file__), "data", "nn_golden.npz"))
TOL = {
    "float32": {"rtol": 2e-5, "atol": 2e-6},
    "float64": {"rtol": 1e-11, "atol": 1e-12},
}


def _golden(name):
    out = {}
    for key in GOLDEN.files:
        case, field = key.split("/")
        if case == name:
            out[field] = GOLDEN[key]
    return out


def _value_and_grads(fn, inputs, w):
    """fn(*inputs) and the gradient of sum(fn * w) w.r.t. each input."""
    variables = [sg.Variable(x) for x in inputs]
    with sg.GradientTape() as tape:
        out = fn(*variables)
    grads = tape.gradient(out, variables, output_gradients=sg.constant(w))
    return out.numpy(), [np.asarray(g) for g in grads]


UNARY = {
    "relu": sg.nn.relu,
    "softplus": sg.nn.softplus,
    "softmax": sg.nn.softmax,
    "softmax_axis0": lambda t: sg.nn.softmax(t, axis=0),
    "log_softmax": sg.nn.log_softmax,
    "log_softmax_axis0": lambda t: sg.nn.log_softmax(t, axis=0),
    "l2_loss": sg.nn.l2_loss,
}
BINARY = {
    "sigmoid_ce": lambda z, x: sg.nn.sigmoid_cross_entropy_with_logits(
        labels=z, logits=x
    ),
    "softmax_ce": lambda z, x: sg.nn.softmax_cross_entropy_with_logits(
        labels=z, logits=x
    ),
    "softmax_ce_axis0": lambda z, x: sg.nn.softmax_cross_entropy_with_logits(
        labels=z, logits=x, axis=0
    ),
    "softmax_ce_rank3": lambda z, x: sg.nn.softmax_cross_entropy_with_logits(
        labels=z, logits=x
    ),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", sorted(UNARY) + sorted(BINARY))
def test_matches_tensorflow(name, dtype):
    case = _golden(f"{name}_{dtype}")
    fn = UNARY.get(name) or BINARY[name]
    inputs = [case["x0"]] + ([case["x1"]] if "x1" in case else [])
    out, grads = _value_and_grads(fn, inputs, case["w"])
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_allclose(out, case["out"], **TOL[dtype])
    for k, g in enumerate(grads):
        assert g.dtype == np.dtype(dtype)
        np.testing.assert_allclose(g, case[f"g{k}"], **TOL[dtype])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_sparse_softmax_ce_matches_tensorflow(dtype):
    case = _golden(f"sparse_softmax_ce_{dtype}")
    logits = sg.Variable(case["x0"])
    with sg.GradientTape() as tape:
        loss = sg.nn.sparse_softmax_cross_entropy_with_logits(
            labels=case["labels"], logits=logits
        )
    g = tape.gradient(loss, logits, output_gradients=sg.constant(case["w"]))
    np.testing.assert_allclose(loss.numpy(), case["out"], **TOL[dtype])
    np.testing.assert_allclose(np.asarray(g), case["g0"], **TOL[dtype])


# -- NumPy references on random inputs ---------------------------------------------


def _np_softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize(
    "shape,axis",
    [((7,), 0), ((3, 5), 1), ((3, 5), -2), ((2, 3, 4), 1), ((2, 3, 4), -1)],
)
def test_softmax_and_log_softmax_reference(rng, shape, axis):
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(
        sg.nn.softmax(x, axis=axis).numpy(), _np_softmax(x, axis), rtol=1e-13
    )
    np.testing.assert_allclose(
        sg.nn.log_softmax(x, axis=axis).numpy(),
        np.log(_np_softmax(x, axis)),
        rtol=1e-12,
    )


def test_activations_reference(rng):
    x = rng.standard_normal((4, 6))
    np.testing.assert_array_equal(sg.nn.relu(x).numpy(), np.where(x > 0, x, 0.0))
    np.testing.assert_allclose(
        sg.nn.softplus(x).numpy(), np.log(1.0 + np.exp(x)), rtol=1e-13
    )
    assert sg.nn.l2_loss(x).numpy() == pytest.approx(0.5 * np.sum(x * x), rel=1e-14)
    ints = np.array([-3, 0, 4], dtype=np.int32)
    out = sg.nn.relu(ints)
    assert out.dtype == np.int32
    np.testing.assert_array_equal(out.numpy(), [0, 0, 4])


def test_losses_reference(rng):
    logits = rng.standard_normal((5, 4))
    z = rng.uniform(size=(5, 4))
    sig = 1.0 / (1.0 + np.exp(-logits))
    np.testing.assert_allclose(
        sg.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=logits).numpy(),
        -(z * np.log(sig) + (1 - z) * np.log(1 - sig)),
        rtol=1e-12,
    )
    p = z / z.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(
        sg.nn.softmax_cross_entropy_with_logits(labels=p, logits=logits).numpy(),
        -(p * np.log(_np_softmax(logits, 1))).sum(axis=1),
        rtol=1e-12,
    )
    labels = np.array([3, 0, 1, 1, 2])
    np.testing.assert_allclose(
        sg.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits
        ).numpy(),
        -np.log(_np_softmax(logits, 1)[np.arange(5), labels]),
        rtol=1e-12,
    )


# -- hand-computed values: large logits stay finite ---------------------------------


def test_large_logits_stay_finite():
    for dtype in (np.float32, np.float64):
        x = np.array([[1e4, -1e4, 0.0]], dtype=dtype)
        p = sg.nn.softmax(x).numpy()
        np.testing.assert_array_equal(p, np.array([[1.0, 0.0, 0.0]], dtype))
        lp = sg.nn.log_softmax(x).numpy()
        np.testing.assert_allclose(lp, [[0.0, -2e4, -1e4]])
        np.testing.assert_allclose(
            sg.nn.softplus(x).numpy(), [[1e4, 0.0, np.log(2)]], rtol=1e-6
        )
        ce = sg.nn.softmax_cross_entropy_with_logits(
            labels=np.array([[0.0, 1.0, 0.0]], dtype), logits=x
        ).numpy()
        np.testing.assert_allclose(ce, [2e4])
        sce = sg.nn.sparse_softmax_cross_entropy_with_logits(labels=[2], logits=x)
        np.testing.assert_allclose(sce.numpy(), [1e4])
        sig = sg.nn.sigmoid_cross_entropy_with_logits(
            labels=np.array([[1.0, 1.0, 0.5]], dtype), logits=x
        ).numpy()
        np.testing.assert_allclose(sig, [[0.0, 1e4, np.log(2)]], rtol=1e-6)
        logits = sg.Variable(x)
        with sg.GradientTape() as tape:
            loss = sg.nn.sparse_softmax_cross_entropy_with_logits(
                labels=[1], logits=logits
            )
        g = np.asarray(tape.gradient(loss, logits))
        np.testing.assert_array_equal(g, np.array([[1.0, -1.0, 0.0]], dtype))


def test_hand_computed_values():
    # softmax([0, ln 3]) = [1/4, 3/4]; CE with labels [1, 0] = ln 4.
    x = np.array([0.0, np.log(3.0)])
    np.testing.assert_allclose(sg.nn.softmax(x).numpy(), [0.25, 0.75])
    np.testing.assert_allclose(
        sg.nn.softmax_cross_entropy_with_logits(labels=[1.0, 0.0], logits=x).numpy(),
        np.log(4.0),
    )
    np.testing.assert_allclose(
        sg.nn.sparse_softmax_cross_entropy_with_logits(labels=1, logits=x).numpy(),
        np.log(4.0 / 3.0),
    )
    assert sg.nn.l2_loss(np.array([3.0, 4.0], np.float32)).numpy() == np.float32(12.5)
    # relu gradient is 0 at 0 (TensorFlow's convention)
    v = sg.Variable([-1.0, 0.0, 2.0])
    with sg.GradientTape() as tape:
        y = sg.nn.relu(v)
    np.testing.assert_array_equal(np.asarray(tape.gradient(y, v)), [0.0, 0.0, 1.0])


def test_softmax_ce_broadcast_labels():
    logits = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    labels = sg.Variable([[0.0, 1.0, 0.0]])
    x = sg.Variable(logits)
    with sg.GradientTape() as tape:
        loss = sg.nn.softmax_cross_entropy_with_logits(labels=labels, logits=x)
    # TensorFlow 2.21: [1.4076059, 1.0986123]
    np.testing.assert_allclose(loss.numpy(), [1.4076059, 1.0986123], rtol=1e-6)
    gz, gx = tape.gradient(loss, [labels, x])
    assert np.asarray(gz).shape == (1, 3)
    ls = np.log(_np_softmax(logits, 1))
    np.testing.assert_allclose(np.asarray(gz), -ls.sum(axis=0, keepdims=True))
    np.testing.assert_allclose(
        np.asarray(gx), _np_softmax(logits, 1) - [[0.0, 1.0, 0.0]]
    )


def test_sparse_softmax_ce_scalar_labels_and_batch_dims(rng):
    logits = rng.standard_normal((2, 3, 4))
    labels = np.array([[0, 3, 1], [2, 2, 0]], dtype=np.int32)
    out = sg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    assert out.shape == (2, 3)
    ref = -np.log(np.take_along_axis(_np_softmax(logits, -1), labels[..., None], -1))
    np.testing.assert_allclose(out.numpy(), ref[..., 0], rtol=1e-12)
    empty = sg.nn.sparse_softmax_cross_entropy_with_logits(
        labels=np.zeros(0, np.int64), logits=np.zeros((0, 3))
    )
    assert empty.shape == (0,)


# -- finite differences --------------------------------------------------------------


@pytest.mark.parametrize(
    "fn,shape",
    [
        (sg.nn.relu, (3, 4)),
        (sg.nn.softplus, (3, 4)),
        (sg.nn.softmax, (3, 4)),
        (lambda x: sg.nn.softmax(x, axis=0), (3, 4)),
        (lambda x: sg.nn.softmax(x, axis=1), (2, 3, 4)),
        (sg.nn.log_softmax, (3, 4)),
        (lambda x: sg.nn.log_softmax(x, axis=-3), (2, 3, 4)),
        (sg.nn.l2_loss, (3, 4)),
    ],
)
def test_unary_finite_differences(rng, fn, shape):
    x = rng.standard_normal(shape)
    x[np.abs(x) < 0.05] += 0.2  # keep relu away from its kink
    check_gradients(fn, [x], order=2)


def test_losses_finite_differences(rng):
    logits = rng.standard_normal((4, 5))
    z = rng.uniform(size=(4, 5))
    check_gradients(
        lambda a, b: sg.nn.sigmoid_cross_entropy_with_logits(labels=a, logits=b),
        [z, logits],
        order=2,
    )
    # The logits gradient assumes each label row sums to 1 (TensorFlow's formula).
    p1 = z / z.sum(axis=1, keepdims=True)
    p0 = z / z.sum(axis=0, keepdims=True)
    check_gradients(
        lambda a, b: sg.nn.softmax_cross_entropy_with_logits(labels=a, logits=b),
        [p1, logits],
        order=2,
    )
    check_gradients(
        lambda a, b: sg.nn.softmax_cross_entropy_with_logits(
            labels=a, logits=b, axis=0
        ),
        [p0, logits],
        order=2,
    )
    check_gradients(
        lambda a, b: sg.nn.softmax_cross_entropy_with_logits(labels=a, logits=b),
        [p1[:1], logits],
        order=2,  # broadcast labels
    )
    labels = np.array([4, 0, 2, 2])
    check_gradients(
        lambda b: sg.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=b
        ),
        [logits],
        order=2,
    )


def test_softmax_ce_unnormalized_labels_follow_tensorflow():
    # TensorFlow's gradient is softmax(logits) - labels even when the labels do
    # not sum to 1 (the loss is then sum(labels) * logsumexp - labels . logits).
    x = sg.Variable([[1.0, 2.0, 0.5]])
    z = np.array([[1.0, 1.0, 0.0]])
    with sg.GradientTape() as tape:
        loss = sg.nn.softmax_cross_entropy_with_logits(labels=z, logits=x)
    np.testing.assert_allclose(
        np.asarray(tape.gradient(loss, x)), _np_softmax(x.numpy(), 1) - z
    )


def test_softmax_ce_hessian():
    # d2/dx2 of CE(labels, x) is diag(p) - p p^T, independent of the labels.
    x = sg.Variable([0.5, -1.0, 2.0])
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            loss = sg.nn.sparse_softmax_cross_entropy_with_logits(labels=0, logits=x)
        g = inner.gradient(loss, x)
    h = outer.jacobian(g, x)
    p = _np_softmax(np.array([0.5, -1.0, 2.0]), 0)
    np.testing.assert_allclose(np.asarray(h), np.diag(p) - np.outer(p, p), rtol=1e-12)


def test_relu_gradient_is_linear_in_upstream():
    # d/du of <c, relu'(x) * u> is c * (x > 0): exercises ReluGrad's gradient.
    x = sg.Variable([-1.0, 0.5, 2.0, 0.0])
    u = sg.Variable([1.0, 2.0, 3.0, 4.0])
    c = np.array([5.0, 6.0, 7.0, 8.0])
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.nn.relu(x)
        g = inner.gradient(y, x, output_gradients=u)
        z = sg.reduce_sum(g * c)
    du, dx = outer.gradient(z, [u, x])
    np.testing.assert_array_equal(np.asarray(g), [0.0, 2.0, 3.0, 0.0])
    np.testing.assert_array_equal(np.asarray(du), [0.0, 6.0, 7.0, 0.0])
    np.testing.assert_array_equal(np.asarray(dx), np.zeros(4))  # TensorFlow: zeros


def test_softplus_second_derivative():
    x = sg.Variable([-2.0, 0.0, 3.0])
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            y = sg.nn.softplus(x)
        g = inner.gradient(y, x)
    h = outer.gradient(g, x)
    s = 1.0 / (1.0 + np.exp(-np.array([-2.0, 0.0, 3.0])))
    np.testing.assert_allclose(np.asarray(g), s)
    np.testing.assert_allclose(np.asarray(h), s * (1 - s))


# -- errors ------------------------------------------------------------------------


def test_sparse_softmax_ce_label_out_of_range():
    logits = np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]])
    with pytest.raises(
        InvalidArgumentError,
        match=r"label value of 5 which is outside the valid range "
        r"of \[0, 3\)\. Label values: 0 5",
    ):
        sg.nn.sparse_softmax_cross_entropy_with_logits(labels=[0, 5], logits=logits)
    with pytest.raises(InvalidArgumentError, match="label value of -1"):
        sg.nn.sparse_softmax_cross_entropy_with_logits(labels=[-1, 1], logits=logits)


@pytest.mark.parametrize(
    "labels,match",
    [
        ([0, 1, 2], r"labels.shape must equal logits.shape without its last"),
        ([[0, 1]], r"rank of labels must be the rank of logits minus 1"),
        ([0.0, 1.0], r"labels must be int32 or int64"),
    ],
)
def test_sparse_softmax_ce_bad_labels(labels, match):
    logits = np.ones((2, 3))
    with pytest.raises(InvalidArgumentError, match=match):
        sg.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


def test_loss_argument_errors():
    with pytest.raises(InvalidArgumentError, match=r"same shape.*\(3,\).*\(2,\)"):
        sg.nn.sigmoid_cross_entropy_with_logits(
            labels=[1.0, 0.0], logits=[1.0, 2.0, 3.0]
        )
    with pytest.raises(InvalidArgumentError, match="same dtype"):
        sg.nn.sigmoid_cross_entropy_with_logits(
            labels=np.zeros(2, np.float32), logits=np.zeros(2, np.float64)
        )
    with pytest.raises(
        InvalidArgumentError,
        match=r"\(1, 2\) must have the shape of logits \(2, 3\) or broadcast",
    ):
        sg.nn.softmax_cross_entropy_with_logits(
            labels=np.ones((1, 2)), logits=np.ones((2, 3))
        )
    with pytest.raises(InvalidArgumentError, match="at least 1 dimension"):
        sg.nn.softmax_cross_entropy_with_logits(labels=1.0, logits=1.0)
    with pytest.raises(TypeError, match="labels= and logits="):
        sg.nn.softmax_cross_entropy_with_logits(logits=[1.0])


def test_activation_argument_errors():
    with pytest.raises(
        InvalidArgumentError, match=r"axis must be in the range \[-2, 2\)"
    ):
        sg.nn.softmax(np.ones((2, 3)), axis=2)
    with pytest.raises(InvalidArgumentError, match="at least 1 dimension"):
        sg.nn.log_softmax(3.0)
    with pytest.raises(InvalidArgumentError, match="softplus: features must be float"):
        sg.nn.softplus(np.array([1, -2]))
    with pytest.raises(InvalidArgumentError, match="l2_loss: t must be float"):
        sg.nn.l2_loss([1, 2])
    with pytest.raises(InvalidArgumentError, match="relu: features"):
        sg.nn.relu(np.array([True]))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_relu_gradient_bits_are_np_where(dtype):
    # The upstream gradient where the output is positive, bit for bit (NaN,
    # -0.0 and negative values included), +0.0 elsewhere; a strided upstream
    # gradient and a scalar too.
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 33)).astype(dtype)
    x[0, :4] = [np.nan, 0.0, -0.0, np.inf]
    u = rng.normal(size=(33, 64)).astype(dtype).T      # not contiguous
    u[1, :3] = [np.nan, -0.0, -np.inf]
    u[2, :] = -0.0
    xv = sg.Variable(x)
    with sg.GradientTape() as tape:
        y = sg.nn.relu(xv)
    g = np.asarray(tape.gradient(y, xv, output_gradients=u))
    want = np.where(np.maximum(x, 0) > 0, u, dtype(0))
    word = f"u{np.dtype(dtype).itemsize}"
    np.testing.assert_array_equal(g.view(word), want.view(word))
    s = sg.Variable(dtype(2.0))
    with sg.GradientTape() as tape:
        y = sg.nn.relu(s)
    assert tape.gradient(y, s, output_gradients=dtype(-3.0)).numpy() == dtype(-3.0)
