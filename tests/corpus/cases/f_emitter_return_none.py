# corpus: expect=WH005 warp=rejects
"""A particle emitter that leaves early with `return None` for inactive emitters, as host code would:
Warp has no `None` value and refuses the kernel (a bare `return` is the early exit)."""

import warp as wp


@wp.struct
class Emitter:
    origin: wp.vec3
    velocity: wp.vec3
    rate: int
    active: int


@wp.kernel
def emit_particles(
    emitters: wp.array(dtype=Emitter),
    seed: int,
    next_slot: wp.array(dtype=wp.int32),
    x: wp.array(dtype=wp.vec3),
    v: wp.array(dtype=wp.vec3),
):
    e = wp.tid()
    emitter = emitters[e]
    if emitter.active == 0:
        return None
    state = wp.rand_init(seed, e)
    for _k in range(emitter.rate):
        slot = wp.atomic_add(next_slot, 0, 1)
        if slot >= x.shape[0]:
            return
        jitter = wp.vec3(wp.randf(state), wp.randf(state), wp.randf(state)) * 0.01
        x[slot] = emitter.origin + jitter
        v[slot] = emitter.velocity


def emit(emitters, seed, next_slot, x, v):
    wp.launch(emit_particles, dim=emitters.shape[0], inputs=[emitters, seed], outputs=[next_slot, x, v])
