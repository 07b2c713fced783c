# corpus: expect=WH026,WH026,WH026 warp=silent
"""A particle emitter jitters new particles inside a spawn box with a hand-rolled LCG. The LCG state is
int32 and overflows, so `state % 10000` is negative half the time: the "uniform [0, 1)" offsets span
(-1, 1) and particles spawn outside the box."""

import warp as wp


@wp.struct
class Emitter:
    origin: wp.vec3
    extent: wp.vec3
    speed: float


@wp.func
def lcg_next(state: int) -> int:
    return state * 1103515245 + 12345


@wp.kernel
def emit_particles(
    emitter: Emitter,
    seeds: wp.array(dtype=int),
    first: int,
    positions: wp.array(dtype=wp.vec3),
    velocities: wp.array(dtype=wp.vec3),
):
    tid = wp.tid()
    s0 = seeds[tid] * 1103515245 + 12345
    s1 = s0 * 1103515245 + 12345
    s2 = s1 * 1103515245 + 12345
    seeds[tid] = s2
    u = wp.vec3(float(s0 % 10000) / 10000.0, float(s1 % 10000) / 10000.0, float(s2 % 10000) / 10000.0)
    offset = wp.cw_mul(u, emitter.extent)
    positions[first + tid] = emitter.origin + offset
    velocities[first + tid] = wp.vec3(0.0, -emitter.speed, 0.0)


class ParticleEmitter:
    def __init__(self, emitter: Emitter, capacity: int, device: str = "cpu"):
        self.emitter = emitter
        self.positions = wp.zeros(capacity, dtype=wp.vec3, device=device)
        self.velocities = wp.zeros(capacity, dtype=wp.vec3, device=device)
        self.count = 0
        self.device = device

    def spawn(self, seeds: wp.array):
        n = seeds.shape[0]
        wp.launch(
            emit_particles,
            dim=n,
            inputs=[self.emitter, seeds, self.count, self.positions, self.velocities],
            device=self.device,
        )
        self.count += n
