import warp as wp

from . import smooth


class Model:
    def __init__(self, nworld: int, nbody: int):
        self.nworld = nworld
        self.nbody = nbody
        self.damping = 0.01


def velocities(m: Model, body_qd, body_qd_out, damped: bool = True):
    wp.launch(
        smooth.body_velocity_kernel(damped),
        dim=(m.nworld, m.nbody),
        inputs=[body_qd, m.damping],
        outputs=[body_qd_out],
    )
