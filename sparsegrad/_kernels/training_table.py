"""The one table of the training ops' kernels (pure data, no imports).

Read at build time by setup.py, which renders ``_training.pxi.tp`` (the
Cython row loops and drivers) from it, and at run time by the compiled module
``sparsegrad._kernels.training`` (which re-exports :data:`HYPERPARAMETERS` and
:data:`KERNELS`) and by ``sparsegrad._cuda.training``, which generates the
CUDA kernels from :data:`KERNELS`.  It imports nothing, so the CUDA layer
reads it without loading a CPU kernel.

Each entry of :data:`OPS`: (name, dense row function, sparse row function for
R > 1 or None for an op without a sparse form, sparse function for R == 1 or
None when it is the R > 1 one, the number of slots, the names of the
hyper-parameters in ``hp``, in order).  A row function ``_<fn>`` updates
``n`` contiguous elements of var and its slots; its arithmetic is the element
function ``sg_<fn>`` of ``include/sg_training.h``, and the Cython loop around
it is generated (FTRL's, row-wise Adagrad's and Lamb's loops are written by
hand in ``_training_rows.pxi``).  Hyper-parameters carry TensorFlow's raw-op argument
names; ``alpha`` of Adam and AdaMax is the step the Python layer derives from
lr and the beta powers.
"""

OPS = [
    ("gradient_descent", "_gd_row", "_gd_row", None, 0, ("alpha",)),
    ("proximal_gradient_descent", "_proximal_gd_row", "_proximal_gd_row",
     "_proximal_gd_scalar", 0, ("alpha", "l1", "l2")),
    ("adadelta", "_adadelta_row", "_adadelta_row", None, 2,
     ("lr", "rho", "epsilon")),
    ("adagrad", "_adagrad_dense_row", "_adagrad_dense_row", "_adagrad_scalar", 1,
     ("lr", "update_slots")),
    ("adagrad_v2", "_adagrad_v2_row", "_adagrad_v2_row", None, 1,
     ("lr", "epsilon", "update_slots")),
    ("proximal_adagrad", "_proximal_adagrad_row", "_proximal_adagrad_row",
     "_proximal_adagrad_scalar", 1, ("lr", "l1", "l2")),
    ("adagrad_da", "_adagrad_da_dense_row", "_adagrad_da_sparse_row",
     "_adagrad_da_scalar", 2, ("lr", "l1", "l2", "global_step")),
    ("ftrl", "_ftrl_dense_row", "_ftrl_sparse_row", "_ftrl_scalar", 2,
     ("lr", "l1", "l2", "l2_shrinkage", "lr_power", "multiply_linear_by_lr",
      "is_v2")),
    ("momentum", "_momentum_dense_row", "_momentum_sparse_row", None, 1,
     ("lr", "momentum", "use_nesterov")),
    ("keras_momentum", "_keras_momentum_row", "_keras_momentum_row", None, 1,
     ("lr", "momentum", "use_nesterov")),
    ("adam", "_adam_row", "_adam_row", None, 2,
     ("alpha", "beta1", "beta2", "epsilon", "use_nesterov")),
    ("adam_with_amsgrad", "_amsgrad_row", None, None, 3,
     ("alpha", "beta1", "beta2", "epsilon")),
    ("ada_max", "_ada_max_row", "_ada_max_row", None, 2,
     ("alpha", "beta1", "beta2", "epsilon")),
    ("rms_prop", "_rms_prop_dense_row", "_rms_prop_sparse_row", None, 2,
     ("lr", "rho", "momentum", "epsilon")),
    ("centered_rms_prop", "_centered_rms_prop_dense_row",
     "_centered_rms_prop_sparse_row", None, 3, ("lr", "rho", "momentum", "epsilon")),
    ("add_sign", "_add_sign_row", None, None, 1,
     ("lr", "alpha", "sign_decay", "beta")),
    ("power_sign", "_power_sign_row", None, None, 1,
     ("lr", "logbase", "sign_decay", "beta")),
    ("rowwise_adagrad", None, "_rowwise_adagrad_row", None, 1, ("lr", "epsilon")),
    ("lion", "_lion_row", "_lion_row", None, 1, ("lr", "beta1", "beta2")),
    ("nadam", "_nadam_row", "_nadam_row", None, 2,
     ("lr", "beta1", "beta2", "epsilon", "u_t", "u_t_1", "u_product",
      "beta2_power")),
    ("lamb", None, "_lamb_row", None, 2,
     ("lr", "beta1", "beta2", "epsilon", "beta1_power", "beta2_power")),
]
# Ops whose dense driver and GPU kernels are their own, not the generic ones
# (their CPU sparse drivers are the generic ones around their row function).
OWN_DRIVERS = {"rowwise_adagrad", "lamb"}
# Row functions whose loops _training_rows.pxi writes by hand.
HAND_LOOPS = {"_ftrl_dense_row", "_ftrl_sparse_row", "_rowwise_adagrad_row",
              "_lamb_row"}


def element_functions(ops=OPS):
    """{row function: number of hyper-parameters} of every row function of
    the table, in table order."""
    out = {}
    for _, dense_fn, sparse_fn, scalar_fn, _, hp_names in ops:
        for fn in (dense_fn, sparse_fn, scalar_fn):
            if fn:
                out.setdefault(fn, len(hp_names))
    return out


#: The hyper-parameters each op reads from ``hp``, by name, in order (for
#: ``dense_<op>``, ``sparse_<op>`` and ``sparse_<op>_by_row``).  Flags (e.g.
#: ``use_nesterov``) are 0 or 1.
HYPERPARAMETERS = {name: hp_names for name, _, _, _, _, hp_names in OPS}

#: The element-wise ops' kernels, from which ``sparsegrad._cuda.training``
#: generates its own: (name, dense element function, sparse one, R == 1 one
#: or None when it is the sparse one, number of slots); each function is
#: ``sg_<fn>`` of include/sg_training.h.
KERNELS = tuple(
    (name, *(fn[1:] if fn else None for fn in (dense_fn, sparse_fn, scalar_fn)), slots)
    for name, dense_fn, sparse_fn, scalar_fn, slots, _ in OPS
    if name not in OWN_DRIVERS
)
