# corpus: expect=WH022 warp=rejects
"""Particle ground contact reading the height as `x[i, 1]`: the positions are a 1-D array of vec3,
so the second index is one too many for Warp; the component is `x[i][1]`."""

import warp as wp


@wp.struct
class Contact:
    ground: float
    restitution: float
    friction: float


@wp.func
def reflect(v: wp.vec3, restitution: float, friction: float) -> wp.vec3:
    return wp.vec3(v[0] * friction, -v[1] * restitution, v[2] * friction)


@wp.kernel
def ground_contact(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), contact: Contact):
    i = wp.tid()
    height = x[i, 1]
    if height < contact.ground:
        x[i] = wp.vec3(x[i][0], contact.ground, x[i][2])
        v[i] = reflect(v[i], contact.restitution, contact.friction)


def run():
    n = 64
    contact = Contact()
    contact.ground = 0.0
    contact.restitution = 0.5
    contact.friction = 0.9
    x = wp.zeros(n, dtype=wp.vec3, device="cpu")
    v = wp.zeros(n, dtype=wp.vec3, device="cpu")
    wp.launch(ground_contact, dim=n, inputs=[x, v, contact], device="cpu")
