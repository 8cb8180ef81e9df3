"""custom_gradient: golden cases of reference/custom_gradient.md section 5 and
the business rules BR-39-1 to BR-39-6 (seed 001)."""

import numpy as np
import pytest

import sparsegrad as sg
from sparsegrad.testing import assert_indexed_slices_equal


def _f(t):
    return None if t is None else float(np.asarray(t))


def _grad(fn, *xs, persistent=False):
    xs = [
        sg.constant(x) if not isinstance(x, (sg.Tensor, sg.Variable)) else x for x in xs
    ]
    with sg.GradientTape(persistent=persistent) as tape:
        for x in xs:
            if isinstance(x, sg.Tensor):
                tape.watch(x)
        y = fn(*xs)
    return y, tape.gradient(y, xs)


# -- section 5 goldens -----------------------------------------------------------------


def test_identity_with_tripled_gradient_applied_twice():
    @sg.custom_gradient
    def my_identity(x):
        return sg.identity(x), lambda dy: [3 * dy]

    y, (g,) = _grad(lambda x: my_identity(my_identity(x)), 3.0)
    assert _f(y) == 3.0 and _f(g) == 9.0


def test_multiply_with_swapped_gradients():
    @sg.custom_gradient
    def my_multiply(x1, x2):
        return x1 * x2, lambda dy: [dy * x1, dy * x2]

    _, g = _grad(my_multiply, 3.0, 5.0)
    assert [_f(v) for v in g] == [3.0, 5.0]


def test_log1pexp_overflow_value_finite_gradient():
    @sg.custom_gradient
    def log1pexp(x):
        e = sg.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))

        return sg.log(1 + e), grad

    x = sg.constant(100.0, dtype="float32")
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    assert np.isinf(_f(y))
    assert _f(tape.gradient(y, x)) == 1.0


def test_two_inputs_value_and_grads():
    @sg.custom_gradient
    def bar(x, y):
        def grad(dy):
            return dy * y, dy * x

        return x * y, grad

    z, g = _grad(bar, 2.0, 3.0)
    assert _f(z) == 6.0 and [_f(v) for v in g] == [3.0, 2.0]


def test_custom_square_gradient_and_factory_form():
    @sg.custom_gradient()
    def f(x):
        return x * x, lambda dy: [4 * dy]

    _, (g,) = _grad(f, 1.0)
    assert _f(g) == 4.0


def test_square_of_variable():
    @sg.custom_gradient
    def my_square(x):
        return sg.square(x), lambda dr: 2 * dr * x + 1

    x = sg.Variable(3.0)
    with sg.GradientTape() as tape:
        y = my_square(x)
    assert _f(y) == 9.0
    assert _f(tape.gradient(y, x)) == 7.0


def test_linear_poly_with_captured_variable():
    w = sg.Variable([1.0, 1.0])

    @sg.custom_gradient
    def linear_poly(x):
        poly = w[1] * x + w[0]

        def grad_fn(dpoly, variables):
            dx = dpoly * w[1]
            dw = sg.reduce_sum(sg.reshape(dpoly * sg.stack([x, x**0]), (2, -1)), axis=1)
            return dx, [dw]

        return poly, grad_fn

    x = sg.constant([1.0, 2.0, 3.0])
    with sg.GradientTape() as tape:
        tape.watch(x)
        poly = linear_poly(x)
    np.testing.assert_array_equal(poly.numpy(), [2.0, 3.0, 4.0])
    dx, dw = tape.gradient(poly, [x, w])
    np.testing.assert_array_equal(dx.numpy(), [1.0, 1.0, 1.0])
    np.testing.assert_array_equal(dw.numpy(), [6.0, 3.0])


@pytest.mark.parametrize("form", ["keyword_only", "varargs", "kwargs"])
def test_captured_variable_grad_fn_forms(form):
    x_captured = sg.Variable(3.0)

    def body(x):
        return x * x_captured

    if form == "keyword_only":

        @sg.custom_gradient
        def func_mult(x):
            def grad(dy, *, variables=None):
                return 4 * x_captured * dy, [5 * x * dy]

            return body(x), grad

    elif form == "varargs":

        @sg.custom_gradient
        def func_mult(x):
            def grad(*dys, variables=None):
                return 4 * x_captured * dys[0], [5 * x * dys[0]]

            return body(x), grad

    else:

        @sg.custom_gradient
        def func_mult(x):
            def grad(dy, **kwargs):
                assert kwargs["variables"] == [x_captured]
                return 4 * x_captured * dy, [5 * x * dy]

            return body(x), grad

    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = func_mult(x)
    dx, dv = tape.gradient(y, [x, x_captured])
    assert _f(dx) == 12.0 and _f(dv) == 10.0


def test_dense_layer_inside():
    w = sg.Variable(np.full((2, 4), 0.5))

    @sg.custom_gradient
    def layer(x):
        def grad(dy, variables=None):
            return sg.ones_like(x), [sg.ones_like(variables[0])]

        return sg.matmul(x, w), grad

    x = sg.constant(np.ones((3, 2)))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    dx, dw = tape.gradient(y, [x, w])
    assert _f(sg.reduce_sum(dx)) == 6.0 and _f(sg.reduce_sum(dw)) == 8.0


def test_grad_fn_error_propagates():
    @sg.custom_gradient
    def f(x):
        def grad(dy):
            raise RuntimeError("boom from grad_fn")

        return x * 1.0, grad

    x = sg.constant(1.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    with pytest.raises(RuntimeError, match="boom from grad_fn"):
        tape.gradient(y, x)


@pytest.mark.parametrize("returned, n", [([], 0), ([1.0, 2.0], 2)])
def test_wrong_number_of_gradients_is_value_error(returned, n):
    @sg.custom_gradient
    def f(x):
        return x * 2.0, lambda dy: returned

    x = sg.constant(1.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    with pytest.raises(
        ValueError,
        match=f"expected to return 1 gradients, but returned {n} instead",
    ):
        tape.gradient(y, x)


def test_wrong_number_of_variable_gradients_is_value_error():
    v = sg.Variable(2.0)

    @sg.custom_gradient
    def f(x):
        return x * v, lambda dy, variables: (dy, [])

    x = sg.constant(1.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    with pytest.raises(ValueError, match="Must return gradient for each variable"):
        tape.gradient(y, x)


def test_numpy_input_without_tape():
    called = []

    @sg.custom_gradient
    def f(x):
        def grad(dy):
            called.append(dy)
            return dy

        return x * x, grad

    y = f(np.ones((3, 2)))
    np.testing.assert_array_equal(y.numpy(), np.ones((3, 2)))
    assert called == []


# -- BR-39-1 .. BR-39-6 and the rules of section 2 -------------------------------------


def test_f_must_return_a_pair():
    @sg.custom_gradient
    def f(x):
        return x

    with pytest.raises(TypeError, match="pair"):
        f(sg.constant([1.0, 2.0, 3.0]))


def test_grad_fn_without_variables_parameter_is_type_error():
    v = sg.Variable(2.0, name="captured")

    @sg.custom_gradient
    def f(x):
        return x * v, lambda dy: dy

    with pytest.raises(
        TypeError, match=r"must accept keyword argument 'variables'.*captured"
    ):
        f(sg.constant(1.0))


def test_variable_passed_as_argument_is_an_input():
    v = sg.Variable(3.0)
    seen = []

    @sg.custom_gradient
    def f(x, w):
        def grad(dy, variables=None):
            seen.append(variables)
            return dy * w, dy * x

        return x * w, grad

    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = f(x, v)
    dx, dv = tape.gradient(y, [x, v])
    assert (_f(dx), _f(dv)) == (3.0, 2.0)
    assert seen == [None]


def test_non_trainable_variables_are_not_passed():
    frozen = sg.Variable(3.0, trainable=False)

    @sg.custom_gradient
    def f(x):
        return x * frozen, lambda dy: dy * frozen

    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert _f(tape.gradient(y, x)) == 3.0


def test_method_binding_excludes_self():
    class Scaler:
        k = 4.0

        @sg.custom_gradient
        def f(self, x):
            return x * self.k, lambda dy: dy * self.k * 10

    obj = Scaler()
    x = sg.constant(2.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = obj.f(x)
    assert _f(y) == 8.0 and _f(tape.gradient(y, x)) == 40.0
    # through the class the method is unbound: self is an ordinary argument
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = Scaler.f(obj, x)
    assert _f(y) == 8.0


def test_several_outputs_and_zero_upstream_for_unused_output():
    received = []

    @sg.custom_gradient
    def two(x):
        def grad(d1, d2):
            received.append((d1.numpy(), d2.numpy()))
            return d1 * 2 + d2 * 3

        return (x * 2, x * 3), grad

    x = sg.constant([1.0, 2.0])
    with sg.GradientTape() as tape:
        tape.watch(x)
        a, b = two(x)
    assert isinstance(a, sg.Tensor) and isinstance(b, sg.Tensor)
    np.testing.assert_array_equal(tape.gradient(a, x).numpy(), [2.0, 2.0])
    np.testing.assert_array_equal(received[0][0], [1.0, 1.0])
    np.testing.assert_array_equal(received[0][1], [0.0, 0.0])


def test_dict_outputs_flatten_in_sorted_key_order():
    @sg.custom_gradient
    def f(x):
        def grad(*dys):
            return 100 * dys[0] + dys[1]

        return {"b": 3 * x, "a": 2 * x}, grad

    x = sg.constant(1.0)
    with sg.GradientTape() as tape:
        tape.watch(x)
        out = f(x)
        loss = out["a"] + 10 * out["b"]
    assert set(out) == {"a", "b"}
    assert _f(tape.gradient(loss, x)) == 110.0


def test_none_gradient_and_keyword_and_python_arguments():
    @sg.custom_gradient
    def f(x, y):
        return x * y, lambda dy: (dy * y, None)

    _, g = _grad(f, 1.0, 2.0)
    assert _f(g[0]) == 2.0 and g[1] is None

    @sg.custom_gradient
    def with_kwargs(x, scale=None):
        return x * scale, lambda dy: dy * scale

    x = sg.constant(1.0)
    s = sg.constant(5.0)
    with sg.GradientTape() as tape:
        tape.watch([x, s])
        y = with_kwargs(x, scale=s)
    assert [_f(v) for v in tape.gradient(y, [x, s])] == [5.0, None]

    @sg.custom_gradient
    def pyin(x, k):
        return x * k, lambda dy: (dy * k, None)

    _, (gx,) = _grad(lambda t: pyin(t, 2.0), 1.0)
    assert _f(gx) == 2.0


def test_nested_inputs_are_flattened():
    @sg.custom_gradient
    def f(args):
        a, (b, c) = args
        return a + b + c, lambda dy: [dy, (2 * dy, 3 * dy)]

    a, b, c = (sg.constant(v) for v in (1.0, 1.0, 1.0))
    with sg.GradientTape() as tape:
        tape.watch([a, b, c])
        y = f([a, (b, c)])
    assert [_f(v) for v in tape.gradient(y, [a, b, c])] == [1.0, 2.0, 3.0]


def test_returned_python_float_and_indexed_slices_gradients():
    @sg.custom_gradient
    def f(x):
        return x * 1.0, lambda dy: 5.0

    _, (g,) = _grad(f, 1.0)
    assert _f(g) == 5.0

    @sg.custom_gradient
    def sparse(x):
        return sg.reduce_sum(x), lambda dy: sg.IndexedSlices(
            [[dy.numpy() * 1.0] * 2], [1], (3, 2)
        )

    table = sg.Variable(np.zeros((3, 2)))
    with sg.GradientTape() as tape:
        y = sparse(table)
    g = tape.gradient(y, table)
    assert isinstance(g, sg.IndexedSlices)
    assert_indexed_slices_equal(g, [[0, 0], [1, 1], [0, 0]])


def test_higher_order_through_grad_fn():
    @sg.custom_gradient
    def sq(x):
        return x * x, lambda dy: dy * 2 * x

    x = sg.constant(3.0)
    with sg.GradientTape() as outer:
        outer.watch(x)
        with sg.GradientTape() as inner:
            inner.watch(x)
            y = sq(x)
        dy = inner.gradient(y, x)
    assert _f(dy) == 6.0
    assert _f(outer.gradient(dy, x)) == 2.0


def test_override_second_order_with_custom_gradient():
    # backprop_test testOverrideSecondOrderWithCustomGradient (BR-39-6)
    @sg.custom_gradient
    def first_order_custom(unused_x):
        def h(ddz):
            return -2.1 * ddz

        return sg.constant(-1.1), h

    @sg.custom_gradient
    def f(x):
        def first_order_grad(dz):
            return dz * first_order_custom(x)

        return x + 10.0, first_order_grad

    c = sg.constant(1.0)
    with sg.GradientTape() as outer:
        outer.watch(c)
        with sg.GradientTape() as inner:
            inner.watch(c)
            d = f(c) ** 4
        dd = inner.gradient(d, c)
    d2 = outer.gradient(dd, c)
    fc = 11.0
    np.testing.assert_allclose(_f(dd), 4 * fc**3 * -1.1)
    np.testing.assert_allclose(_f(d2), 12 * fc**2 * (-1.1) ** 2 + 4 * fc**3 * -2.1)


def test_nested_custom_gradient_of_upstream():
    # backprop_test testCustomGradientForwardprop shape: grad returns first_order(x, dz)
    @sg.custom_gradient
    def first_order(x, dz):
        return sg.constant(2.1), lambda ddz: (2.2 * ddz, 3.1 * ddz)

    @sg.custom_gradient
    def f(x):
        return x * 1.0, lambda dz: first_order(x, dz)

    c = sg.constant(1.0)
    seed = sg.constant(1.0)
    with sg.GradientTape() as outer:
        outer.watch([c, seed])
        with sg.GradientTape() as inner:
            inner.watch(c)
            y = f(c)
        gc = inner.gradient(y, c, output_gradients=[seed])
    assert _f(gc) == 2.1
    dc, dseed = outer.gradient(gc, [c, seed])
    assert (_f(dc), _f(dseed)) == (2.2, 3.1)
