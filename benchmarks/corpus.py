"""Generated inputs shared by the benchmarks: a 2,000-line module with 40 kernels."""

from __future__ import annotations

_HEADER = """import numpy as np
import warp as wp

TILE_M = wp.constant(16)
TILE_N = wp.constant(16)
TILE_K = wp.constant(8)
BLOCK = 64

"""

_KERNEL = """
@wp.func
def helper_{n}(a: float, b: float) -> float:
    return wp.sqrt(a * a + b * b)


@wp.kernel
def kernel_{n}(x: wp.array(dtype=float), y: wp.array(dtype=float), v: wp.array(dtype=wp.vec3),
             m: wp.array2d(dtype=float), out: wp.array(dtype=float), scale: float):
    i = wp.tid()
    if i >= x.shape[0]:
        return
    a = x[i] * scale
    b = y[i] + 1.0
    c = helper_{n}(a, b)
    p = v[i]
    q = wp.length(p) + wp.dot(p, p)
    r = wp.normalize(p) * c
    s = float(0.0)
    for k in range(4):
        s += m[i, k] * a
    if c > 0.5:
        s = s * 0.5
    else:
        s = s + wp.abs(q)
    t = wp.min(s, c)
    u = wp.max(t, 0.0)
    w = wp.clamp(u, 0.0, 1.0)
    z = wp.sin(w) + wp.cos(w)
    out[i] = z + r[0] + wp.exp(-a) * b
    out[i] += wp.float32(1.0)


@wp.kernel
def tile_kernel_{n}(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(TILE_M, TILE_N), dtype=float)
    count = int(A.shape[1] / TILE_K)
    for k in range(0, count):
        a = wp.tile_load(A, shape=(TILE_M, TILE_K), offset=(i * TILE_M, k * TILE_K))
        b = wp.tile_load(B, shape=(TILE_K, TILE_N), offset=(k * TILE_K, j * TILE_N))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc, offset=(i * TILE_M, j * TILE_N))


def run_{n}(n: int):
    x = wp.zeros(n, dtype=float)
    y = wp.zeros(n, dtype=float)
    v = wp.zeros(n, dtype=wp.vec3)
    m = wp.zeros((n, 4), dtype=float)
    out = wp.zeros(n, dtype=float)
    wp.launch(kernel_{n}, dim=n, inputs=[x, y, v, m, out, 2.0])
    A = wp.zeros((64, 64), dtype=float)
    wp.launch_tiled(tile_kernel_{n}, dim=(4, 4), inputs=[A, A, A], block_dim=BLOCK)
"""


def generated_module(kernels: int = 40, target_lines: int = 2000) -> str:
    """``kernels`` x (kernel + tile kernel + func + launch site) padded to ``target_lines`` lines."""
    parts = [_HEADER]
    for n in range(kernels // 2):
        parts.append(_KERNEL.format(n=n))
    text = "".join(parts)
    lines = text.count("\n")
    if lines < target_lines:
        text += "".join(
            f"# padding line {k}: host-side notes and comments\n" for k in range(target_lines - lines)
        )
    return text


def quoting_module(kernels: int) -> str:
    """The generated module with records quoting lines on every ``kernel_<n>`` (WH007, WH024)."""
    text = generated_module(kernels=kernels, target_lines=0)
    text = text.replace("dim=n, inputs=[x, y, v, m, out, 2.0]", "dim=(n, 2), inputs=[x, y, v, m, out, 2.0]")
    return text.replace(
        "    for k in range(4):\n        s += m[i, k] * a\n",
        "    for i in range(4):\n        s += m[i, i] * a\n",
    )


_FACTORY = """

def make_scale_{n}(dtype):
    @wp.kernel
    def scale_{n}(x: wp.array(dtype=dtype), s: dtype):
        i = wp.tid()
        x[i] = x[i] * s

    return scale_{n}
"""


def with_kernel_factories(source: str, count: int = 8) -> str:
    """``source`` followed by ``count`` functions that each define and return a kernel (the
    kernel-factory pattern of newton and mujoco-warp)."""
    return source + "".join(_FACTORY.format(n=n) for n in range(count))


# records quoting line numbers (WH002, WH007, WH015 under sm_86, WH024), in kernels, launches and a class:
# the incremental analyser moves the numbers with the lines (tests/engine/test_incremental_quotes.py,
# record_identity.py)
QUOTING = """import warp as wp

T = wp.constant(64)


def early_plain(v: float):
    return v * 2.0


@wp.kernel
def top(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = early_plain(a[i]) + late_plain(a[i])


@wp.kernel
def ranked(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0


@wp.kernel
def middle(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] + 1.0


@wp.kernel
def shadowed(a: wp.array(dtype=float)):
    i = wp.tid()
    for i in range(4):
        a[0] = float(i)
    a[i] = 1.0


@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    acc = wp.tile_zeros(shape=(T, T), dtype=float)
    for k in range(8):
        a = wp.tile_load(A, shape=(T, T), offset=(0, k * T))
        b = wp.tile_load(B, shape=(T, T), offset=(k * T, 0))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc)


@wp.kernel
def bottom(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = a[i] * 3.0


def late_plain(v: float):
    return v + 1.0


def launch(a: wp.array(dtype=float)):
    wp.launch(ranked, dim=(4, 2), inputs=[a])


class Holder:
    @wp.kernel
    def held(a: wp.array(dtype=float)):
        i = wp.tid()
        for i in range(2):
            a[0] = float(i)
        a[i] = 2.0
"""


# `rest_kernel` holds a fact's marker: its chunk is context, its record (WH002, quoting `far_plain`'s line)
# one of the rest's, above the edits, quoting a line below them
QUOTING_REST = """import warp as wp


@wp.kernel
def rest_kernel(a: wp.array(dtype=float)):
    i = wp.tid()  # max_unroll
    a[i] = far_plain(a[i])


@wp.kernel
def first(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0


@wp.kernel
def second(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 2.0


def far_plain(v: float):
    return v + 1.0
"""


def line_edits(text: str, kernel: str) -> list[str]:
    """Enter after the kernel's first body line, a name typed there, a block of two lines pasted below
    it, then the three lines deleted one at a time: the text after each step."""
    versions: list[str] = []
    at = text.index("\n", text.index("):\n", text.index(f"def {kernel}(")) + 3)
    text = text[:at] + "\n    " + text[at:]
    versions.append(text)
    for n in range(1, 4):
        versions.append(text[: at + 5] + "q_z"[:n] + text[at + 5 :])
    text = versions[-1]
    at += 8
    text = text[:at] + "\n    r_z = 1.0\n    s_z = r_z + 1.0" + text[at:]
    versions.append(text)
    for line in ("    s_z = r_z + 1.0\n", "    r_z = 1.0\n", "    q_z\n"):
        start = text.index(line, text.index(f"def {kernel}("))
        text = text[:start] + text[start + len(line) :]
        versions.append(text)
    return versions
