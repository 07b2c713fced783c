import warp as wp

from .fields import splat_density


class DensityRenderer:
    def __init__(self, height: int, width: int, cell_size: float, device: str = "cpu"):
        self.height = height
        self.width = width
        self.cell_size = cell_size
        self.image = wp.zeros((height, width), dtype=float, device=device)

    def render(self, points, smoothing: float):
        inv_h2 = 1.0 / (smoothing * smoothing)
        wp.launch(
            splat_density,
            dim=self.height * self.width,
            inputs=[points, self.cell_size, inv_h2],
            outputs=[self.image],
        )
        return self.image
