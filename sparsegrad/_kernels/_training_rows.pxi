# The row functions of the training kernels that _training.pxi.tp does not
# generate from the table (training_table.py): FTRL's, whose loops take their
# flags as literal constants, and row-wise Adagrad's and Lamb's, which need sums
# of squares over a row before they update it.  Included by _training.pxi; the
# arithmetic is that of include/sg_training.h (sg_ftrl, sg_rowwise_*, sg_lamb_*).

cdef inline void _ftrl_loop(
    floating* v, floating* s1, floating* s2, const floating* g, Py_ssize_t n,
    const double* hp, bint use_pow, bint mlr, bint v2, bint dense,
) noexcept nogil:
    # sg_ftrl of each of the n elements.  Called with literal flags for
    # lr_power == -0.5 (the usual case), each specialisation is a branch-free
    # loop that vectorises; other powers take a scalar loop (pow).
    cdef sg_hp_f32 k32
    cdef sg_hp_f64 k64
    cdef Py_ssize_t j
    if floating is float:
        sg_hp_load_f32(&k32, hp, 7)
        for j in range(n):
            sg_ftrl_f32(&k32, &v[j], &s1[j], &s2[j], g[j], use_pow, mlr, v2, dense)
    else:
        sg_hp_load_f64(&k64, hp, 7)
        for j in range(n):
            sg_ftrl_f64(&k64, &v[j], &s1[j], &s2[j], g[j], use_pow, mlr, v2, dense)


cdef inline void _ftrl_rows(floating* v, floating* s1, floating* s2,
                            const floating* g, Py_ssize_t n, const double* hp,
                            bint dense) noexcept nogil:
    # hp: lr, l1, l2, l2_shrinkage, lr_power, multiply_linear_by_lr, is_v2
    cdef floating lr_power = <floating>hp[4]
    cdef bint mlr = hp[5] != 0, is_v2 = hp[6] != 0
    if lr_power != -0.5:
        _ftrl_loop(v, s1, s2, g, n, hp, 1, mlr, is_v2, dense)
    elif dense:
        if mlr:
            if is_v2:
                _ftrl_loop(v, s1, s2, g, n, hp, 0, 1, 1, 1)
            else:
                _ftrl_loop(v, s1, s2, g, n, hp, 0, 1, 0, 1)
        elif is_v2:
            _ftrl_loop(v, s1, s2, g, n, hp, 0, 0, 1, 1)
        else:
            _ftrl_loop(v, s1, s2, g, n, hp, 0, 0, 0, 1)
    else:
        if mlr:
            if is_v2:
                _ftrl_loop(v, s1, s2, g, n, hp, 0, 1, 1, 0)
            else:
                _ftrl_loop(v, s1, s2, g, n, hp, 0, 1, 0, 0)
        elif is_v2:
            _ftrl_loop(v, s1, s2, g, n, hp, 0, 0, 1, 0)
        else:
            _ftrl_loop(v, s1, s2, g, n, hp, 0, 0, 0, 0)


cdef inline void _ftrl_dense_row(floating* v, floating* s1, floating* s2,
                                 floating* s3, const floating* g, Py_ssize_t n,
                                 const double* hp) noexcept nogil:
    # TF's dense kernel: var = |linear| > l1e ? x / y : 0
    _ftrl_rows(v, s1, s2, g, n, hp, 1)


cdef inline void _ftrl_sparse_row(floating* v, floating* s1, floating* s2,
                                  floating* s3, const floating* g, Py_ssize_t n,
                                  const double* hp) noexcept nogil:
    # TF's sparse kernel: var = (clamp(linear, -l1e, l1e) - linear) / y
    _ftrl_rows(v, s1, s2, g, n, hp, 0)


cdef inline double _rowwise_squares(const floating* g, Py_ssize_t n) noexcept nogil:
    # sum_j g_j**2 in double, in order from zero: one chain of n dependent
    # additions (each square is exact in double)
    cdef double total = 0
    cdef Py_ssize_t j
    for j in range(n):
        if floating is float:
            total = total + sg_rowwise_square_f32(g[j])
        else:
            total = total + sg_rowwise_square_f64(g[j])
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
        if floating is float:
            t0 = t0 + sg_rowwise_square_f32(g0[j])
            t1 = t1 + sg_rowwise_square_f32(g1[j])
            t2 = t2 + sg_rowwise_square_f32(g2[j])
            t3 = t3 + sg_rowwise_square_f32(g3[j])
        else:
            t0 = t0 + sg_rowwise_square_f64(g0[j])
            t1 = t1 + sg_rowwise_square_f64(g1[j])
            t2 = t2 + sg_rowwise_square_f64(g2[j])
            t3 = t3 + sg_rowwise_square_f64(g3[j])
    totals[0] = t0
    totals[1] = t1
    totals[2] = t2
    totals[3] = t3


cdef inline void _rowwise_adagrad_apply(floating* v, floating* s1, const floating* g,
                                        Py_ssize_t n, const double* hp,
                                        double total) noexcept nogil:
    # the update of _rowwise_adagrad_row given its row's sum of squares
    cdef sg_hp_f32 k32
    cdef sg_hp_f64 k64
    cdef floating mult
    cdef Py_ssize_t j
    if floating is float:
        sg_hp_load_f32(&k32, hp, 2)
        mult = sg_rowwise_adagrad_mult_f32(&k32, s1, total, n)
        for j in range(n):
            sg_rowwise_adagrad_step_f32(&v[j], mult, g[j])
    else:
        sg_hp_load_f64(&k64, hp, 2)
        mult = sg_rowwise_adagrad_mult_f64(&k64, s1, total, n)
        for j in range(n):
            sg_rowwise_adagrad_step_f64(&v[j], mult, g[j])


cdef inline void _rowwise_adagrad_row(floating* v, floating* s1, floating* s2,
                                      floating* s3, const floating* g, Py_ssize_t n,
                                      const double* hp) noexcept nogil:
    # hp: lr, epsilon; s1 points at the row's single accumulator.
    _rowwise_adagrad_apply(v, s1, g, n, hp, _rowwise_squares(g, n))


cdef inline void _lamb_block(
    const void* k, const floating* v, floating* s1, floating* s2,
    const floating* g, floating s, floating* u, double* lanes, Py_ssize_t width,
) noexcept nogil:
    # One block of width <= SG_LAMB_LANES values of a segment: m (s1) and v
    # (s2) from g * s, the directions into u, and the squares of the weights
    # and of the directions added to lanes[0:LANES] and lanes[LANES:2 LANES].
    # A whole block takes a loop of constant length, vectorised whole.
    cdef Py_ssize_t lane
    if width == SG_LAMB_LANES:
        for lane in range(SG_LAMB_LANES):
            if floating is float:
                u[lane] = sg_lamb_moments_f32(<const sg_hp_f32*>k, &s1[lane],
                                              &s2[lane], g[lane] * s)
                lanes[lane] = lanes[lane] + sg_rowwise_square_f32(v[lane])
                lanes[SG_LAMB_LANES + lane] = (lanes[SG_LAMB_LANES + lane]
                                               + sg_rowwise_square_f32(u[lane]))
            else:
                u[lane] = sg_lamb_moments_f64(<const sg_hp_f64*>k, &s1[lane],
                                              &s2[lane], g[lane] * s)
                lanes[lane] = lanes[lane] + sg_rowwise_square_f64(v[lane])
                lanes[SG_LAMB_LANES + lane] = (lanes[SG_LAMB_LANES + lane]
                                               + sg_rowwise_square_f64(u[lane]))
    else:
        for lane in range(width):
            if floating is float:
                u[lane] = sg_lamb_moments_f32(<const sg_hp_f32*>k, &s1[lane],
                                              &s2[lane], g[lane] * s)
                lanes[lane] = lanes[lane] + sg_rowwise_square_f32(v[lane])
                lanes[SG_LAMB_LANES + lane] = (lanes[SG_LAMB_LANES + lane]
                                               + sg_rowwise_square_f32(u[lane]))
            else:
                u[lane] = sg_lamb_moments_f64(<const sg_hp_f64*>k, &s1[lane],
                                              &s2[lane], g[lane] * s)
                lanes[lane] = lanes[lane] + sg_rowwise_square_f64(v[lane])
                lanes[SG_LAMB_LANES + lane] = (lanes[SG_LAMB_LANES + lane]
                                               + sg_rowwise_square_f64(u[lane]))


cdef inline void _lamb_first_pass(
    floating* v, floating* s1, floating* s2, const floating* g, Py_ssize_t n,
    const void* k, floating s, double* sums, floating* ubuf,
) noexcept nogil:
    # Lamb's first pass over a segment of n values: m (s1) and v (s2) from
    # g * s (exact when s is 1), and the segment's sums of squares of the
    # weights and of the directions into sums[0], sums[1], in the order of
    # sg_training.h (SG_LAMB_LANES lanes, value j in lane j % lanes, each lane
    # in order from zero, then the lanes pairwise: the GPU's order).  k: the
    # loaded hyper-parameters (sg_hp_f32 or sg_hp_f64).  The directions go
    # through ubuf (LAMB_PIECE values, reused along the segment); for n <=
    # LAMB_PIECE it keeps them all for the second pass.
    cdef double lanes[2 * SG_LAMB_LANES]      # the weights', the directions'
    cdef Py_ssize_t j = 0, lane
    for lane in range(2 * SG_LAMB_LANES):
        lanes[lane] = 0
    while j < n:
        _lamb_block(k, &v[j], &s1[j], &s2[j], &g[j], s, &ubuf[j % LAMB_PIECE],
                    lanes, min(n - j, SG_LAMB_LANES))
        j = j + SG_LAMB_LANES
    sums[0] = sg_lamb_total(lanes)
    sums[1] = sg_lamb_total(lanes + SG_LAMB_LANES)


cdef inline void _lamb_steps(floating* v, const floating* s1, const floating* s2,
                             Py_ssize_t n, const void* k, floating scale,
                             const floating* ubuf) noexcept nogil:
    # Lamb's second pass: each weight moves by scale times its direction,
    # read from ubuf (not NULL: n <= LAMB_PIECE, the first pass kept them) or
    # recomputed from m and v (the same bits).
    cdef Py_ssize_t j
    if ubuf != NULL:
        for j in range(n):
            if floating is float:
                sg_lamb_step_f32(&v[j], scale, ubuf[j])
            else:
                sg_lamb_step_f64(&v[j], scale, ubuf[j])
    elif floating is float:
        for j in range(n):
            sg_lamb_step_f32(&v[j], scale, sg_lamb_direction_f32(
                <const sg_hp_f32*>k, &s1[j], &s2[j]))
    else:
        for j in range(n):
            sg_lamb_step_f64(&v[j], scale, sg_lamb_direction_f64(
                <const sg_hp_f64*>k, &s1[j], &s2[j]))


cdef inline floating _lamb_scale(const void* k, double w2, double u2,
                                 floating kind) noexcept nogil:
    # lr * ratio from a segment's sums (`kind` picks the value type)
    if floating is float:
        return sg_lamb_scale_f32(<const sg_hp_f32*>k, w2, u2)
    else:
        return sg_lamb_scale_f64(<const sg_hp_f64*>k, w2, u2)


cdef inline void _lamb_row(floating* v, floating* s1, floating* s2,
                           floating* s3, const floating* g, Py_ssize_t n,
                           const double* hp) noexcept nogil:
    # hp: lr, beta1, beta2, epsilon, beta1_power, beta2_power; s1 m, s2 v.
    # One row is one segment: its own norms.
    cdef double sums[2]
    cdef floating ubuf[LAMB_PIECE]
    cdef sg_hp_f32 k32
    cdef sg_hp_f64 k64
    cdef const void* k
    if floating is float:
        sg_hp_load_f32(&k32, hp, 6)
        k = &k32
    else:
        sg_hp_load_f64(&k64, hp, 6)
        k = &k64
    _lamb_first_pass(v, s1, s2, g, n, k, 1, sums, ubuf)
    _lamb_steps(v, s1, s2, n, k, _lamb_scale(k, sums[0], sums[1], v[0]),
                ubuf if n <= LAMB_PIECE else NULL)
