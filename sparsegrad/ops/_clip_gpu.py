"""The GPU side of the clip ops (``sparsegrad.ops.clip_ops``) for CuPy
arguments: norms that stay on the device, and scaling by factors the kernels
read from device memory, so that no norm makes a host round trip.  Each
function takes the call's GPU backend `be`.
"""

import numpy as np

from ..framework.backend import backend_of
from ..framework.dtypes import is_kernel_float

__all__ = ["onto_device_of", "device_norm", "device_scaled",
           "device_global_scale", "device_clip_by_norm"]


def onto_device_of(be, gradient, like):
    """`gradient` (on `be`) on the device of `like`: the gradient of a scalar
    or bound argument (clip_norm, use_norm, a clip_by_value bound) that lives
    on the other side of the clipped values.  Such an argument is read back by
    the forward pass already; its gradient crosses the same way (one small
    copy)."""
    there = backend_of(like)
    if there is be:
        return gradient
    return be.host(gradient) if be.on_gpu else there.asarray(gradient)


def device_norm(be, batches, dtype):
    """``(norm, total)`` of CuPy tensors given as the kernel batches of
    clip_ops' ``squares_batches`` (float16 values converted to float32 in the
    CPU's pieces): the float64 sum of squares (the CPU's bits: the batches'
    totals added on the device in the CPU's order) and its square root
    rounded once to `dtype`, both 0-d device arrays."""
    kernels = be.kernels("clip")
    wide = dtype if is_kernel_float(dtype) else np.dtype(np.float64)
    norm, total = kernels.norm_of_list(next(batches), wide)
    for batch in batches:
        total = total + kernels.sum_of_squares_list(batch, 1)
        norm = None
    if norm is None:
        norm = be.xp.sqrt(total).astype(wide)
    if wide != dtype:
        norm = norm.astype(dtype)  # float16: one rounding, as the CPU
    return norm, total


def device_scaled(be, x, cd):
    """``(x * cd[0]) / cd[1]`` (``x * cd[0]`` when ``cd[1]`` is 1) for a CuPy
    `x`, the factors a (2,) device array of x's dtype, read by the kernel."""
    xp = be.xp
    if not (x.size and is_kernel_float(x.dtype)):
        return (x * cd[0]) / cd[1]
    out = xp.empty(x.shape, x.dtype)
    be.kernels("clip").scale_dev(xp.ascontiguousarray(x).reshape(-1), cd,
                                 out.reshape(-1))
    return out


def device_global_scale(be, norm, c):
    """clip_ops.global_norm_scale of a 0-d device `norm` and a host 0-d `c`
    of its dtype, as the (2,) device factors ``(scale, 1)`` of
    :func:`device_scaled`."""
    if is_kernel_float(norm.dtype):
        return be.kernels("clip").global_scale(norm, c[()])
    xp = be.xp
    c = c[()]
    one = norm.dtype.type(1)
    scale = c * xp.minimum(one / norm, one / c) + (norm - norm)
    return xp.stack([scale, xp.ones_like(scale)])


def device_clip_by_norm(be, batches, xv, c, dtype):
    """clip_by_norm over every axis of CuPy values `xv` (`batches`: the
    kernel batches of their sum of squares, as :func:`device_norm`; `c` a
    host 0-d array of `dtype`, >= 0): the CPU's operations in its order, the
    norm and the divisor kept on the device."""
    norm, _ = device_norm(be, batches, dtype)
    if is_kernel_float(dtype):
        return device_scaled(be, xv, be.kernels("clip").norm_divisor(norm, c[()]))
    xp = be.xp
    divisor = xp.maximum(norm, c[()])
    divisor = xp.where(divisor == 0, xp.ones_like(divisor), divisor)
    return (xv * c[()]) / divisor
