"""Fixed training trajectories, hashed: the fingerprint of sparsegrad's bits.

``python tests/trajectories.py`` prints one SHA-256 of every variable
and slot after every step of:

* every optimizer, float32 and float64, with dense gradients and with
  ``IndexedSlices`` gradients (repeated indices, wide and one-element rows),
  each with a constant learning rate and with a schedule, some clipped;
* every raw training op of ``sparsegrad.training_ops`` (sparse ones with and
  without coalescing duplicates), with non-trivial hyper-parameters (FTRL with
  ``lr_power=-0.7`` takes ``pow``, PowerSign takes ``exp``), in float32 and
  float64 and, last, in float16 and bfloat16 (the half kernels);
* training loops through the tape: the README's logistic regression over
  ``scipy.sparse`` features and an embedding lookup with a softmax loss.

The digest must not depend on the CPU, on NumPy's SIMD dispatch
(``NPY_DISABLE_CPU_FEATURES``), on the thread count or on the kernel build
(``SPARSEGRAD_DISABLE_AVX2``): ``test_cross_cpu_bits.py`` runs this script under
each and requires one digest.  ``--verbose`` prints a digest per trajectory,
to find the one that differs.
"""

import hashlib
import inspect
import sys

import ml_dtypes
import numpy as np
import scipy.sparse as sp

import sparsegrad as sg
from sparsegrad import training_ops

N_ROWS = 24
N_STEPS = 6
DTYPES = (np.float32, np.float64)
HALF_DTYPES = (np.float16, ml_dtypes.bfloat16)


class Fingerprint:
    def __init__(self, verbose):
        self.total = hashlib.sha256()
        self.verbose = verbose

    def record(self, label, arrays_per_step):
        part = hashlib.sha256()
        for arrays in arrays_per_step:
            for a in arrays:
                a = np.asarray(a)
                part.update(f"{a.dtype.str}{a.shape}".encode())
                part.update(np.ascontiguousarray(a).tobytes())
        self.total.update(label.encode() + part.digest())
        if self.verbose:
            print(f"{part.hexdigest()[:16]}  {label}")


def _gradients(rng, dtype, shape, sparse):
    """N_STEPS gradients: dense arrays, or IndexedSlices with repeats."""
    out = []
    for _ in range(N_STEPS):
        if sparse:
            n = 2 * N_ROWS // 3
            ids = (rng.zipf(1.3, size=n) - 1) % N_ROWS      # heavy repeats
            values = rng.standard_normal((n,) + shape[1:]).astype(dtype)
            out.append(sg.IndexedSlices(values, ids.astype(np.int64), shape))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


def _optimizers():
    """(label, factory of a fresh optimizer given a learning rate)."""
    opts = sg.optimizers
    return [
        ("sgd", lambda lr: opts.SGD(lr)),
        ("sgd_nesterov", lambda lr: opts.SGD(lr, momentum=0.7, nesterov=True)),
        ("sgd_clipvalue", lambda lr: opts.SGD(lr, momentum=0.3, clipvalue=0.4)),
        ("adagrad", lambda lr: opts.Adagrad(lr, initial_accumulator_value=0.2)),
        ("rowwise_adagrad", lambda lr: opts.RowwiseAdagrad(lr, epsilon=1e-6)),
        ("adadelta", lambda lr: opts.Adadelta(lr, rho=0.8, epsilon=1e-5)),
        ("adam", lambda lr: opts.Adam(lr, beta_1=0.85, beta_2=0.995)),
        ("adam_amsgrad", lambda lr: opts.Adam(lr, amsgrad=True, clipnorm=0.9)),
        ("adam_lazy", lambda lr: opts.Adam(lr, beta_2=0.97, lazy=True)),
        ("adamw", lambda lr: opts.AdamW(lr, weight_decay=0.03, global_clipnorm=1.1)),
        ("adamw_lazy", lambda lr: opts.AdamW(lr, weight_decay=0.03, lazy=True)),
        ("adamax", lambda lr: opts.Adamax(lr, beta_1=0.8, beta_2=0.95)),
        ("ftrl", lambda lr: opts.Ftrl(lr, l1_regularization_strength=0.01,
                                      l2_regularization_strength=0.02)),
        ("ftrl_pow", lambda lr: opts.Ftrl(lr, learning_rate_power=-0.7, beta=0.1,
                                          l2_shrinkage_regularization_strength=0.05)),
        ("rmsprop", lambda lr: opts.RMSprop(lr, rho=0.8, momentum=0.4)),
        ("rmsprop_centered", lambda lr: opts.RMSprop(lr, centered=True)),
        ("proximal_gd", lambda lr: opts.ProximalGradientDescent(
            lr, l1_regularization_strength=0.01, l2_regularization_strength=0.03)),
        ("proximal_adagrad", lambda lr: opts.ProximalAdagrad(
            lr, l1_regularization_strength=0.01, l2_regularization_strength=0.03)),
        ("lion", lambda lr: opts.Lion(lr, beta_1=0.85, beta_2=0.97)),
        ("lion_lazy", lambda lr: opts.Lion(lr, beta_2=0.95, lazy=True,
                                           global_clipnorm=1.3)),
        ("nadam", lambda lr: opts.Nadam(lr, beta_1=0.85, beta_2=0.995)),
        ("nadam_lazy", lambda lr: opts.Nadam(lr, beta_2=0.97, lazy=True,
                                             clipnorm=0.9)),
        ("lamb", lambda lr: opts.Lamb(lr, beta_1=0.85, beta_2=0.995)),
        ("lamb_lazy", lambda lr: opts.Lamb(lr, beta_2=0.97, lazy=True,
                                           global_clipnorm=1.2)),
    ]


def _learning_rates():
    S = sg.optimizers.schedules
    return [
        ("const", lambda: 0.0371),
        ("exp_decay", lambda: S.ExponentialDecay(0.05, decay_steps=3,
                                                 decay_rate=0.73)),
        ("inv_time", lambda: S.InverseTimeDecay(0.05, decay_steps=2,
                                                decay_rate=0.37)),
        ("piecewise", lambda: S.PiecewiseConstantDecay([2, 4], [0.05, 0.031, 0.017])),
    ]


def optimizer_trajectories(fp):
    for dtype in DTYPES:
        for opt_name, make_opt in _optimizers():
            for lr_name, make_lr in _learning_rates():
                for sparse in (False, True):
                    for width in (7, 1):
                        rng = np.random.default_rng(
                            [len(opt_name), len(lr_name), sparse, width])
                        shape = (N_ROWS, width)
                        w = sg.Variable(rng.standard_normal(shape).astype(dtype))
                        b = sg.Variable(rng.standard_normal(width).astype(dtype))
                        gw = _gradients(rng, dtype, shape, sparse)
                        gb = _gradients(rng, dtype, (width,), False)
                        opt = make_opt(make_lr())
                        steps = []
                        for g1, g2 in zip(gw, gb):
                            opt.apply_gradients([(g1, w), (g2, b)])
                            steps.append([w, b] + [v for v in opt.variables()])
                        label = (f"{opt_name}/{lr_name}/{np.dtype(dtype).name}/"
                                 f"{'sparse' if sparse else 'dense'}/w{width}")
                        fp.record(label, steps)


_SCALARS = {
    "lr": 0.043, "alpha": 0.37, "l1": 0.011, "l2": 0.027, "l2_shrinkage": 0.013,
    "lr_power": -0.7, "beta1": 0.87, "beta2": 0.993, "beta1_power": 0.87**3,
    "beta2_power": 0.993**3, "epsilon": 1.3e-6, "rho": 0.83, "momentum": 0.61,
    "logbase": 0.69, "sign_decay": 0.77, "beta": 0.9, "global_step": 5,
}
# Nadam's momentum schedule at steps 3 and 4, and a product of it.
_SCALARS.update(u_t=0.9 * (1 - 0.5 * 0.96**3), u_t_1=0.9 * (1 - 0.5 * 0.96**4),
                u_product=0.12)
_FLAGS = ("use_nesterov", "multiply_linear_by_lr")


def raw_op_trajectories(fp, dtypes=DTYPES):
    for dtype in dtypes:
        for name in sorted(training_ops.__all__):
            op = getattr(training_ops, name)
            params = inspect.signature(op).parameters
            sparse = "indices" in params
            flag_sets = [{}] + [{f: True} for f in _FLAGS if f in params]
            coalesce_sets = [False, True] if sparse else [False]
            for flags in flag_sets:
                for coalesce in coalesce_sets:
                    rng = np.random.default_rng([len(name), len(flags), coalesce])
                    shape = (N_ROWS, 5)
                    state = {}
                    for p in params:
                        if p == "var":
                            state[p] = rng.standard_normal(shape).astype(dtype)
                        elif p in ("accum", "accum_update", "linear", "m", "v",
                                   "vhat", "ms", "mom", "mg", "gradient_accumulator",
                                   "gradient_squared_accumulator"):
                            rows = (N_ROWS,) if "rowwise" in name else shape
                            state[p] = (np.abs(rng.standard_normal(rows)) + 0.1
                                        ).astype(dtype)
                    steps = []
                    for step in range(N_STEPS):
                        kwargs = dict(state, **flags)
                        if sparse:
                            ids = (rng.zipf(1.3, size=16) - 1) % N_ROWS
                            kwargs["indices"] = ids.astype(np.int32)
                            kwargs["grad"] = rng.standard_normal(
                                (16,) + shape[1:]).astype(dtype)
                            kwargs["coalesce_duplicates"] = coalesce
                        else:
                            key = "delta" if "delta" in params else "grad"
                            kwargs[key] = rng.standard_normal(shape).astype(dtype)
                        for p in params:
                            if p in _SCALARS:
                                kwargs[p] = _SCALARS[p]
                        if "global_step" in params:
                            kwargs["global_step"] = np.int64(step + 1)
                        op(**kwargs)
                        steps.append(list(state.values()))
                    fp.record(
                        f"{name}/{np.dtype(dtype).name}/{flags}/{coalesce}", steps
                    )


def tape_trajectories(fp):
    """Training loops through the tape, as a user writes them."""
    for dtype in DTYPES:
        # The README's model: logistic regression on scipy.sparse features.
        rng = np.random.default_rng(7)
        X = sp.random(64, 500, density=0.02, format="csr", random_state=3,
                      dtype=dtype)
        y = (rng.random((64, 1)) < 0.3).astype(dtype)
        w = sg.Variable(np.zeros((500, 1), dtype))
        opt = sg.optimizers.Ftrl(0.1, l1_regularization_strength=0.001)
        steps = []
        for _ in range(N_STEPS):
            with sg.GradientTape() as tape:
                logits = sg.sparse.sparse_dense_matmul(X, w)
                loss = sg.reduce_mean(
                    sg.nn.sigmoid_cross_entropy_with_logits(labels=y, logits=logits))
            (grad,) = tape.gradient(loss, [w])
            opt.apply_gradients([(grad, w)])
            steps.append([w, loss] + opt.variables())
        fp.record(f"tape/logistic/{np.dtype(dtype).name}", steps)

        # An embedding bag with a softmax over 5 classes (no matmul: BLAS
        # kernels depend on the CPU).
        table = sg.Variable(rng.standard_normal((40, 5)).astype(dtype) * 0.1)
        ids = rng.integers(0, 40, size=(16, 3))
        labels = rng.integers(0, 5, size=16)
        opt = sg.optimizers.Adam(0.05, lazy=True, global_clipnorm=2.0)
        steps = []
        for _ in range(N_STEPS):
            with sg.GradientTape() as tape:
                rows = sg.nn.embedding_lookup(table, ids)
                logits = sg.reduce_sum(sg.tanh(rows), axis=1)
                loss = sg.reduce_mean(sg.nn.sparse_softmax_cross_entropy_with_logits(
                    labels=labels, logits=logits))
            (grad,) = tape.gradient(loss, [table])
            opt.apply_gradients([(grad, table)])
            steps.append([table, loss, sg.nn.log_softmax(logits)] + opt.variables())
        fp.record(f"tape/embedding_softmax/{np.dtype(dtype).name}", steps)


def main(argv):
    fp = Fingerprint(verbose="--verbose" in argv)
    optimizer_trajectories(fp)
    raw_op_trajectories(fp)
    tape_trajectories(fp)
    raw_op_trajectories(fp, HALF_DTYPES)
    print(fp.total.hexdigest())


if __name__ == "__main__":
    main(sys.argv[1:])
