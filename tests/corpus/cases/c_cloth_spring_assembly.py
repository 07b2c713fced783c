# corpus: expect=WH010,WH010 warp=silent
"""Cloth springs in the layout of warp.sim (flattened `spring_indices`, two per spring): the forces are
scattered into the shared particles with a plain read-modify-write. Particles belong to several
springs, so on a GPU concurrent springs lose each other's forces; on the CPU the result looks right."""

import numpy as np
import warp as wp


@wp.struct
class SpringModel:
    spring_indices: wp.array(dtype=int)
    spring_rest_length: wp.array(dtype=float)
    spring_stiffness: wp.array(dtype=float)
    spring_damping: wp.array(dtype=float)


@wp.func
def spring_force(xi: wp.vec3, xj: wp.vec3, vi: wp.vec3, vj: wp.vec3, rest: float, ke: float, kd: float) -> wp.vec3:
    xij = xi - xj
    vij = vi - vj
    length = wp.length(xij)
    if length < 1.0e-6:
        return wp.vec3(0.0)
    direction = xij / length
    c = length - rest
    dcdt = wp.dot(direction, vij)
    return direction * (ke * c + kd * dcdt)


@wp.kernel
def eval_springs(
    model: SpringModel,
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
    f: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    i = model.spring_indices[tid * 2 + 0]
    j = model.spring_indices[tid * 2 + 1]
    fs = spring_force(
        x[i],
        x[j],
        v[i],
        v[j],
        model.spring_rest_length[tid],
        model.spring_stiffness[tid],
        model.spring_damping[tid],
    )
    f[i] = f[i] - fs
    f[j] = f[j] + fs


class ClothSolver:
    def __init__(self, width: int, device: str = "cpu"):
        self.device = device
        n = width * width
        pairs = []
        for r in range(width):
            for c in range(width - 1):
                pairs += [r * width + c, r * width + c + 1]
        self.spring_count = len(pairs) // 2
        self.model = SpringModel()
        self.model.spring_indices = wp.array(np.array(pairs, dtype=np.int32), device=device)
        self.model.spring_rest_length = wp.full(self.spring_count, 0.1, dtype=float, device=device)
        self.model.spring_stiffness = wp.full(self.spring_count, 1.0e3, dtype=float, device=device)
        self.model.spring_damping = wp.full(self.spring_count, 1.0, dtype=float, device=device)
        self.x = wp.zeros(n, dtype=wp.vec3, device=device)
        self.v = wp.zeros(n, dtype=wp.vec3, device=device)
        self.f = wp.zeros(n, dtype=wp.vec3, device=device)

    def compute_forces(self):
        self.f.zero_()
        wp.launch(
            eval_springs,
            dim=self.spring_count,
            inputs=[self.model, self.x, self.v],
            outputs=[self.f],
            device=self.device,
        )
