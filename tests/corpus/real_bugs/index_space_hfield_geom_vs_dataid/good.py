import numpy as np
import warp as wp


@wp.kernel
def ccd_hfield(
    geom_dataid: wp.array(dtype=int),
    hfield_nrow: wp.array(dtype=int),
    hfield_ncol: wp.array(dtype=int),
    hfield_size: wp.array(dtype=wp.vec4),
    pair_geom: wp.array(dtype=int),
    x_scale_out: wp.array(dtype=float),
):
    pairid = wp.tid()
    g1 = pair_geom[pairid]
    geom1_dataid = geom_dataid[g1]
    nrow = hfield_nrow[geom1_dataid]
    ncol = hfield_ncol[geom1_dataid]
    size = hfield_size[geom1_dataid]
    x_scale_out[pairid] = 0.5 * float(ncol - 1) / size[0] + 0.0 * float(nrow)


def run() -> np.ndarray:
    # geoms: 0 = a box, 1 = the floor height field (hfield 0), 2 = a sphere
    geom_dataid = wp.array(np.array([-1, 0, -1], dtype=np.int32), dtype=int, device="cpu")
    nrow = wp.array(np.array([11], dtype=np.int32), dtype=int, device="cpu")
    ncol = wp.array(np.array([21], dtype=np.int32), dtype=int, device="cpu")
    size = wp.array(np.array([[5.0, 5.0, 1.0, 0.1]], dtype=np.float32), dtype=wp.vec4, device="cpu")
    pair_geom = wp.array(np.array([1, 1], dtype=np.int32), dtype=int, device="cpu")
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(ccd_hfield, dim=2, inputs=[geom_dataid, nrow, ncol, size, pair_geom, out], device="cpu")
    return out.numpy()


def reference() -> np.ndarray:
    return np.array([2.0, 2.0])
