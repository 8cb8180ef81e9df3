/* The optimizer formulas of the training ops, one per element, shared by the
 * Cython kernels (sparsegrad/_kernels/_training.pxi.tp, _training_rows.pxi)
 * and the CUDA ones (sparsegrad/_cuda/training.cu).  See sg_base.h for the
 * templates and the arithmetic rules.
 *
 * An *element function* updates one element of var and of up to three slots
 * (s1..s3, TensorFlow's input order) from one gradient value g:
 *
 *     SG_FN void SG_F(sg_<fn>)(const SG_T(sg_hp)* k, SG_S* v, SG_S* s1,
 *                              SG_S* s2, SG_S* s3, SG_M g)
 *
 * Unused slots alias var: a function touches only the slots its formula
 * names.  The hyper-parameters arrive in `k`, loaded once per row (CPU) or per
 * thread (GPU) by sg_hp_load: each is exactly representable in the value
 * type and read back into it (k->t[i]); k->d[i] keeps the float64 as given
 * (flags, and the few values that the reference takes in another type).
 * Each statement follows the reference's parenthesisation
 * (reference/training_ops.md), rounding to the value type where it rounds.
 *
 * The OPS table of sparsegrad/_kernels/training_table.py names, for each op,
 * its element functions (dense, sparse, R == 1) and their slots; from it come
 * the Cython drivers, the CUDA kernels and HYPERPARAMETERS.
 */
#ifdef SG_S
/* ---- templated section ------------------------------------------------- */

typedef struct {
    SG_M t[SG_N_HP];    /* the hyper-parameters in the value type */
    double d[SG_N_HP];  /* and as given */
} SG_T(sg_hp);

#ifdef __cplusplus
template <> struct sg_hp_of<SG_S> { typedef SG_T(sg_hp) type; };
#endif

/* k from the first n (<= SG_N_HP) float64 hyper-parameters of hp. */
SG_FN void SG_F(sg_hp_load)(SG_T(sg_hp)* k, const double* hp, int n) {
    for (int i = 0; i < n; ++i) {
        k->t[i] = (SG_M)hp[i];
        k->d[i] = hp[i];
    }
}

#define SG_ELEMENT(fn)                                                        \
    SG_FN void SG_F(fn)(const SG_T(sg_hp)* k, SG_S* v, SG_S* s1, SG_S* s2,    \
                        SG_S* s3, SG_M g)

/* hp: alpha */
SG_ELEMENT(sg_gd_row) {
    SG_M alpha = k->t[0];
    v[0] = v[0] - g * alpha;
}

#ifndef SG_LANE /* branches per element, or double arithmetic */
/* hp: alpha, l1, l2 */
SG_ELEMENT(sg_proximal_gd_row) {
    SG_M alpha = k->t[0], l1 = k->t[1], l2 = k->t[2];
    SG_M den = (SG_M)1 + l2 * alpha, shrink = alpha * l1;
    SG_M p = v[0] - g * alpha;
    if (l1 > 0)
        v[0] = (sg_sign(p) * sg_max(sg_abs(p) - shrink, (SG_M)0)) / den;
    else
        v[0] = p / den;
}

/* R == 1: the denominator and the division in double. */
SG_ELEMENT(sg_proximal_gd_scalar) {
    SG_M alpha = k->t[0], l1 = k->t[1], l2 = k->t[2];
    SG_M l2_alpha = l2 * alpha, num;
    double den = 1.0 + (double)l2_alpha;
    SG_M p = v[0] - alpha * g;
    if (l1 > 0)
        num = sg_sign(p) * sg_max(sg_abs(p) - alpha * l1, (SG_M)0);
    else
        num = p;
    v[0] = (SG_M)((double)num / den);
}

#endif /* SG_LANE */

/* hp: lr, rho, epsilon; s1 accum, s2 accum_update */
SG_ELEMENT(sg_adadelta_row) {
    SG_M lr = k->t[0], rho = k->t[1], epsilon = k->t[2];
    SG_M c = 1 - rho, u;
    s1[0] = s1[0] * rho + (g * g) * c;
    u = (sg_sqrt(s2[0] + epsilon) * sg_rsqrt(s1[0] + epsilon)) * g;
    v[0] = v[0] - u * lr;
    s2[0] = s2[0] * rho + (u * u) * c;
}

/* hp: lr, update_slots; s1 accum */
SG_ELEMENT(sg_adagrad_dense_row) {
    SG_M lr = k->t[0];
    if (k->d[1] != 0) s1[0] = s1[0] + g * g;
    v[0] = v[0] - (g * lr) * sg_rsqrt(s1[0]);
}

/* R == 1: an exact division instead of rsqrt. */
SG_ELEMENT(sg_adagrad_scalar) {
    SG_M lr = k->t[0];
    if (k->d[1] != 0) s1[0] = s1[0] + g * g;
    v[0] = v[0] - (lr * g) / sg_sqrt(s1[0]);
}

/* hp: lr, epsilon, update_slots; s1 accum */
SG_ELEMENT(sg_adagrad_v2_row) {
    SG_M lr = k->t[0], epsilon = k->t[1];
    if (k->d[2] != 0) s1[0] = s1[0] + g * g;
    v[0] = v[0] - (g * lr) / (sg_sqrt(s1[0]) + epsilon);
}

#ifndef SG_LANE /* branches per element, or double arithmetic */
/* hp: lr, l1, l2; s1 accum */
SG_ELEMENT(sg_proximal_adagrad_row) {
    SG_M lr = k->t[0], l1 = k->t[1], l2 = k->t[2];
    SG_M eta, p, den;
    s1[0] = s1[0] + g * g;
    eta = lr * sg_rsqrt(s1[0]);
    p = v[0] - g * eta;
    den = (SG_M)1 + l2 * eta;
    if (l1 > 0)
        v[0] = (sg_sign(p) * sg_max(sg_abs(p) - eta * l1, (SG_M)0)) / den;
    else
        v[0] = p / den;
}

/* R == 1: exact division for eta; the final division in double. */
SG_ELEMENT(sg_proximal_adagrad_scalar) {
    SG_M lr = k->t[0], l1 = k->t[1], l2 = k->t[2];
    SG_M eta, p, num, l2_eta;
    s1[0] = s1[0] + g * g;
    eta = lr / sg_sqrt(s1[0]);
    p = v[0] - eta * g;
    if (l1 > 0)
        num = sg_sign(p) * sg_max(sg_abs(p) - eta * l1, (SG_M)0);
    else
        num = p;
    l2_eta = l2 * eta;
    v[0] = (SG_M)((double)num / (1.0 + (double)l2_eta));
}

/* hp: lr, l1, l2, global_step; s1 gradient_accumulator, s2 squared one */
SG_ELEMENT(sg_adagrad_da_dense_row) {
    SG_M lr = k->t[0], l1 = k->t[1], l2 = k->t[2];
    float global_step = (float)k->d[3];     /* always a 32-bit float, as TF */
    SG_M gs_t = (SG_M)global_step;
    SG_M gs_lr = gs_t * lr;
    SG_M gs_l1 = gs_t * l1;
    SG_M neg_lr = lr * (-1);
    SG_M den;
    s1[0] = s1[0] + g;
    s2[0] = s2[0] + g * g;
    den = l2 * gs_lr + sg_sqrt(s2[0]);
    if (l1 > 0)
        v[0] = ((neg_lr * sg_sign(s1[0])) * sg_max(sg_abs(s1[0]) - gs_l1, (SG_M)0)) /
               den;
    else
        v[0] = ((lr * s1[0]) * (-1)) / den;
}

SG_ELEMENT(sg_adagrad_da_sparse_row) {
    SG_M lr = k->t[0], l1 = k->t[1], l2 = k->t[2];
    SG_M global_step = k->t[3];
    SG_M gs_lr = global_step * lr;
    s1[0] = s1[0] + g;
    s2[0] = s2[0] + g * g;
    if (l1 > 0)
        v[0] = ((-sg_sign(s1[0])) * sg_max(sg_abs(s1[0]) / global_step - l1, (SG_M)0)) /
               (l2 + sg_sqrt(s2[0]) / gs_lr);
    else
        v[0] = (-(s1[0] / global_step)) / (l2 + sg_sqrt(s2[0]) / gs_lr);
}

/* R == 1: computed in double, rounded to the value type where TF rounds. */
SG_ELEMENT(sg_adagrad_da_scalar) {
    double gd = (double)g;
    double lr = (double)k->t[0], l1 = (double)k->t[1];
    double l2 = (double)k->t[2], global_step = k->d[3];
    double s, gs_l1, gs_l2_lr;
    s1[0] = (SG_M)((double)s1[0] + gd);
    s2[0] = (SG_M)((double)s2[0] + gd * gd);
    s = (double)sg_sqrt(s2[0]);
    gs_l1 = global_step * l1;
    gs_l2_lr = (global_step * l2) * lr;
    if (l1 > 0)
        v[0] = (SG_M)((((double)sg_sign(-s1[0]) * lr) *
                       sg_max((double)sg_abs(s1[0]) - gs_l1, 0.0)) / (gs_l2_lr + s));
    else
        v[0] = (SG_M)(((double)(-s1[0]) * lr) / (gs_l2_lr + s));
}

/* FTRL (hp: lr, l1, l2, l2_shrinkage, lr_power, multiply_linear_by_lr,
 * is_v2; s1 accum, s2 linear), with the flags as arguments: the CPU's loops
 * pass them as constants (one branch-free loop each, which vectorises).
 * use_pow: lr_power is not -0.5 (pow instead of square roots); dense: TF's
 * dense kernel, a select, or its sparse one, a clamp (NaN when y == 0). */
SG_FN void SG_F(sg_ftrl)(const SG_T(sg_hp)* k, SG_S* v, SG_S* s1, SG_S* s2,
                         SG_M g, int use_pow, int mlr, int v2, int dense) {
    SG_M lr = k->t[0], l1 = k->t[1], l2 = k->t[2], l2_shrinkage = k->t[3];
    SG_M lr_power = k->t[4];
    SG_M two_l2 = (SG_M)2 * l2, two_shrink = (SG_M)2 * l2_shrinkage;
    SG_M l1_lr = l1 * lr;
    SG_M two_l2_lr = two_l2 * lr;
    SG_M vj = v[0], gs, na, pna, pa, lin, l1e, y, q;
    gs = v2 ? g + two_shrink * vj : g;
    na = s1[0] + g * g;
    if (use_pow) {
        pna = sg_pow(na, -lr_power);
        pa = sg_pow(s1[0], -lr_power);
    } else {
        pna = sg_sqrt(na);
        pa = sg_sqrt(s1[0]);
    }
    if (mlr) {
        lin = s2[0] + (gs * lr - (pna - pa) * vj);
        l1e = l1_lr;
        y = pna + two_l2_lr;
    } else {
        lin = s2[0] + (gs - ((pna - pa) / lr) * vj);
        l1e = l1;
        y = pna / lr + two_l2;
    }
    if (dense) {
        q = (l1e * sg_sign(lin) - lin) / y;
        v[0] = sg_abs(lin) > l1e ? q : (SG_M)0;
    } else {
        v[0] = (sg_clamp(lin, -l1e, l1e) - lin) / y;
    }
    s2[0] = lin;
    s1[0] = na;
}

SG_ELEMENT(sg_ftrl_dense_row) {
    SG_F(sg_ftrl)(k, v, s1, s2, g, k->t[4] != -0.5, k->d[5] != 0, k->d[6] != 0, 1);
}

SG_ELEMENT(sg_ftrl_sparse_row) {
    SG_F(sg_ftrl)(k, v, s1, s2, g, k->t[4] != -0.5, k->d[5] != 0, k->d[6] != 0, 0);
}

/* R == 1: pow even for lr_power == -0.5 in sigma, (linear + g_s) first. */
SG_ELEMENT(sg_ftrl_scalar) {
    SG_M lr = k->t[0], l1 = k->t[1], l2 = k->t[2], l2_shrinkage = k->t[3];
    SG_M lr_power = k->t[4];
    int mlr = k->d[5] != 0, is_v2 = k->d[6] != 0;
    SG_M gs, na, sig, lin, q, l1e;
    gs = is_v2 ? g + ((SG_M)2 * l2_shrinkage) * v[0] : g;
    na = s1[0] + g * g;
    sig = sg_pow(na, -lr_power) - sg_pow(s1[0], -lr_power);
    if (mlr) {
        lin = (s2[0] + gs * lr) - sig * v[0];
    } else {
        sig = sig / lr;
        lin = (s2[0] + gs) - sig * v[0];
    }
    q = lr_power == -0.5 ? sg_sqrt(na) : sg_pow(na, -lr_power);
    if (mlr) {
        q = q + ((SG_M)2 * l2) * lr;
        l1e = l1 * lr;
    } else {
        q = q / lr + (SG_M)2 * l2;
        l1e = l1;
    }
    v[0] = (sg_clamp(lin, -l1e, l1e) - lin) / q;
    s1[0] = na;
    s2[0] = lin;
}

#endif /* SG_LANE */

/* hp: lr, momentum, use_nesterov; s1 accum */
SG_ELEMENT(sg_momentum_dense_row) {
    SG_M lr = k->t[0], momentum = k->t[1];
    s1[0] = s1[0] * momentum + g;
    if (k->d[2] != 0)
        v[0] = v[0] - (g * lr + (s1[0] * momentum) * lr);
    else
        v[0] = v[0] - s1[0] * lr;
}

SG_ELEMENT(sg_momentum_sparse_row) {
    SG_M lr = k->t[0], momentum = k->t[1];
    SG_M lr_mom = lr * momentum;
    s1[0] = s1[0] * momentum + g;
    if (k->d[2] != 0)
        v[0] = v[0] - (lr * g + lr_mom * s1[0]);
    else
        v[0] = v[0] - lr * s1[0];
}

/* hp: lr, momentum, use_nesterov; s1 accum (the velocity) */
SG_ELEMENT(sg_keras_momentum_row) {
    SG_M lr = k->t[0], momentum = k->t[1];
    s1[0] = s1[0] * momentum - g * lr;
    if (k->d[2] != 0)
        v[0] = v[0] + (s1[0] * momentum - g * lr);
    else
        v[0] = v[0] + s1[0];
}

/* hp: alpha, beta1, beta2, epsilon, use_nesterov; s1 m, s2 v.  The Python
 * layer computes alpha = (lr * sqrt(1 - beta2_power)) / (1 - beta1_power) in
 * the value type, once per call. */
SG_ELEMENT(sg_adam_row) {
    SG_M alpha = k->t[0], beta1 = k->t[1], beta2 = k->t[2], epsilon = k->t[3];
    SG_M c1 = (SG_M)1 - beta1, c2 = (SG_M)1 - beta2;
    s1[0] = s1[0] + (g - s1[0]) * c1;
    s2[0] = s2[0] + (g * g - s2[0]) * c2;
    if (k->d[4] != 0)
        v[0] = v[0] - ((g * c1 + beta1 * s1[0]) * alpha) / (sg_sqrt(s2[0]) + epsilon);
    else
        v[0] = v[0] - (s1[0] * alpha) / (sg_sqrt(s2[0]) + epsilon);
}

/* hp: alpha (as Adam's), beta1, beta2, epsilon; s1 m, s2 v, s3 vhat */
SG_ELEMENT(sg_amsgrad_row) {
    SG_M alpha = k->t[0], beta1 = k->t[1], beta2 = k->t[2], epsilon = k->t[3];
    SG_M c1 = (SG_M)1 - beta1, c2 = (SG_M)1 - beta2;
    s1[0] = s1[0] + (g - s1[0]) * c1;
    s2[0] = s2[0] + (g * g - s2[0]) * c2;
    s3[0] = sg_max(s3[0], s2[0]);
    v[0] = v[0] - (s1[0] * alpha) / (sg_sqrt(s3[0]) + epsilon);
}

/* hp: alpha, beta1, beta2, epsilon; s1 m, s2 v.  The Python layer computes
 * alpha = lr / (1 - beta1_power) in the value type. */
SG_ELEMENT(sg_ada_max_row) {
    SG_M alpha = k->t[0], beta1 = k->t[1], beta2 = k->t[2], epsilon = k->t[3];
    SG_M c1 = (SG_M)1 - beta1;
    s1[0] = s1[0] + (g - s1[0]) * c1;
    s2[0] = sg_max(beta2 * s2[0], sg_abs(g));
    v[0] = v[0] - alpha * (s1[0] / (s2[0] + epsilon));
}

/* hp: lr, rho, momentum, epsilon; s1 ms, s2 mom */
SG_ELEMENT(sg_rms_prop_dense_row) {
    SG_M lr = k->t[0], rho = k->t[1], momentum = k->t[2], epsilon = k->t[3];
    SG_M c = (SG_M)1 - rho;
    s1[0] = s1[0] + (g * g - s1[0]) * c;
    s2[0] = s2[0] * momentum + (g * lr) / sg_sqrt(s1[0] + epsilon);
    v[0] = v[0] - s2[0];
}

SG_ELEMENT(sg_rms_prop_sparse_row) {
    SG_M lr = k->t[0], rho = k->t[1], momentum = k->t[2], epsilon = k->t[3];
    SG_M c = (SG_M)1 - rho;
    s1[0] = s1[0] * rho + (g * g) * c;
    s2[0] = s2[0] * momentum + (sg_rsqrt(s1[0] + epsilon) * lr) * g;
    v[0] = v[0] - s2[0];
}

/* hp: lr, rho, momentum, epsilon; s1 mg, s2 ms, s3 mom */
SG_ELEMENT(sg_centered_rms_prop_dense_row) {
    SG_M lr = k->t[0], rho = k->t[1], momentum = k->t[2], epsilon = k->t[3];
    SG_M c = (SG_M)1 - rho, den;
    s2[0] = s2[0] + (g * g - s2[0]) * c;
    s1[0] = s1[0] + (g - s1[0]) * c;
    den = (s2[0] - s1[0] * s1[0]) + epsilon;
    s3[0] = s3[0] * momentum + (g * lr) / sg_sqrt(den);
    v[0] = v[0] - s3[0];
}

SG_ELEMENT(sg_centered_rms_prop_sparse_row) {
    SG_M lr = k->t[0], rho = k->t[1], momentum = k->t[2], epsilon = k->t[3];
    SG_M c = (SG_M)1 - rho, den;
    s2[0] = s2[0] * rho + (g * g) * c;
    s1[0] = s1[0] * rho + g * c;
    den = (s2[0] + epsilon) - s1[0] * s1[0];
    s3[0] = s3[0] * momentum + (sg_rsqrt(den) * lr) * g;
    v[0] = v[0] - s3[0];
}

/* hp: lr, alpha, sign_decay, beta; s1 m */
SG_ELEMENT(sg_add_sign_row) {
    SG_M lr = k->t[0], alpha = k->t[1], sign_decay = k->t[2], beta = k->t[3];
    SG_M c = (SG_M)1 - beta, s;
    s1[0] = s1[0] * beta + g * c;
    s = sg_sign(g) * sg_sign(s1[0]);
    v[0] = v[0] - (lr * (alpha + sign_decay * s)) * g;
}

#ifndef SG_LANE /* branches per element, or double arithmetic */
/* hp: lr, logbase, sign_decay, beta; s1 m.  s is -1, 0, +1 or NaN, so
 * exp(log_decay * s) takes three values, computed with the same arguments
 * (so the same bits) as per element; a CPU loop computes them once. */
SG_ELEMENT(sg_power_sign_row) {
    SG_M lr = k->t[0], logbase = k->t[1], sign_decay = k->t[2], beta = k->t[3];
    SG_M c = (SG_M)1 - beta, log_decay = logbase * sign_decay, s, e;
    SG_M e_pos = sg_exp(log_decay * 1), e_neg = sg_exp(log_decay * (-1));
    SG_M e_zero = sg_exp(log_decay * 0);
    s1[0] = s1[0] * beta + g * c;
    s = sg_sign(g) * sg_sign(s1[0]);
    e = s > 0 ? e_pos : (s < 0 ? e_neg : (s == 0 ? e_zero : s));
    v[0] = v[0] - (lr * e) * g;
}

#endif /* SG_LANE */

/* hp: lr, beta1, beta2; s1 m.  Keras 3's Lion, in its order: the step's
 * sign from the interpolation of m and g, then m's own decay. */
SG_ELEMENT(sg_lion_row) {
    SG_M lr = k->t[0], beta1 = k->t[1], beta2 = k->t[2];
    SG_M c1 = (SG_M)1 - beta1, c2 = (SG_M)1 - beta2;
    v[0] = v[0] - lr * sg_sign(s1[0] * beta1 + g * c1);
    s1[0] = s1[0] * beta2 + g * c2;
}

/* hp: lr, beta1, beta2, epsilon, u_t, u_t_1, u_product, beta2_power; s1 m,
 * s2 v.  Keras 3's Nadam in its operation order: u_t and u_t_1 are the
 * momentum schedule at steps t and t + 1, u_product the product of u_1..u_t
 * and beta2_power beta2**t, each rounded to the value type by the Python
 * layer; the differences from 1 and u_product * u_t_1 round as Keras's
 * scalar ops do. */
SG_ELEMENT(sg_nadam_row) {
    SG_M lr = k->t[0], beta1 = k->t[1], beta2 = k->t[2], epsilon = k->t[3];
    SG_M u_t = k->t[4], u_t_1 = k->t[5], u_product = k->t[6];
    SG_M beta2_power = k->t[7];
    SG_M c1 = (SG_M)1 - beta1, c2 = (SG_M)1 - beta2;
    SG_M den_next = (SG_M)1 - u_product * u_t_1, den_now = (SG_M)1 - u_product;
    SG_M c_now = (SG_M)1 - u_t, den_v = (SG_M)1 - beta2_power;
    SG_M m_hat, v_hat;
    s1[0] = s1[0] + (g - s1[0]) * c1;
    s2[0] = s2[0] + (g * g - s2[0]) * c2;
    m_hat = (u_t_1 * s1[0]) / den_next + (c_now * g) / den_now;
    v_hat = s2[0] / den_v;
    v[0] = v[0] - (m_hat * lr) / (sg_sqrt(v_hat) + epsilon);
}

#ifndef SG_LANE /* branches per element, or double arithmetic */
/* Lamb (hp: lr, beta1, beta2, epsilon, beta1_power, beta2_power; s1 m, s2 v),
 * Keras 3's in its operation order.  The moments' factors 1 - beta are taken
 * in double from beta as given and rounded once (Keras subtracts the Python
 * floats); the bias corrections 1 - beta_power in the value type (Keras's
 * powers are tensors).  The step is the direction
 *     u = (m / (1 - beta1_power)) / (sqrt(v / (1 - beta2_power)) + epsilon)
 * times lr * ratio, ratio = |var| / |u| over a segment (the whole variable,
 * or one row for the sparse ops; 1 where either norm is not > 0), so each
 * segment takes two passes: sg_lamb_moments updates m and v and returns u,
 * whose square and the weight's go into the segment's sums
 * (sg_rowwise_square, in the order SG_LAMB_LANES defines); sg_lamb_scale
 * makes lr * ratio from the sums; sg_lamb_step moves the weight by u recomputed from m and v (the same
 * bits).  var's norm is that of its values before the step. */
SG_FN SG_M SG_F(sg_lamb_direction)(const SG_T(sg_hp)* k, const SG_S* m,
                                   const SG_S* v) {
    SG_M epsilon = k->t[3];
    SG_M den1 = (SG_M)1 - k->t[4], den2 = (SG_M)1 - k->t[5];
    return (m[0] / den1) / (sg_sqrt(v[0] / den2) + epsilon);
}

SG_FN SG_M SG_F(sg_lamb_moments)(const SG_T(sg_hp)* k, SG_S* m, SG_S* v, SG_M g) {
    SG_M c1 = (SG_M)(1.0 - k->d[1]), c2 = (SG_M)(1.0 - k->d[2]);
    m[0] = m[0] + (g - m[0]) * c1;
    v[0] = v[0] + (g * g - v[0]) * c2;
    return SG_F(sg_lamb_direction)(k, m, v);
}

/* lr * ratio from the segment's sums of squares of var and of u, each
 * rounded to the value type before its square root (Keras's float32 sums). */
SG_FN SG_M SG_F(sg_lamb_scale)(const SG_T(sg_hp)* k, double w2, double u2) {
    SG_M lr = k->t[0];
    SG_M w_norm = sg_sqrt((SG_M)w2), u_norm = sg_sqrt((SG_M)u2);
    SG_M ratio = (SG_M)1;
    if (w_norm > 0 && u_norm > 0) ratio = w_norm / u_norm;
    return ratio * lr;
}

SG_FN void SG_F(sg_lamb_step)(SG_S* w, SG_M scale, SG_M u) {
    w[0] = w[0] - scale * u;
}

/* Row-wise Adagrad (hp: lr, epsilon; one accumulator per row of n):
 *   accum += T(sum_j g_j**2 (in double, in column order, from zero) / n)
 *   var_j -= (lr / (sqrt(accum) + epsilon)) * g_j
 * The square of one value in double (exact for a float), also Lamb's: */
SG_FN double SG_F(sg_rowwise_square)(SG_M g) { return (double)g * (double)g; }

/* The accumulator's update from the row's sum of squares; the multiplier. */
SG_FN SG_M SG_F(sg_rowwise_adagrad_mult)(const SG_T(sg_hp)* k, SG_S* accum,
                                         double total, sg_i64 n) {
    SG_M lr = k->t[0], epsilon = k->t[1];
    accum[0] = accum[0] + (SG_M)(total / (double)n);
    return lr / (sg_sqrt(accum[0]) + epsilon);
}

SG_FN void SG_F(sg_rowwise_adagrad_step)(SG_S* v, SG_M mult, SG_M g) {
    v[0] = v[0] - mult * g;
}

#endif /* SG_LANE */

#undef SG_ELEMENT

#else
#ifndef SG_TRAINING_H
#define SG_TRAINING_H
#include "sg_base.h"

/* The most hyper-parameters an op has (the CUDA kernels take as many):
 * Nadam's eight. */
#define SG_N_HP 8

/* Lamb's sums of squares over a segment of n values, the same on the CPU and
 * the GPU: value j goes to lane j % SG_LAMB_LANES, each lane adds its values
 * in order from zero in double, and the lanes' totals are added pairwise
 * (sg_lamb_total).  The dense op's segments are chunks of SG_LAMB_CHUNK
 * values, whose totals are added in chunk order from zero. */
#define SG_LAMB_LANES 16
#define SG_LAMB_CHUNK 8192

/* The total of the SG_LAMB_LANES lane sums, which it overwrites: pairwise,
 * ((l0 + l1) + (l2 + l3)) + ..., a tree of depth log2(SG_LAMB_LANES) (a
 * short chain of dependent additions between a row's two passes). */
SG_FN double sg_lamb_total(double* lanes) {
    for (int width = SG_LAMB_LANES / 2; width >= 1; width /= 2)
        for (int i = 0; i < width; ++i) lanes[i] = lanes[2 * i] + lanes[2 * i + 1];
    return lanes[0];
}

#ifdef __cplusplus
/* sg_hp_of<T>::type: the hyper-parameter struct of value type T. */
template <typename T> struct sg_hp_of;
#endif

#include "sg_f32.h"
#include "sg_training.h"
#include "sg_f64.h"
#include "sg_training.h"
#include "sg_type_end.h"
#ifdef __cplusplus
/* The half storage types, every operation rounded (sg_half.h): TensorFlow's
 * half kernels. */
#include "sg_half.h"
#include "sg_f16.h"
#include "sg_training.h"
#include "sg_bf16.h"
#include "sg_training.h"
#ifndef __CUDACC__
/* Eight lanes at once (sg_half.h): the functions that branch on no element. */
#include "sg_lf16.h"
#include "sg_training.h"
#include "sg_lbf16.h"
#include "sg_training.h"
#endif
#include "sg_type_end.h"
#endif

#endif /* SG_TRAINING_H */
#endif /* SG_S */
