"""GPU evidence for WH058 (races along a launch axis, a reset by thread 0) and a block_dim=0 corpus claim.

Run on a CUDA machine with warp-lang installed: `python3 benchmarks/gpu_rule_races.py`; prints a line
per case (benchmarks/RESULTS.md has the H100 run)."""

import math
import os

import numpy as np
import warp as wp

wp.config.log_level = wp.LOG_WARNING
wp.init()
dev = "cuda:0"
lines = [f"device: {wp.get_device(dev).name}, warp {wp.config.version}"]


@wp.kernel
def column_stats(x: wp.array2d(dtype=float), best: wp.array(dtype=float), total: wp.array(dtype=float)):
    i, j = wp.tid()
    if x[i, j] > best[j]:
        best[j] = x[i, j]
    total[j] = total[j] + x[i, j]


@wp.kernel
def column_stats_atomic(
    x: wp.array2d(dtype=float), best: wp.array(dtype=float), total: wp.array(dtype=float)
):
    i, j = wp.tid()
    wp.atomic_max(best, j, x[i, j])
    total[j] += x[i, j]


n = 1 << 16
xs = np.arange(n * 2, dtype=np.float32).reshape(n, 2)
want = np.concatenate([xs.max(axis=0), xs.astype(np.float64).sum(axis=0)])
for k in (column_stats, column_stats_atomic):
    x = wp.array(xs, device=dev)
    best = wp.zeros(2, dtype=float, device=dev)
    total = wp.zeros(2, dtype=float, device=dev)
    wp.launch(k, dim=(n, 2), inputs=[x, best, total], device=dev)
    got = np.concatenate([best.numpy(), total.numpy()])
    lines.append(
        f"{k.key}: best={got[:2].tolist()} total={got[2:].tolist()} "
        f"want best={want[:2].tolist()} total={want[2:].tolist()}"
    )


@wp.kernel
def clear_active(
    keys: wp.array(dtype=wp.int32), slots: wp.array(dtype=wp.int32), capacity: int, num_threads: int
):
    tid = wp.tid()
    count = slots[capacity]
    i = tid
    while i < count:
        keys[slots[i]] = 0
        i += num_threads
    if tid == 0:
        slots[capacity] = 0


cap = 1 << 20
threads = 1 << 16
cleared = []
for _trial in range(5):
    keys = wp.array(np.ones(cap, dtype=np.int32), device=dev)
    sl = np.arange(cap + 1, dtype=np.int32)
    sl[cap] = cap
    slots = wp.array(sl, device=dev)
    wp.launch(clear_active, dim=threads, inputs=[keys, slots, cap, threads], device=dev)
    cleared.append(int((keys.numpy() == 0).sum()))
lines.append(f"reset by thread 0 (newton #2477 shape): keys cleared per trial {cleared} of {cap}")


def make_infnorm(tile_size: int):
    @wp.kernel(module="unique")
    def infnorm(residuals: wp.array2d(dtype=float), norm_out: wp.array(dtype=float)):
        wid, _lane = wp.tid()
        r = wp.tile_load(residuals[wid], shape=(tile_size,))
        m = wp.tile_max(wp.tile_map(wp.abs, r))
        wp.tile_store(norm_out, m, offset=(wid,))

    return infnorm


tile_size = min(2048, 2 ** math.ceil(math.log(3, 2)))
res = wp.array(np.array([[1.0, -5.0, 2.0, 0.0], [-1.0, 0.5, 3.0, 0.0]], dtype=np.float32), device=dev)
for block_dim in (min(256, tile_size // 8), max(1, min(256, tile_size // 8))):
    out = wp.zeros(2, dtype=float, device=dev)
    try:
        wp.launch_tiled(make_infnorm(tile_size), dim=(2,), inputs=[res, out], block_dim=block_dim, device=dev)
        wp.synchronize_device(dev)
        lines.append(f"block_dim={block_dim}: ran, out={out.numpy().tolist()} (want [5.0, 3.0])")
    except Exception as exc:
        lines.append(f"block_dim={block_dim}: {type(exc).__name__}: {str(exc)[:300]}")

text = "\n".join(lines)
print(text)
with open(os.path.join(os.environ.get("OUT", "/tmp"), "gpu_rulei.txt"), "w") as f:
    f.write(text + "\n")
