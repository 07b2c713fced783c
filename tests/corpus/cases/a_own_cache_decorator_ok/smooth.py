import warp as wp

from .util import cache_kernel


@cache_kernel
def body_velocity_kernel(damped: bool):
    @wp.kernel(module="unique", enable_backward=False)
    def kernel(
        body_qd_in: wp.array2d(dtype=wp.spatial_vector),
        damping: float,
        body_qd_out: wp.array2d(dtype=wp.spatial_vector),
    ):
        worldid, bodyid = wp.tid()
        qd = body_qd_in[worldid, bodyid]
        if wp.static(damped):
            qd = qd * (1.0 - damping)
        body_qd_out[worldid, bodyid] = qd

    return kernel
