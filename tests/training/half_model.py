"""A NumPy model of sparsegrad's raw training ops on float16 and bfloat16.

TensorFlow's half kernels do every elementary operation in float32 and round
the result to the storage type T at once (reference/training_ops.md 1.5).
Here a value of T is an :class:`H`: a float32 array holding values of T,
whose operators compute in float32 and round to T after each operation,
exactly like ``sg_mf16``/``sg_mbf16`` of ``sparsegrad/_kernels/include/
sg_half.h``.  The element functions below follow
``sparsegrad/_kernels/include/sg_training.h`` statement for statement (each
parenthesisation is the evaluation order), and the hyper-parameters are
prepared as ``sparsegrad/training/training_ops`` prepares them (rounded to T;
Adam's and AdaMax's step size computed in T; Lamb's betas kept as float64).
The parts that sg_training.h computes in double (the R == 1 paths of the
proximal ops and AdagradDA, row-wise Adagrad's and Lamb's sums of squares)
are float64 arithmetic on the values of T, rounded once to T.

Two things of TensorFlow 2.21's x86 CPU kernels are not sparsegrad's, and
are options here (the defaults model sparsegrad):

* ``ftz=True``: TensorFlow's threads run with flush-to-zero and
  denormals-are-zero for float32.  A bfloat16 denormal is a float32
  denormal, so TensorFlow's bfloat16 kernels read every denormal input as a
  signed zero and flush every denormal result; float16 is unaffected (its
  denormals are normal float32 values).  sparsegrad keeps denormals
  (sg_half.h).
* ``rsqrt="tensorflow"``: TensorFlow's half rsqrt rounds once,
  ``round_T(1 / sqrt(x))`` in float32, only where Eigen computes by packets
  of 8; its scalar code (a dense op's last ``size % 8`` elements, the last
  ``R % 8`` columns of each row of a sparse op, the R == 1 path) computes
  ``1 / sqrt(x)`` in the half type, rounding twice.  sparsegrad rounds once
  everywhere (sg_half.h's sg_rsqrt), ``rsqrt="float32"``.

pow and exp are C's powf and expf (what sg_half.h calls), then rounded to T;
they reproduced TensorFlow's Eigen versions bit for bit on every fixture.

The model also runs in float32 (every operation rounded to float32, the
double parts as in float32's kernels): there it must give the bits of
sparsegrad's float32 kernels, which checks its formulas without the half
kernels.

:func:`run` applies one call of a public op (``sparsegrad.training_ops``'
argument names) to copies of its state and returns the new state.
"""

import ctypes
import ctypes.util
import types

import ml_dtypes
import numpy as np

FLOAT16 = np.dtype(np.float16)
BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
HALF_DTYPES = (FLOAT16, BFLOAT16)
DTYPES = {"float16": FLOAT16, "bfloat16": BFLOAT16}

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)
_MIN_NORMAL32 = np.float32(2.0**-126)
_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_POWF, _EXPF = _LIBM.powf, _LIBM.expf
_POWF.restype = _EXPF.restype = ctypes.c_float
_POWF.argtypes = (ctypes.c_float, ctypes.c_float)
_EXPF.argtypes = (ctypes.c_float,)
LAMB_LANES = 16
LAMB_CHUNK = 8192


# ---------------------------------------------------------------------------
# The rounding arithmetic.


# How rsqrt rounds: "float32", once (round_T(1 / sqrt(x)), both in float32:
# sg_half.h's sg_rsqrt); "half", twice (round_T(1 / round_T(sqrt(x)))); or
# "tensorflow", as TensorFlow 2.21's x86 build does: once where Eigen's
# vectorised loop computes, twice in its scalar code (see TF_PACKET).
RSQRT_MODES = ("float32", "half", "tensorflow")
# The packet of TensorFlow's Eigen for float16 and bfloat16 (Packet8h,
# Packet8bf; its x86 wheel targets AVX2): a dense op's first
# (size // 8) * 8 elements, and the first (R // 8) * 8 columns of each row of
# a sparse op, are computed by packets; the rest, and the R == 1 path, by
# Eigen's scalar rsqrt, 1 / sqrt in the half type.
TF_PACKET = 8


class Arith:
    """The arithmetic of storage type `dtype`: each operation in float32,
    rounded once to `dtype`; `ftz`: float32 denormals read and written as
    signed zeros (TensorFlow's CPU threads); `rsqrt`: one of RSQRT_MODES."""

    def __init__(self, dtype, ftz=False, rsqrt="float32"):
        self.dtype = np.dtype(dtype)
        if self.dtype not in HALF_DTYPES + (_F32,):
            raise ValueError(f"not a half dtype (nor float32): {self.dtype}")
        self.ftz = bool(ftz)
        if rsqrt not in RSQRT_MODES:
            raise ValueError(f"rsqrt must be one of {RSQRT_MODES}, got {rsqrt!r}")
        self.rsqrt = rsqrt
        # "tensorflow": True where TensorFlow's vectorised loop computes (set
        # per call by the drivers; broadcast against the operands).
        self.vectorised = False

    def flush(self, x):
        """float32 `x` as an operation reads it."""
        if not self.ftz:
            return x
        return np.where(np.abs(x) < _MIN_NORMAL32, np.copysign(_F32.type(0), x), x)

    def round(self, x):
        """The float32 result `x` rounded to T."""
        x = self.flush(np.asarray(x, dtype=_F32))
        return H(self, x.astype(self.dtype).astype(_F32))

    def of(self, x):
        """Values of T (an array of T, or numbers exact in T), exactly."""
        x = np.asarray(x)
        exact = x.astype(self.dtype)
        if x.dtype != self.dtype and not np.array_equal(
            exact.astype(_F64), x.astype(_F64), equal_nan=True
        ):
            raise ValueError(f"{x} is not exact in {self.dtype}")
        return H(self, exact.astype(_F32))

    def scalar(self, value):
        """A hyper-parameter as sparsegrad rounds it: ``value`` cast to T
        (a Python float through NumPy's / ml_dtypes' cast)."""
        return H(self, np.asarray(value).astype(self.dtype).astype(_F32))

    def from_double(self, d):
        """float64 `d` rounded once to T (``(SG_M)d`` of sg_half.h): rounded
        to odd into float32, whose rounding to T is then the only one."""
        d = np.asarray(d, dtype=_F64)
        if self.dtype == _F32:
            return H(self, d.astype(_F32))
        with np.errstate(all="ignore"):
            f = d.astype(_F32)
            back = f.astype(_F64)
            inexact = (back != d) & ~np.isnan(d)
            bits = f.view(np.uint32).copy()
            away = inexact & (np.abs(back) > np.abs(d))
            bits = np.where(away, bits - np.uint32(1), bits)
            bits = np.where(inexact, bits | np.uint32(1), bits).astype(np.uint32)
        odd = bits.view(_F32)
        return H(self, odd.astype(self.dtype).astype(_F32))


def _binary(fn, swap=False):
    """An arithmetic operator of H: in float32 (operands read as the
    arithmetic reads them), rounded to T."""

    def op(self, other):
        x, y = self.ar.flush(self.f), self.ar.flush(self._other(other))
        return self.ar.round(fn(y, x) if swap else fn(x, y))

    return op


def _compare(fn):
    def op(self, other):
        return fn(self.ar.flush(self.f), self.ar.flush(self._other(other)))

    return op


class H:
    """Values of a storage type (held as float32) with its arithmetic."""

    __slots__ = ("ar", "f")
    __hash__ = None

    def __init__(self, ar, f):
        self.ar = ar
        self.f = f

    def _other(self, other):
        return other.f if isinstance(other, H) else self.ar.of(other).f

    __add__, __radd__ = _binary(np.add), _binary(np.add, True)
    __sub__, __rsub__ = _binary(np.subtract), _binary(np.subtract, True)
    __mul__, __rmul__ = _binary(np.multiply), _binary(np.multiply, True)
    __truediv__, __rtruediv__ = _binary(np.divide), _binary(np.divide, True)
    __lt__, __gt__ = _compare(np.less), _compare(np.greater)
    __le__, __ge__ = _compare(np.less_equal), _compare(np.greater_equal)
    __eq__, __ne__ = _compare(np.equal), _compare(np.not_equal)

    def __neg__(self):                          # a sign flip, never flushed
        return H(self.ar, -self.f)

    def double(self):
        """The values as float64 (exact)."""
        return self.f.astype(_F64)

    def store(self):
        """The values as an array of T."""
        return self.f.astype(self.ar.dtype)

    def __getitem__(self, key):
        return H(self.ar, self.f[key])


def sqrt(x):
    return x.ar.round(np.sqrt(x.ar.flush(x.f)))


def rsqrt(x):
    """1 / sqrt(x) as the arithmetic's `rsqrt` mode computes it."""
    y = x.ar.flush(x.f)
    once = x.ar.round(_F32.type(1) / np.sqrt(y))
    if x.ar.rsqrt == "float32":
        return once
    twice = x.ar.round(_F32.type(1) / sqrt(x).f)
    if x.ar.rsqrt == "half":
        return twice
    return where(x.ar.vectorised, once, twice)


def _libm32(fn, *args):
    """C's float32 `fn` (libm's powf, expf: what sg_half.h calls) per
    element."""
    shape = np.broadcast_shapes(*(a.shape for a in args))
    flat = [np.broadcast_to(a, shape).reshape(-1).tolist() for a in args]
    out = [fn(*values) for values in zip(*flat)]
    return np.asarray(out, dtype=_F32).reshape(shape)


def power(x, y):
    """powf, then rounded to T."""
    return x.ar.round(_libm32(_POWF, x.ar.flush(x.f), x.ar.flush(x._other(y))))


def exp(x):
    """expf, then rounded to T."""
    return x.ar.round(_libm32(_EXPF, x.ar.flush(x.f)))


def abs_(x):                                    # clears the sign bit
    return H(x.ar, np.abs(x.f))


def sign(x):
    """-1, 0 or +1 from comparisons (+0 for either zero); NaN stays NaN."""
    s = (x > 0).astype(_F32) - (x < 0).astype(_F32)
    return H(x.ar, np.where(np.isnan(x.f), x.f, s).astype(_F32))


def where(cond, a, b):
    ar = a.ar if isinstance(a, H) else b.ar
    fa = a.f if isinstance(a, H) else ar.of(a).f
    fb = b.f if isinstance(b, H) else ar.of(b).f
    return H(ar, np.where(cond, fa, fb).astype(_F32))


def maximum(a, b):
    """``a < b ? b : a`` (a NaN operand b gives a)."""
    if not isinstance(b, H):
        b = a.ar.of(b)
    return where(a < b, b, a)


def minimum(a, b):
    """``b < a ? b : a``."""
    if not isinstance(b, H):
        b = a.ar.of(b)
    return where(b < a, b, a)


def clamp(x, lo, hi):
    return maximum(minimum(x, hi), lo)


def _max_d(a, b):
    """sg_max of doubles."""
    return np.where(a < b, b, a)


# ---------------------------------------------------------------------------
# The element functions of sg_training.h.  s = [var, s1, s2, s3] (H values,
# replaced by the new ones); k: the hyper-parameters (H scalars, flags).


def gd_row(k, s, g):
    s[0] = s[0] - g * k.alpha


def proximal_gd_row(k, s, g):
    den, shrink = 1 + k.l2 * k.alpha, k.alpha * k.l1
    p = s[0] - g * k.alpha
    if k.l1 > 0:
        s[0] = (sign(p) * maximum(abs_(p) - shrink, 0)) / den
    else:
        s[0] = p / den


def proximal_gd_scalar(k, s, g):
    ar = g.ar
    l2_alpha = k.l2 * k.alpha
    den = 1.0 + l2_alpha.double()
    p = s[0] - k.alpha * g
    num = sign(p) * maximum(abs_(p) - k.alpha * k.l1, 0) if k.l1 > 0 else p
    s[0] = ar.from_double(num.double() / den)


def adadelta_row(k, s, g):
    c = 1 - k.rho
    s[1] = s[1] * k.rho + (g * g) * c
    u = (sqrt(s[2] + k.epsilon) * rsqrt(s[1] + k.epsilon)) * g
    s[0] = s[0] - u * k.lr
    s[2] = s[2] * k.rho + (u * u) * c


def adagrad_dense_row(k, s, g):
    if k.update_slots:
        s[1] = s[1] + g * g
    s[0] = s[0] - (g * k.lr) * rsqrt(s[1])


def adagrad_scalar(k, s, g):
    if k.update_slots:
        s[1] = s[1] + g * g
    s[0] = s[0] - (k.lr * g) / sqrt(s[1])


def adagrad_v2_row(k, s, g):
    if k.update_slots:
        s[1] = s[1] + g * g
    s[0] = s[0] - (g * k.lr) / (sqrt(s[1]) + k.epsilon)


def proximal_adagrad_row(k, s, g):
    s[1] = s[1] + g * g
    eta = k.lr * rsqrt(s[1])
    p = s[0] - g * eta
    den = 1 + k.l2 * eta
    if k.l1 > 0:
        s[0] = (sign(p) * maximum(abs_(p) - eta * k.l1, 0)) / den
    else:
        s[0] = p / den


def proximal_adagrad_scalar(k, s, g):
    s[1] = s[1] + g * g
    eta = k.lr / sqrt(s[1])
    p = s[0] - eta * g
    num = sign(p) * maximum(abs_(p) - eta * k.l1, 0) if k.l1 > 0 else p
    l2_eta = k.l2 * eta
    s[0] = g.ar.from_double(num.double() / (1.0 + l2_eta.double()))


def adagrad_da_dense_row(k, s, g):
    gs = g.ar.round(np.float32(k.global_step))  # a float32, then T
    gs_lr, gs_l1, neg_lr = gs * k.lr, gs * k.l1, k.lr * (-1)
    s[1] = s[1] + g
    s[2] = s[2] + g * g
    den = k.l2 * gs_lr + sqrt(s[2])
    if k.l1 > 0:
        s[0] = ((neg_lr * sign(s[1])) * maximum(abs_(s[1]) - gs_l1, 0)) / den
    else:
        s[0] = ((k.lr * s[1]) * (-1)) / den


def adagrad_da_sparse_row(k, s, g):
    gs = g.ar.from_double(float(k.global_step))
    gs_lr = gs * k.lr
    s[1] = s[1] + g
    s[2] = s[2] + g * g
    den = k.l2 + sqrt(s[2]) / gs_lr
    if k.l1 > 0:
        s[0] = ((-sign(s[1])) * maximum(abs_(s[1]) / gs - k.l1, 0)) / den
    else:
        s[0] = (-(s[1] / gs)) / den


def adagrad_da_scalar(k, s, g):
    ar = g.ar
    gd = g.double()
    lr, l1, l2 = k.lr.double(), k.l1.double(), k.l2.double()
    gstep = float(k.global_step)
    s[1] = ar.from_double(s[1].double() + gd)
    s[2] = ar.from_double(s[2].double() + gd * gd)
    root = sqrt(s[2]).double()
    gs_l1 = gstep * l1
    gs_l2_lr = (gstep * l2) * lr
    if l1 > 0:
        num = (sign(-s[1]).double() * lr) * _max_d(abs_(s[1]).double() - gs_l1, 0.0)
    else:
        num = (-s[1]).double() * lr
    s[0] = ar.from_double(num / (gs_l2_lr + root))


def _ftrl(k, s, g, use_pow, mlr, v2, dense):
    two_l2, two_shrink = 2 * k.l2, 2 * k.l2_shrinkage
    l1_lr = k.l1 * k.lr
    two_l2_lr = two_l2 * k.lr
    vj = s[0]
    gs = g + two_shrink * vj if v2 else g
    na = s[1] + g * g
    if use_pow:
        pna, pa = power(na, -k.lr_power), power(s[1], -k.lr_power)
    else:
        pna, pa = sqrt(na), sqrt(s[1])
    if mlr:
        lin = s[2] + (gs * k.lr - (pna - pa) * vj)
        l1e, y = l1_lr, pna + two_l2_lr
    else:
        lin = s[2] + (gs - ((pna - pa) / k.lr) * vj)
        l1e, y = k.l1, pna / k.lr + two_l2
    if dense:
        q = (l1e * sign(lin) - lin) / y
        s[0] = where(abs_(lin) > l1e, q, 0)
    else:
        s[0] = (clamp(lin, -l1e, l1e) - lin) / y
    s[2] = lin
    s[1] = na


def ftrl_dense_row(k, s, g):
    _ftrl(k, s, g, k.lr_power != -0.5, k.multiply_linear_by_lr, k.is_v2, True)


def ftrl_sparse_row(k, s, g):
    _ftrl(k, s, g, k.lr_power != -0.5, k.multiply_linear_by_lr, k.is_v2, False)


def ftrl_scalar(k, s, g):
    mlr = k.multiply_linear_by_lr
    gs = g + (2 * k.l2_shrinkage) * s[0] if k.is_v2 else g
    na = s[1] + g * g
    sig = power(na, -k.lr_power) - power(s[1], -k.lr_power)
    if mlr:
        lin = (s[2] + gs * k.lr) - sig * s[0]
    else:
        sig = sig / k.lr
        lin = (s[2] + gs) - sig * s[0]
    q = sqrt(na) if k.lr_power == -0.5 else power(na, -k.lr_power)
    if mlr:
        q, l1e = q + (2 * k.l2) * k.lr, k.l1 * k.lr
    else:
        q, l1e = q / k.lr + 2 * k.l2, k.l1
    s[0] = (clamp(lin, -l1e, l1e) - lin) / q
    s[1] = na
    s[2] = lin


def momentum_dense_row(k, s, g):
    s[1] = s[1] * k.momentum + g
    if k.use_nesterov:
        s[0] = s[0] - (g * k.lr + (s[1] * k.momentum) * k.lr)
    else:
        s[0] = s[0] - s[1] * k.lr


def momentum_sparse_row(k, s, g):
    lr_mom = k.lr * k.momentum
    s[1] = s[1] * k.momentum + g
    if k.use_nesterov:
        s[0] = s[0] - (k.lr * g + lr_mom * s[1])
    else:
        s[0] = s[0] - k.lr * s[1]


def keras_momentum_row(k, s, g):
    s[1] = s[1] * k.momentum - g * k.lr
    if k.use_nesterov:
        s[0] = s[0] + (s[1] * k.momentum - g * k.lr)
    else:
        s[0] = s[0] + s[1]


def adam_row(k, s, g):
    c1, c2 = 1 - k.beta1, 1 - k.beta2
    s[1] = s[1] + (g - s[1]) * c1
    s[2] = s[2] + (g * g - s[2]) * c2
    if k.use_nesterov:
        s[0] = s[0] - ((g * c1 + k.beta1 * s[1]) * k.alpha) / (sqrt(s[2]) + k.epsilon)
    else:
        s[0] = s[0] - (s[1] * k.alpha) / (sqrt(s[2]) + k.epsilon)


def amsgrad_row(k, s, g):
    c1, c2 = 1 - k.beta1, 1 - k.beta2
    s[1] = s[1] + (g - s[1]) * c1
    s[2] = s[2] + (g * g - s[2]) * c2
    s[3] = maximum(s[3], s[2])
    s[0] = s[0] - (s[1] * k.alpha) / (sqrt(s[3]) + k.epsilon)


def ada_max_row(k, s, g):
    c1 = 1 - k.beta1
    s[1] = s[1] + (g - s[1]) * c1
    s[2] = maximum(k.beta2 * s[2], abs_(g))
    s[0] = s[0] - k.alpha * (s[1] / (s[2] + k.epsilon))


def rms_prop_dense_row(k, s, g):
    c = 1 - k.rho
    s[1] = s[1] + (g * g - s[1]) * c
    s[2] = s[2] * k.momentum + (g * k.lr) / sqrt(s[1] + k.epsilon)
    s[0] = s[0] - s[2]


def rms_prop_sparse_row(k, s, g):
    c = 1 - k.rho
    s[1] = s[1] * k.rho + (g * g) * c
    s[2] = s[2] * k.momentum + (rsqrt(s[1] + k.epsilon) * k.lr) * g
    s[0] = s[0] - s[2]


def centered_rms_prop_dense_row(k, s, g):
    c = 1 - k.rho
    s[2] = s[2] + (g * g - s[2]) * c
    s[1] = s[1] + (g - s[1]) * c
    den = (s[2] - s[1] * s[1]) + k.epsilon
    s[3] = s[3] * k.momentum + (g * k.lr) / sqrt(den)
    s[0] = s[0] - s[3]


def centered_rms_prop_sparse_row(k, s, g):
    c = 1 - k.rho
    s[2] = s[2] * k.rho + (g * g) * c
    s[1] = s[1] * k.rho + g * c
    den = (s[2] + k.epsilon) - s[1] * s[1]
    s[3] = s[3] * k.momentum + (rsqrt(den) * k.lr) * g
    s[0] = s[0] - s[3]


def add_sign_row(k, s, g):
    c = 1 - k.beta
    s[1] = s[1] * k.beta + g * c
    agree = sign(g) * sign(s[1])
    s[0] = s[0] - (k.lr * (k.alpha + k.sign_decay * agree)) * g


def power_sign_row(k, s, g):
    c = 1 - k.beta
    log_decay = k.logbase * k.sign_decay
    e_pos, e_neg, e_zero = exp(log_decay * 1), exp(log_decay * (-1)), exp(log_decay * 0)
    s[1] = s[1] * k.beta + g * c
    agree = sign(g) * sign(s[1])
    e = where(agree == 0, e_zero, agree)            # NaN stays NaN
    e = where(agree > 0, e_pos, where(agree < 0, e_neg, e))
    s[0] = s[0] - (k.lr * e) * g


def lion_row(k, s, g):
    c1, c2 = 1 - k.beta1, 1 - k.beta2
    s[0] = s[0] - k.lr * sign(s[1] * k.beta1 + g * c1)
    s[1] = s[1] * k.beta2 + g * c2


def nadam_row(k, s, g):
    c1, c2 = 1 - k.beta1, 1 - k.beta2
    den_next, den_now = 1 - k.u_product * k.u_t_1, 1 - k.u_product
    c_now, den_v = 1 - k.u_t, 1 - k.beta2_power
    s[1] = s[1] + (g - s[1]) * c1
    s[2] = s[2] + (g * g - s[2]) * c2
    m_hat = (k.u_t_1 * s[1]) / den_next + (c_now * g) / den_now
    v_hat = s[2] / den_v
    s[0] = s[0] - (m_hat * k.lr) / (sqrt(v_hat) + k.epsilon)


# ---------------------------------------------------------------------------
# Segments: row-wise Adagrad's and Lamb's (rows of a (rows, n) matrix).


def lane_total(squares):
    """sg_training.h's sum of squares of each row of float64 `squares`
    (rows, n): value j in lane j % 16, each lane in order from zero, the
    lanes added pairwise."""
    rows, n = squares.shape
    width = -(-n // LAMB_LANES) * LAMB_LANES
    padded = np.zeros((rows, width), dtype=_F64)
    padded[:, :n] = squares
    lanes = np.zeros((rows, LAMB_LANES), dtype=_F64)
    for block in range(0, width, LAMB_LANES):
        lanes = lanes + padded[:, block : block + LAMB_LANES]
    while lanes.shape[1] > 1:
        lanes = lanes[:, 0::2] + lanes[:, 1::2]
    return lanes[:, 0]


def _lamb_sums(x, chunk):
    """Per row of H `x` (rows, n): its sum of squares, by chunks of `chunk`
    values added in chunk order from zero (one chunk: a sparse row)."""
    sq = x.double() ** 2
    total = np.zeros(sq.shape[0], dtype=_F64)
    for start in range(0, max(sq.shape[1], 1), chunk):
        total = total + lane_total(sq[:, start : start + chunk])
    return total


def lamb_segments(k, s, g, chunk):
    """Lamb on segments, the rows of s[0..2] and g (rows, n)."""
    ar = g.ar
    c1, c2 = ar.from_double(1.0 - k.beta1_d), ar.from_double(1.0 - k.beta2_d)
    den1, den2 = 1 - k.beta1_power, 1 - k.beta2_power
    w2 = _lamb_sums(s[0], chunk)
    s[1] = s[1] + (g - s[1]) * c1
    s[2] = s[2] + (g * g - s[2]) * c2
    u = (s[1] / den1) / (sqrt(s[2] / den2) + k.epsilon)
    u2 = _lamb_sums(u, chunk)
    w_norm, u_norm = sqrt(ar.from_double(w2)), sqrt(ar.from_double(u2))
    ratio = where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1)
    scale = ratio * k.lr
    s[0] = s[0] - H(ar, scale.f[:, None]) * u


def rowwise_adagrad_segments(k, s, g):
    """Row-wise Adagrad; s[1] holds each row's accumulator, shape (rows, 1)."""
    gd = g.double()
    total = np.zeros(gd.shape[0], dtype=_F64)
    for j in range(gd.shape[1]):
        total = total + gd[:, j] * gd[:, j]
    s[1] = s[1] + g.ar.from_double(total / gd.shape[1])[:, None]
    mult = k.lr / (sqrt(s[1]) + k.epsilon)
    s[0] = s[0] - mult * g


# ---------------------------------------------------------------------------
# The ops.

# kernel -> (dense function, sparse function (R > 1), R == 1 function or None)
KERNELS = {
    "gradient_descent": (gd_row, gd_row, None),
    "proximal_gradient_descent": (proximal_gd_row, proximal_gd_row, proximal_gd_scalar),
    "adadelta": (adadelta_row, adadelta_row, None),
    "adagrad": (adagrad_dense_row, adagrad_dense_row, adagrad_scalar),
    "adagrad_v2": (adagrad_v2_row, adagrad_v2_row, None),
    "proximal_adagrad": (
        proximal_adagrad_row,
        proximal_adagrad_row,
        proximal_adagrad_scalar,
    ),
    "adagrad_da": (adagrad_da_dense_row, adagrad_da_sparse_row, adagrad_da_scalar),
    "ftrl": (ftrl_dense_row, ftrl_sparse_row, ftrl_scalar),
    "momentum": (momentum_dense_row, momentum_sparse_row, None),
    "keras_momentum": (keras_momentum_row, keras_momentum_row, None),
    "adam": (adam_row, adam_row, None),
    "adam_with_amsgrad": (amsgrad_row, None, None),
    "ada_max": (ada_max_row, ada_max_row, None),
    "rms_prop": (rms_prop_dense_row, rms_prop_sparse_row, None),
    "centered_rms_prop": (
        centered_rms_prop_dense_row,
        centered_rms_prop_sparse_row,
        None,
    ),
    "add_sign": (add_sign_row, None, None),
    "power_sign": (power_sign_row, None, None),
    "lion": (lion_row, lion_row, None),
    "nadam": (nadam_row, nadam_row, None),
    "rowwise_adagrad": (None, None, None),       # segments: rows of var
    "lamb": (None, None, None),                  # segments: var, or a row
}

_ADAM = ("beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon")
_RMS = ("lr", "rho", "momentum", "epsilon")
# name -> (kernel, slots, dense gradient's name, scalars in T, flags)
OPS = {
    "gradient_descent": ("gradient_descent", (), "delta", ("alpha",), {}),
    "proximal_gradient_descent": (
        "proximal_gradient_descent", (), "delta", ("alpha", "l1", "l2"), {}),
    "adadelta": ("adadelta", ("accum", "accum_update"), "grad",
                 ("lr", "rho", "epsilon"), {}),
    "adagrad": ("adagrad", ("accum",), "grad", ("lr",), {"update_slots": True}),
    "adagrad_v2": ("adagrad_v2", ("accum",), "grad", ("lr", "epsilon"),
                   {"update_slots": True}),
    "proximal_adagrad": ("proximal_adagrad", ("accum",), "grad",
                         ("lr", "l1", "l2"), {}),
    "adagrad_da": ("adagrad_da",
                   ("gradient_accumulator", "gradient_squared_accumulator"),
                   "grad", ("lr", "l1", "l2"), {}),
    "rowwise_adagrad": ("rowwise_adagrad", ("accum",), "grad", ("lr", "epsilon"), {}),
    "ftrl": ("ftrl", ("accum", "linear"), "grad", ("lr", "l1", "l2", "lr_power"),
             {"multiply_linear_by_lr": False}),
    "ftrl_v2": ("ftrl", ("accum", "linear"), "grad",
                ("lr", "l1", "l2", "l2_shrinkage", "lr_power"),
                {"multiply_linear_by_lr": False}),
    "momentum": ("momentum", ("accum",), "grad", ("lr", "momentum"),
                 {"use_nesterov": False}),
    "keras_momentum": ("keras_momentum", ("accum",), "grad", ("lr", "momentum"),
                       {"use_nesterov": False}),
    "adam": ("adam", ("m", "v"), "grad", _ADAM, {"use_nesterov": False}),
    "adam_with_amsgrad": ("adam_with_amsgrad", ("m", "v", "vhat"), "grad", _ADAM, {}),
    "ada_max": ("ada_max", ("m", "v"), "grad",
                ("beta1_power", "lr", "beta1", "beta2", "epsilon"), {}),
    "nadam": ("nadam", ("m", "v"), "grad",
              ("u_t", "u_t_1", "u_product", "beta2_power", "lr", "beta1", "beta2",
               "epsilon"), {}),
    "lamb": ("lamb", ("m", "v"), "grad",
             ("beta1_power", "beta2_power", "lr", "epsilon"), {}),
    "rms_prop": ("rms_prop", ("ms", "mom"), "grad", _RMS, {}),
    "centered_rms_prop": ("centered_rms_prop", ("mg", "ms", "mom"), "grad", _RMS, {}),
    "add_sign": ("add_sign", ("m",), "grad",
                 ("lr", "alpha", "sign_decay", "beta"), {}),
    "power_sign": ("power_sign", ("m",), "grad",
                   ("lr", "logbase", "sign_decay", "beta"), {}),
    "lion": ("lion", ("m",), "grad", ("lr", "beta1", "beta2"), {}),
}


def op_info(op):
    """(name, sparse) of public op `op` (``apply_x`` or ``sparse_apply_x``)."""
    sparse = op.startswith("sparse_apply_")
    return op[len("sparse_apply_" if sparse else "apply_"):], sparse


def state_names(op):
    """var and the slots of public op `op`, in TensorFlow's order."""
    return ("var", *OPS[op_info(op)[0]][1])


def grad_name(op):
    name, sparse = op_info(op)
    return "grad" if sparse else OPS[name][2]


def hyper(ar, op, kwargs):
    """The hyper-parameters of a call as sparsegrad's Python layer and
    kernel prepare them."""
    name, _ = op_info(op)
    kernel, _, _, scalars, flags = OPS[name]
    k = types.SimpleNamespace()
    for key in scalars:
        setattr(k, key, ar.scalar(kwargs[key]))
    for key, default in flags.items():
        setattr(k, key, bool(kwargs.get(key, default)))
    k.is_v2 = name == "ftrl_v2"
    if kernel == "ftrl" and not k.is_v2:
        k.l2_shrinkage = ar.of(0)
    if kernel == "adagrad_da":
        k.global_step = int(kwargs["global_step"])
    if kernel in ("adam", "adam_with_amsgrad"):
        k.alpha = (k.lr * sqrt(1 - k.beta2_power)) / (1 - k.beta1_power)
    if kernel == "ada_max":
        k.alpha = k.lr / (1 - k.beta1_power)
    if kernel == "lamb":
        k.beta1_d = float(np.asarray(kwargs["beta1"]).astype(_F64))
        k.beta2_d = float(np.asarray(kwargs["beta2"]).astype(_F64))
    return k


def _occurrence_ranks(indices):
    """For each position, how many earlier positions hold the same index."""
    n = indices.shape[0]
    order = np.argsort(indices, kind="stable")
    ordered = indices[order]
    first = np.ones(n, dtype=bool)
    first[1:] = ordered[1:] != ordered[:-1]
    start = np.maximum.accumulate(np.where(first, np.arange(n), 0))
    ranks = np.empty(n, dtype=np.int64)
    ranks[order] = np.arange(n) - start
    return ranks


def run(op, kwargs, ftz=False, rsqrt="float32"):
    """The state after one call of public op `op` on `kwargs` (not changed):
    {name: new array of T} for var and each slot.

    The defaults model sparsegrad; ``ftz=True, rsqrt="tensorflow"`` models
    TensorFlow 2.21's x86 CPU kernels (the module's docstring, TF_PACKET).
    """
    name, sparse = op_info(op)
    kernel, slots, _, _, _ = OPS[name]
    var = np.asarray(kwargs["var"])
    ar = Arith(var.dtype, ftz, rsqrt)
    names = ("var", *slots)
    state = {key: np.array(kwargs[key], dtype=ar.dtype, copy=True) for key in names}
    grad = np.asarray(kwargs[grad_name(op)]).astype(ar.dtype)
    with np.errstate(all="ignore"):
        k = hyper(ar, op, kwargs)
        if sparse:
            _sparse(ar, kernel, k, state, names, grad, np.asarray(kwargs["indices"]))
        else:
            _dense(ar, kernel, k, state, names, grad)
    return state


def _dense(ar, kernel, k, state, names, grad):
    if not state["var"].size:
        return
    if kernel == "rowwise_adagrad":
        rows = state["var"].shape[0]
        s = [ar.of(state["var"].reshape(rows, -1)), ar.of(state["accum"][:, None])]
        rowwise_adagrad_segments(k, s, ar.of(grad.reshape(rows, -1)))
        state["var"][...] = s[0].store().reshape(state["var"].shape)
        state["accum"][...] = s[1].store()[:, 0]
        return
    if kernel == "lamb":                        # one segment: all of var
        s = [ar.of(state[key].reshape(1, -1)) for key in names]
        lamb_segments(k, s, ar.of(grad.reshape(1, -1)), LAMB_CHUNK)
    else:
        s = [ar.of(state[key].reshape(-1)) for key in names]
        ar.vectorised = _vectorised(grad.size)
        KERNELS[kernel][0](k, s, ar.of(grad.reshape(-1)))
    for key, value in zip(names, s):
        state[key][...] = value.store().reshape(state[key].shape)


def _vectorised(n):
    """Which of n contiguous values TensorFlow's Eigen computes by packets."""
    return np.arange(n) < (n // TF_PACKET) * TF_PACKET


def _sparse(ar, kernel, k, state, names, grad, indices):
    var = state["var"]
    if indices.shape[0] == 0 or var.size == 0:
        return
    d0 = var.shape[0]
    width = var.size // d0
    mats = {key: state[key].reshape(d0, -1) for key in names}
    grad = grad.reshape(indices.shape[0], width)
    _, sparse_fn, scalar_fn = KERNELS[kernel]
    fn = scalar_fn if (width == 1 and scalar_fn is not None) else sparse_fn
    ar.vectorised = _vectorised(width)
    ranks = _occurrence_ranks(indices)
    # Each round takes the r-th occurrence of every row: distinct rows, so
    # a round is vectorised; the rounds keep each row's occurrences in order.
    for r in range(int(ranks.max()) + 1):
        pos = np.flatnonzero(ranks == r)
        rows = indices[pos]
        s = [ar.of(mats[key][rows]) for key in names]
        g = ar.of(grad[pos])
        if kernel == "lamb":
            lamb_segments(k, s, g, max(width, 1))
        elif kernel == "rowwise_adagrad":
            rowwise_adagrad_segments(k, s, g)
        else:
            fn(k, s, g)
        for key, value in zip(names, s):
            mats[key][rows] = value.store()


# ---------------------------------------------------------------------------
# Comparing half arrays bit for bit.


def ordered_bits(a):
    """Integers in the order of the values of half array `a` (the two zeros
    equal), so that a difference of 1 is one ulp."""
    b = np.asarray(a).view(np.uint16).astype(np.int64)
    return np.where(b & 0x8000, -(b & 0x7FFF), b)


def ulp_difference(actual, expected):
    """Per element: ulps between two half arrays; 0 where both are NaN, a
    large number where one is NaN or the zeros' signs differ."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    a64, e64 = actual.astype(_F64), expected.astype(_F64)
    diff = np.abs(ordered_bits(actual) - ordered_bits(expected))
    nan_a, nan_e = np.isnan(a64), np.isnan(e64)
    zeros = (a64 == 0) & (e64 == 0)
    signs = np.signbit(a64) != np.signbit(e64)
    diff = np.where(zeros & signs, 1 << 20, diff)
    diff = np.where(nan_a != nan_e, 1 << 20, diff)
    return np.where(nan_a & nan_e, 0, diff)


def assert_bits(actual, expected, ulp=0, err_msg=""):
    """`actual` equals half array `expected` bit for bit (any NaN equals any
    NaN), or within `ulp` ulps of T."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, (err_msg, actual.dtype, expected.dtype)
    assert actual.shape == expected.shape, (err_msg, actual.shape, expected.shape)
    diff = ulp_difference(actual, expected)
    if diff.size and diff.max() > ulp:
        bad = np.flatnonzero(diff.reshape(-1) > ulp)
        got = actual.reshape(-1)[bad[:5]]
        want = expected.reshape(-1)[bad[:5]]
        raise AssertionError(
            f"{err_msg}: {bad.size} of {diff.size} elements differ by more than "
            f"{ulp} ulp (max {diff.max()}); at {bad[:5].tolist()}: got "
            f"{got.astype(_F64).tolist()} (bits "
            f"{got.view(np.uint16).tolist()}), want {want.astype(_F64).tolist()} "
            f"(bits {want.view(np.uint16).tolist()})"
        )
