import numpy as np
import warp as wp


@wp.func
def tid_to_coord_tiled(tid: int, width: int, height: int, tile_width: int, tile_height: int):
    num_pixels_per_tile = tile_width * tile_height
    num_tiles_per_row = (width + tile_width - 1) // tile_width
    num_tiles_per_col = (height + tile_height - 1) // tile_height
    num_pixels_per_view = num_tiles_per_row * num_tiles_per_col * num_pixels_per_tile
    pixel_idx = tid % num_pixels_per_view
    tile_idx = pixel_idx // num_pixels_per_tile
    tile_pixel_idx = pixel_idx % num_pixels_per_tile
    tile_y = tile_idx // num_tiles_per_row
    tile_x = tile_idx % num_tiles_per_row
    py = tile_y * tile_height + tile_pixel_idx // tile_width
    px = tile_x * tile_width + tile_pixel_idx % tile_width
    return py, px


@wp.kernel
def render_kernel(width: int, height: int, tile_width: int, tile_height: int, image: wp.array2d(dtype=float)):
    tid = wp.tid()
    py, px = tid_to_coord_tiled(tid, width, height, tile_width, tile_height)
    if px >= width or py >= height:
        return
    wp.atomic_add(image, py, px, 1.0)


def run() -> np.ndarray:
    width, height, tile_width, tile_height = 5, 4, 2, 2
    image = wp.zeros((height, width), dtype=float, device="cpu")
    tiles_x = (width + tile_width - 1) // tile_width
    tiles_y = (height + tile_height - 1) // tile_height
    pixels_per_view = tiles_x * tiles_y * tile_width * tile_height
    wp.launch(
        render_kernel, dim=pixels_per_view, inputs=[width, height, tile_width, tile_height, image], device="cpu"
    )
    return image.numpy()


def reference() -> np.ndarray:
    return np.ones((4, 5))
