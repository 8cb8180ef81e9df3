# The arithmetic of the training kernels: elementary functions rounded to the
# value type once each, and one row function per optimizer formula.  Included
# by _training.pxi (rendered from _training.pxi.tp), whose drivers call them;
# see that file's docstring for the design and the arithmetic rules (no FMA,
# the reference's parenthesisation).

# ---------------------------------------------------------------------------
# Elementary functions, rounded to T once each.

cdef inline floating _sqrt(floating x) noexcept nogil:
    if floating is float:
        return sqrtf(x)
    else:
        return sqrt(x)


@cython.cdivision(True)
cdef inline floating _rsqrt(floating x) noexcept nogil:
    # DESIGN.md: 1 / sqrt(x), correctly rounded twice; never a hardware estimate.
    return <floating>1 / _sqrt(x)


cdef inline floating _abs(floating x) noexcept nogil:
    if floating is float:
        return fabsf(x)
    else:
        return fabs(x)


cdef inline floating _pow(floating x, floating y) noexcept nogil:
    if floating is float:
        return powf(x, y)
    else:
        return pow(x, y)


cdef inline floating _exp(floating x) noexcept nogil:
    if floating is float:
        return expf(x)
    else:
        return exp(x)


cdef inline floating _sign(floating x) noexcept nogil:
    # -1, 0 or +1; NaN stays NaN.  Branch-free, so that loops vectorise.
    cdef floating s = <floating>(x > 0) - <floating>(x < 0)
    return s if x == x else x


cdef inline floating _max(floating a, floating b) noexcept nogil:
    return b if a < b else a


cdef inline floating _min(floating a, floating b) noexcept nogil:
    return b if b < a else a


cdef inline floating _clamp(floating x, floating lo, floating hi) noexcept nogil:
    return _max(_min(x, hi), lo)


cdef inline double _max_d(double a, double b) noexcept nogil:
    return b if a < b else a


# ---------------------------------------------------------------------------
# Row functions.  v: var, s1..s3: slots, g: gradient, n: element count.

cdef inline void _gd_row(floating* v, floating* s1, floating* s2, floating* s3,
                         const floating* g, Py_ssize_t n,
                         const double* hp) noexcept nogil:
    # hp: alpha
    cdef floating alpha = <floating>hp[0]
    cdef Py_ssize_t j
    for j in range(n):
        v[j] = v[j] - g[j] * alpha


@cython.cdivision(True)
cdef inline void _proximal_gd_row(floating* v, floating* s1, floating* s2,
                                  floating* s3, const floating* g, Py_ssize_t n,
                                  const double* hp) noexcept nogil:
    # hp: alpha, l1, l2
    cdef floating alpha = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2]
    cdef floating den = <floating>1 + l2 * alpha, shrink = alpha * l1, p
    cdef Py_ssize_t j
    for j in range(n):
        p = v[j] - g[j] * alpha
        if l1 > 0:
            v[j] = (_sign(p) * _max(_abs(p) - shrink, <floating>0)) / den
        else:
            v[j] = p / den


@cython.cdivision(True)
cdef inline void _proximal_gd_scalar(floating* v, floating* s1, floating* s2,
                                     floating* s3, const floating* g, Py_ssize_t n,
                                     const double* hp) noexcept nogil:
    # R == 1: the denominator and the division in double.
    cdef floating alpha = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2]
    cdef floating l2_alpha = l2 * alpha, p, num
    cdef double den = 1.0 + <double>l2_alpha
    p = v[0] - alpha * g[0]
    if l1 > 0:
        num = _sign(p) * _max(_abs(p) - alpha * l1, <floating>0)
    else:
        num = p
    v[0] = <floating>(<double>num / den)


cdef inline void _adadelta_row(floating* v, floating* s1, floating* s2,
                               floating* s3, const floating* g, Py_ssize_t n,
                               const double* hp) noexcept nogil:
    # hp: lr, rho, epsilon; s1 accum, s2 accum_update
    cdef floating lr = <floating>hp[0], rho = <floating>hp[1]
    cdef floating epsilon = <floating>hp[2]
    cdef floating c = 1 - rho, u, gj
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s1[j] = s1[j] * rho + (gj * gj) * c
        u = (_sqrt(s2[j] + epsilon) * _rsqrt(s1[j] + epsilon)) * gj
        v[j] = v[j] - u * lr
        s2[j] = s2[j] * rho + (u * u) * c


cdef inline void _adagrad_dense_row(floating* v, floating* s1, floating* s2,
                                    floating* s3, const floating* g, Py_ssize_t n,
                                    const double* hp) noexcept nogil:
    # hp: lr, update_slots; s1 accum
    cdef floating lr = <floating>hp[0]
    cdef bint update_slots = hp[1] != 0
    cdef Py_ssize_t j
    for j in range(n):
        if update_slots:
            s1[j] = s1[j] + g[j] * g[j]
        v[j] = v[j] - (g[j] * lr) * _rsqrt(s1[j])


@cython.cdivision(True)
cdef inline void _adagrad_scalar(floating* v, floating* s1, floating* s2,
                                 floating* s3, const floating* g, Py_ssize_t n,
                                 const double* hp) noexcept nogil:
    # R == 1: an exact division instead of rsqrt.
    cdef floating lr = <floating>hp[0]
    cdef bint update_slots = hp[1] != 0
    if update_slots:
        s1[0] = s1[0] + g[0] * g[0]
    v[0] = v[0] - (lr * g[0]) / _sqrt(s1[0])


@cython.cdivision(True)
cdef inline void _adagrad_v2_row(floating* v, floating* s1, floating* s2,
                                 floating* s3, const floating* g, Py_ssize_t n,
                                 const double* hp) noexcept nogil:
    # hp: lr, epsilon, update_slots; s1 accum
    cdef floating lr = <floating>hp[0], epsilon = <floating>hp[1]
    cdef bint update_slots = hp[2] != 0
    cdef Py_ssize_t j
    for j in range(n):
        if update_slots:
            s1[j] = s1[j] + g[j] * g[j]
        v[j] = v[j] - (g[j] * lr) / (_sqrt(s1[j]) + epsilon)


@cython.cdivision(True)
cdef inline void _proximal_adagrad_row(floating* v, floating* s1, floating* s2,
                                       floating* s3, const floating* g,
                                       Py_ssize_t n, const double* hp) noexcept nogil:
    # hp: lr, l1, l2; s1 accum
    cdef floating lr = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2]
    cdef floating eta, p, den
    cdef Py_ssize_t j
    for j in range(n):
        s1[j] = s1[j] + g[j] * g[j]
        eta = lr * _rsqrt(s1[j])
        p = v[j] - g[j] * eta
        den = <floating>1 + l2 * eta
        if l1 > 0:
            v[j] = (_sign(p) * _max(_abs(p) - eta * l1, <floating>0)) / den
        else:
            v[j] = p / den


@cython.cdivision(True)
cdef inline void _proximal_adagrad_scalar(floating* v, floating* s1, floating* s2,
                                          floating* s3, const floating* g,
                                          Py_ssize_t n,
                                          const double* hp) noexcept nogil:
    # R == 1: exact division for eta; the final division in double.
    cdef floating lr = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2]
    cdef floating eta, p, num, l2_eta
    s1[0] = s1[0] + g[0] * g[0]
    eta = lr / _sqrt(s1[0])
    p = v[0] - eta * g[0]
    if l1 > 0:
        num = _sign(p) * _max(_abs(p) - eta * l1, <floating>0)
    else:
        num = p
    l2_eta = l2 * eta
    v[0] = <floating>(<double>num / (1.0 + <double>l2_eta))


@cython.cdivision(True)
cdef inline void _adagrad_da_dense_row(floating* v, floating* s1, floating* s2,
                                       floating* s3, const floating* g,
                                       Py_ssize_t n, const double* hp) noexcept nogil:
    # hp: lr, l1, l2, global_step; s1 gradient_accumulator, s2 squared accumulator
    cdef floating lr = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2]
    cdef float global_step = <float>hp[3]      # always a 32-bit float, as TF does
    cdef floating gs_t = <floating>global_step
    cdef floating gs_lr = gs_t * lr
    cdef floating gs_l1 = gs_t * l1
    cdef floating neg_lr = lr * (-1)
    cdef floating den
    cdef Py_ssize_t j
    for j in range(n):
        s1[j] = s1[j] + g[j]
        s2[j] = s2[j] + g[j] * g[j]
        den = l2 * gs_lr + _sqrt(s2[j])
        if l1 > 0:
            v[j] = ((neg_lr * _sign(s1[j]))
                    * _max(_abs(s1[j]) - gs_l1, <floating>0)) / den
        else:
            v[j] = ((lr * s1[j]) * (-1)) / den


@cython.cdivision(True)
cdef inline void _adagrad_da_sparse_row(floating* v, floating* s1, floating* s2,
                                        floating* s3, const floating* g,
                                        Py_ssize_t n,
                                        const double* hp) noexcept nogil:
    cdef floating lr = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2]
    cdef floating global_step = <floating>hp[3]
    cdef floating gs_lr = global_step * lr
    cdef Py_ssize_t j
    for j in range(n):
        s1[j] = s1[j] + g[j]
        s2[j] = s2[j] + g[j] * g[j]
        if l1 > 0:
            v[j] = ((-_sign(s1[j]))
                    * _max(_abs(s1[j]) / global_step - l1, <floating>0)) / (
                l2 + _sqrt(s2[j]) / gs_lr)
        else:
            v[j] = (-(s1[j] / global_step)) / (l2 + _sqrt(s2[j]) / gs_lr)


@cython.cdivision(True)
cdef inline void _adagrad_da_scalar(floating* v, floating* s1, floating* s2,
                                    floating* s3, const floating* g, Py_ssize_t n,
                                    const double* hp) noexcept nogil:
    # R == 1: computed in double, rounded to T where TF rounds.
    cdef double gd = <double>g[0]
    cdef double lr = <double>(<floating>hp[0]), l1 = <double>(<floating>hp[1])
    cdef double l2 = <double>(<floating>hp[2]), global_step = hp[3]
    cdef double s, gs_l1, gs_l2_lr
    s1[0] = <floating>(<double>s1[0] + gd)
    s2[0] = <floating>(<double>s2[0] + gd * gd)
    s = <double>_sqrt(s2[0])
    gs_l1 = global_step * l1
    gs_l2_lr = (global_step * l2) * lr
    if l1 > 0:
        v[0] = <floating>(((<double>_sign(-s1[0]) * lr)
                           * _max_d(<double>_abs(s1[0]) - gs_l1, 0.0)) / (gs_l2_lr + s))
    else:
        v[0] = <floating>((<double>(-s1[0]) * lr) / (gs_l2_lr + s))


# FTRL with the usual lr_power == -0.5 (square roots) runs _ftrl_sqrt_loop, whose
# flags are literal constants at each call site, so that each specialisation
# is a branch-free loop that vectorises; other powers take a scalar loop (pow).

@cython.cdivision(True)
cdef inline void _ftrl_sqrt_loop(
    floating* v, floating* s1, floating* s2, const floating* g, Py_ssize_t n,
    const double* hp, bint mlr, bint v2, bint dense,
) noexcept nogil:
    cdef floating lr = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2], l2_shrinkage = <floating>hp[3]
    cdef floating two_l2 = <floating>2 * l2, two_shrink = <floating>2 * l2_shrinkage
    cdef floating l1_lr = l1 * lr
    cdef floating two_l2_lr = two_l2 * lr
    cdef floating gj, vj, gs, na, pna, lin, l1e, y, q
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        vj = v[j]
        if v2:
            gs = gj + two_shrink * vj
        else:
            gs = gj
        na = s1[j] + gj * gj
        pna = _sqrt(na)
        if mlr:
            lin = s2[j] + (gs * lr - (pna - _sqrt(s1[j])) * vj)
            l1e = l1_lr
            y = pna + two_l2_lr
        else:
            lin = s2[j] + (gs - ((pna - _sqrt(s1[j])) / lr) * vj)
            l1e = l1
            y = pna / lr + two_l2
        if dense:
            # TF's dense kernel: a select; sparse: clamp (NaN when y == 0).
            q = (l1e * _sign(lin) - lin) / y
            v[j] = q if _abs(lin) > l1e else 0
        else:
            v[j] = (_clamp(lin, -l1e, l1e) - lin) / y
        s2[j] = lin
        s1[j] = na


@cython.cdivision(True)
cdef inline void _ftrl_pow_loop(
    floating* v, floating* s1, floating* s2, const floating* g, Py_ssize_t n,
    const double* hp, bint dense,
) noexcept nogil:
    cdef floating lr = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2], l2_shrinkage = <floating>hp[3]
    cdef floating lr_power = <floating>hp[4]
    cdef bint multiply_linear_by_lr = hp[5] != 0, is_v2 = hp[6] != 0
    cdef floating two_l2 = <floating>2 * l2, two_shrink = <floating>2 * l2_shrinkage
    cdef floating l1_lr = l1 * lr
    cdef floating two_l2_lr = two_l2 * lr
    cdef floating gj, gs, na, pna, pa, lin, l1e, y, q
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        gs = gj + two_shrink * v[j] if is_v2 else gj
        na = s1[j] + gj * gj
        pna = _pow(na, -lr_power)
        pa = _pow(s1[j], -lr_power)
        if multiply_linear_by_lr:
            lin = s2[j] + (gs * lr - (pna - pa) * v[j])
            l1e = l1_lr
            y = pna + two_l2_lr
        else:
            lin = s2[j] + (gs - ((pna - pa) / lr) * v[j])
            l1e = l1
            y = pna / lr + two_l2
        if dense:
            q = (l1e * _sign(lin) - lin) / y
            v[j] = q if _abs(lin) > l1e else 0
        else:
            v[j] = (_clamp(lin, -l1e, l1e) - lin) / y
        s2[j] = lin
        s1[j] = na


cdef inline void _ftrl_rows(floating* v, floating* s1, floating* s2,
                            const floating* g, Py_ssize_t n, const double* hp,
                            bint dense) noexcept nogil:
    # hp: lr, l1, l2, l2_shrinkage, lr_power, multiply_linear_by_lr, is_v2
    cdef floating lr_power = <floating>hp[4]
    cdef bint multiply_linear_by_lr = hp[5] != 0, is_v2 = hp[6] != 0
    if lr_power != -0.5:
        _ftrl_pow_loop(v, s1, s2, g, n, hp, dense)
    elif dense:
        if multiply_linear_by_lr:
            if is_v2:
                _ftrl_sqrt_loop(v, s1, s2, g, n, hp, 1, 1, 1)
            else:
                _ftrl_sqrt_loop(v, s1, s2, g, n, hp, 1, 0, 1)
        elif is_v2:
            _ftrl_sqrt_loop(v, s1, s2, g, n, hp, 0, 1, 1)
        else:
            _ftrl_sqrt_loop(v, s1, s2, g, n, hp, 0, 0, 1)
    else:
        if multiply_linear_by_lr:
            if is_v2:
                _ftrl_sqrt_loop(v, s1, s2, g, n, hp, 1, 1, 0)
            else:
                _ftrl_sqrt_loop(v, s1, s2, g, n, hp, 1, 0, 0)
        elif is_v2:
            _ftrl_sqrt_loop(v, s1, s2, g, n, hp, 0, 1, 0)
        else:
            _ftrl_sqrt_loop(v, s1, s2, g, n, hp, 0, 0, 0)


cdef inline void _ftrl_dense_row(floating* v, floating* s1, floating* s2,
                                 floating* s3, const floating* g, Py_ssize_t n,
                                 const double* hp) noexcept nogil:
    # s1 accum, s2 linear; var = |linear| > l1e ? x / y : 0
    _ftrl_rows(v, s1, s2, g, n, hp, 1)


cdef inline void _ftrl_sparse_row(floating* v, floating* s1, floating* s2,
                                  floating* s3, const floating* g, Py_ssize_t n,
                                  const double* hp) noexcept nogil:
    # As the dense row, but var = (clamp(linear, -l1e, l1e) - linear) / y.
    _ftrl_rows(v, s1, s2, g, n, hp, 0)


@cython.cdivision(True)
cdef inline void _ftrl_scalar(floating* v, floating* s1, floating* s2,
                              floating* s3, const floating* g, Py_ssize_t n,
                              const double* hp) noexcept nogil:
    # R == 1: pow even for lr_power == -0.5 in sigma, (linear + g_s) first.
    cdef floating lr = <floating>hp[0], l1 = <floating>hp[1]
    cdef floating l2 = <floating>hp[2], l2_shrinkage = <floating>hp[3]
    cdef floating lr_power = <floating>hp[4]
    cdef bint multiply_linear_by_lr = hp[5] != 0, is_v2 = hp[6] != 0
    cdef floating gj = g[0], gs, na, sig, lin, q, l1e
    gs = gj + (<floating>2 * l2_shrinkage) * v[0] if is_v2 else gj
    na = s1[0] + gj * gj
    sig = _pow(na, -lr_power) - _pow(s1[0], -lr_power)
    if multiply_linear_by_lr:
        lin = (s2[0] + gs * lr) - sig * v[0]
    else:
        sig = sig / lr
        lin = (s2[0] + gs) - sig * v[0]
    q = _sqrt(na) if lr_power == -0.5 else _pow(na, -lr_power)
    if multiply_linear_by_lr:
        q = q + (<floating>2 * l2) * lr
        l1e = l1 * lr
    else:
        q = q / lr + <floating>2 * l2
        l1e = l1
    v[0] = (_clamp(lin, -l1e, l1e) - lin) / q
    s1[0] = na
    s2[0] = lin


cdef inline void _momentum_dense_row(floating* v, floating* s1, floating* s2,
                                     floating* s3, const floating* g, Py_ssize_t n,
                                     const double* hp) noexcept nogil:
    # hp: lr, momentum, use_nesterov; s1 accum
    cdef floating lr = <floating>hp[0], momentum = <floating>hp[1]
    cdef bint use_nesterov = hp[2] != 0
    cdef Py_ssize_t j
    for j in range(n):
        s1[j] = s1[j] * momentum + g[j]
        if use_nesterov:
            v[j] = v[j] - (g[j] * lr + (s1[j] * momentum) * lr)
        else:
            v[j] = v[j] - s1[j] * lr


cdef inline void _momentum_sparse_row(floating* v, floating* s1, floating* s2,
                                      floating* s3, const floating* g, Py_ssize_t n,
                                      const double* hp) noexcept nogil:
    cdef floating lr = <floating>hp[0], momentum = <floating>hp[1]
    cdef bint use_nesterov = hp[2] != 0
    cdef floating lr_mom = lr * momentum
    cdef Py_ssize_t j
    for j in range(n):
        s1[j] = s1[j] * momentum + g[j]
        if use_nesterov:
            v[j] = v[j] - (lr * g[j] + lr_mom * s1[j])
        else:
            v[j] = v[j] - lr * s1[j]


cdef inline void _keras_momentum_row(floating* v, floating* s1, floating* s2,
                                     floating* s3, const floating* g, Py_ssize_t n,
                                     const double* hp) noexcept nogil:
    # hp: lr, momentum, use_nesterov; s1 accum (the velocity)
    cdef floating lr = <floating>hp[0], momentum = <floating>hp[1]
    cdef bint use_nesterov = hp[2] != 0
    cdef Py_ssize_t j
    for j in range(n):
        s1[j] = s1[j] * momentum - g[j] * lr
        if use_nesterov:
            v[j] = v[j] + (s1[j] * momentum - g[j] * lr)
        else:
            v[j] = v[j] + s1[j]


@cython.cdivision(True)
cdef inline void _adam_row(floating* v, floating* s1, floating* s2, floating* s3,
                           const floating* g, Py_ssize_t n,
                           const double* hp) noexcept nogil:
    # hp: alpha, beta1, beta2, epsilon, use_nesterov; s1 m, s2 v.  The Python
    # layer computes alpha = (lr * sqrt(1 - beta2_power)) / (1 - beta1_power)
    # in T, once per call rather than once per row.
    cdef floating alpha = <floating>hp[0], beta1 = <floating>hp[1]
    cdef floating beta2 = <floating>hp[2], epsilon = <floating>hp[3]
    cdef bint use_nesterov = hp[4] != 0
    cdef floating c1 = <floating>1 - beta1, c2 = <floating>1 - beta2, gj
    cdef Py_ssize_t j
    if use_nesterov:
        for j in range(n):
            gj = g[j]
            s1[j] = s1[j] + (gj - s1[j]) * c1
            s2[j] = s2[j] + (gj * gj - s2[j]) * c2
            v[j] = v[j] - ((gj * c1 + beta1 * s1[j]) * alpha) / (_sqrt(s2[j]) + epsilon)
    else:
        for j in range(n):
            gj = g[j]
            s1[j] = s1[j] + (gj - s1[j]) * c1
            s2[j] = s2[j] + (gj * gj - s2[j]) * c2
            v[j] = v[j] - (s1[j] * alpha) / (_sqrt(s2[j]) + epsilon)


@cython.cdivision(True)
cdef inline void _amsgrad_row(floating* v, floating* s1, floating* s2, floating* s3,
                              const floating* g, Py_ssize_t n,
                              const double* hp) noexcept nogil:
    # hp: alpha (as in _adam_row), beta1, beta2, epsilon; s1 m, s2 v, s3 vhat
    cdef floating alpha = <floating>hp[0], beta1 = <floating>hp[1]
    cdef floating beta2 = <floating>hp[2], epsilon = <floating>hp[3]
    cdef floating c1 = <floating>1 - beta1, c2 = <floating>1 - beta2, gj
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s1[j] = s1[j] + (gj - s1[j]) * c1
        s2[j] = s2[j] + (gj * gj - s2[j]) * c2
        s3[j] = _max(s3[j], s2[j])
        v[j] = v[j] - (s1[j] * alpha) / (_sqrt(s3[j]) + epsilon)


@cython.cdivision(True)
cdef inline void _ada_max_row(floating* v, floating* s1, floating* s2, floating* s3,
                              const floating* g, Py_ssize_t n,
                              const double* hp) noexcept nogil:
    # hp: alpha, beta1, beta2, epsilon; s1 m, s2 v.  The Python layer computes
    # alpha = lr / (1 - beta1_power) in T.
    cdef floating alpha = <floating>hp[0], beta1 = <floating>hp[1]
    cdef floating beta2 = <floating>hp[2], epsilon = <floating>hp[3]
    cdef floating c1 = <floating>1 - beta1, gj
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s1[j] = s1[j] + (gj - s1[j]) * c1
        s2[j] = _max(beta2 * s2[j], _abs(gj))
        v[j] = v[j] - alpha * (s1[j] / (s2[j] + epsilon))


@cython.cdivision(True)
cdef inline void _rms_prop_dense_row(floating* v, floating* s1, floating* s2,
                                     floating* s3, const floating* g, Py_ssize_t n,
                                     const double* hp) noexcept nogil:
    # hp: lr, rho, momentum, epsilon; s1 ms, s2 mom
    cdef floating lr = <floating>hp[0], rho = <floating>hp[1]
    cdef floating momentum = <floating>hp[2], epsilon = <floating>hp[3]
    cdef floating c = <floating>1 - rho, gj
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s1[j] = s1[j] + (gj * gj - s1[j]) * c
        s2[j] = s2[j] * momentum + (gj * lr) / _sqrt(s1[j] + epsilon)
        v[j] = v[j] - s2[j]


cdef inline void _rms_prop_sparse_row(floating* v, floating* s1, floating* s2,
                                      floating* s3, const floating* g, Py_ssize_t n,
                                      const double* hp) noexcept nogil:
    cdef floating lr = <floating>hp[0], rho = <floating>hp[1]
    cdef floating momentum = <floating>hp[2], epsilon = <floating>hp[3]
    cdef floating c = <floating>1 - rho, gj
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s1[j] = s1[j] * rho + (gj * gj) * c
        s2[j] = s2[j] * momentum + (_rsqrt(s1[j] + epsilon) * lr) * gj
        v[j] = v[j] - s2[j]


@cython.cdivision(True)
cdef inline void _centered_rms_prop_dense_row(floating* v, floating* s1,
                                              floating* s2, floating* s3,
                                              const floating* g, Py_ssize_t n,
                                              const double* hp) noexcept nogil:
    # hp: lr, rho, momentum, epsilon; s1 mg, s2 ms, s3 mom
    cdef floating lr = <floating>hp[0], rho = <floating>hp[1]
    cdef floating momentum = <floating>hp[2], epsilon = <floating>hp[3]
    cdef floating c = <floating>1 - rho, gj, den
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s2[j] = s2[j] + (gj * gj - s2[j]) * c
        s1[j] = s1[j] + (gj - s1[j]) * c
        den = (s2[j] - s1[j] * s1[j]) + epsilon
        s3[j] = s3[j] * momentum + (gj * lr) / _sqrt(den)
        v[j] = v[j] - s3[j]


cdef inline void _centered_rms_prop_sparse_row(floating* v, floating* s1,
                                               floating* s2, floating* s3,
                                               const floating* g, Py_ssize_t n,
                                               const double* hp) noexcept nogil:
    cdef floating lr = <floating>hp[0], rho = <floating>hp[1]
    cdef floating momentum = <floating>hp[2], epsilon = <floating>hp[3]
    cdef floating c = <floating>1 - rho, gj, den
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s2[j] = s2[j] * rho + (gj * gj) * c
        s1[j] = s1[j] * rho + gj * c
        den = (s2[j] + epsilon) - s1[j] * s1[j]
        s3[j] = s3[j] * momentum + (_rsqrt(den) * lr) * gj
        v[j] = v[j] - s3[j]


cdef inline void _add_sign_row(floating* v, floating* s1, floating* s2,
                               floating* s3, const floating* g, Py_ssize_t n,
                               const double* hp) noexcept nogil:
    # hp: lr, alpha, sign_decay, beta; s1 m
    cdef floating lr = <floating>hp[0], alpha = <floating>hp[1]
    cdef floating sign_decay = <floating>hp[2], beta = <floating>hp[3]
    cdef floating c = <floating>1 - beta, gj, s
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s1[j] = s1[j] * beta + gj * c
        s = _sign(gj) * _sign(s1[j])
        v[j] = v[j] - (lr * (alpha + sign_decay * s)) * gj


cdef inline void _power_sign_row(floating* v, floating* s1, floating* s2,
                                 floating* s3, const floating* g, Py_ssize_t n,
                                 const double* hp) noexcept nogil:
    # hp: lr, logbase, sign_decay, beta; s1 m
    cdef floating lr = <floating>hp[0], logbase = <floating>hp[1]
    cdef floating sign_decay = <floating>hp[2], beta = <floating>hp[3]
    cdef floating c = <floating>1 - beta, log_decay = logbase * sign_decay, gj, s, e
    # s is -1, 0, +1 or NaN: exp(log_decay * s) takes three values, computed
    # once here with the same arguments (so the same bits) as per element.
    cdef floating e_pos = _exp(log_decay * 1), e_neg = _exp(log_decay * (-1))
    cdef floating e_zero = _exp(log_decay * 0)
    cdef Py_ssize_t j
    for j in range(n):
        gj = g[j]
        s1[j] = s1[j] * beta + gj * c
        s = _sign(gj) * _sign(s1[j])
        e = e_pos if s > 0 else (e_neg if s < 0 else (e_zero if s == 0 else s))
        v[j] = v[j] - (lr * e) * gj


cdef inline double _rowwise_squares(const floating* g, Py_ssize_t n) noexcept nogil:
    # sum_j g_j**2 in double, in order from zero: one chain of n dependent
    # additions (each product is exact in double)
    cdef double total = 0
    cdef Py_ssize_t j
    for j in range(n):
        total = total + <double>g[j] * <double>g[j]
    return total


cdef inline void _rowwise_squares4(
    const floating* g0, const floating* g1, const floating* g2, const floating* g3,
    Py_ssize_t n, double* totals,
) noexcept nogil:
    # _rowwise_squares of four rows at once: four independent chains, each
    # in its row's order (the same bits), so that the additions of one row
    # overlap the latency of the others'
    cdef double t0 = 0, t1 = 0, t2 = 0, t3 = 0
    cdef Py_ssize_t j
    for j in range(n):
        t0 = t0 + <double>g0[j] * <double>g0[j]
        t1 = t1 + <double>g1[j] * <double>g1[j]
        t2 = t2 + <double>g2[j] * <double>g2[j]
        t3 = t3 + <double>g3[j] * <double>g3[j]
    totals[0] = t0
    totals[1] = t1
    totals[2] = t2
    totals[3] = t3


@cython.cdivision(True)
cdef inline void _rowwise_adagrad_apply(floating* v, floating* s1, const floating* g,
                                        Py_ssize_t n, const double* hp,
                                        double total) noexcept nogil:
    # the update of _rowwise_adagrad_row given its row's sum of squares
    cdef floating lr = <floating>hp[0], epsilon = <floating>hp[1], mult
    cdef Py_ssize_t j
    s1[0] = s1[0] + <floating>(total / <double>n)
    mult = lr / (_sqrt(s1[0]) + epsilon)
    for j in range(n):
        v[j] = v[j] - mult * g[j]


@cython.cdivision(True)
cdef inline void _rowwise_adagrad_row(floating* v, floating* s1, floating* s2,
                                      floating* s3, const floating* g, Py_ssize_t n,
                                      const double* hp) noexcept nogil:
    # hp: lr, epsilon; s1 points at the row's single accumulator.
    # accum += T(sum_j g_j**2 (in double, in order) / n)
    # var_j -= (lr / (sqrt(accum) + epsilon)) * g_j
    _rowwise_adagrad_apply(v, s1, g, n, hp, _rowwise_squares(g, n))
