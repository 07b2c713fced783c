# real-bug: class=tile-geometry warp=silent
# source: https://github.com/newton-physics/newton/pull/3536
# why: the tiled pixel order counts `width // tile_width` tiles per row and launches `width * height` threads: when the image width is not a multiple of the tile width the last column of pixels is never rendered
import numpy as np
import warp as wp


@wp.func
def tid_to_coord_tiled(tid: int, width: int, height: int, tile_width: int, tile_height: int):
    num_pixels_per_view = width * height
    num_pixels_per_tile = tile_width * tile_height
    num_tiles_per_row = width // tile_width
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
    wp.launch(render_kernel, dim=width * height, inputs=[width, height, tile_width, tile_height, image], device="cpu")
    return image.numpy()


def reference() -> np.ndarray:
    return np.ones((4, 5))
