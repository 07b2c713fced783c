from __future__ import annotations

import importlib.util
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from checker_helpers import Analyse
from warp_oracle import warp_error

from warp_harness.builtins import load_table
from warp_harness.fixes import apply_edits
from warp_harness.hardware import load_profile
from warp_harness.model.module import build_model
from warp_harness.model.shared_memory import CPU_TILE_ARENA, SharedMemoryEstimator, max_unroll_of
from warp_harness.record import Record, Severity

CUDA_TARGETS = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
_counter = itertools.count()

BIG = """
import warp as wp

N = wp.constant(512)


@wp.kernel
def big(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(N, N), storage="{storage}")
    wp.tile_store(b, t)
"""
BIG_SHARED = BIG.replace("{storage}", "shared")
BIG_REGISTER = BIG.replace("{storage}", "register")

GEMM = """
import warp as wp

TILE_M = wp.constant(64)
TILE_N = wp.constant(64)
TILE_K = wp.constant(256)


@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float), k_tiles: int):
    i, j = wp.tid()
    acc = wp.tile_zeros(shape=(TILE_M, TILE_N), dtype=float)
    for k in range(k_tiles):
        a = wp.tile_load(A, shape=(TILE_M, TILE_K), offset=(i * TILE_M, k * TILE_K))
        b = wp.tile_load(B, shape=(TILE_K, TILE_N), offset=(k * TILE_K, j * TILE_N))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc, offset=(i * TILE_M, j * TILE_N))


def run(A, B, C):
    wp.launch_tiled(gemm, dim=(4, 4), inputs=[A, B, C, 4], block_dim=256)
"""


def _wh015(records: list[Record]) -> list[Record]:
    return [r for r in records if r.rule == "WH015"]


# --- the 512 x 512 float32 tile ------------------------------------------------------------------------


@pytest.mark.parametrize("target", CUDA_TARGETS)
def test_a_one_mib_shared_tile_fits_no_cuda_block(analyse: Analyse, target: str) -> None:
    (record,) = _wh015(analyse(BIG_SHARED, select=["WH015"], target=target))
    assert record.severity is Severity.ERROR and record.location.line == 9
    assert record.actual == 512 * 512 * 4
    limit = load_profile(target).shared_memory_limit
    assert limit is not None and record.expected < limit
    assert record.message.startswith("tiles of kernel `big` need at least 1 MiB of shared memory; ")
    assert f"{target} allows {limit // 1024} KiB per block" in record.message
    assert "lower N from 512 to" in (record.hint or "")
    # Warp itself compiles it: the failure only comes at launch
    assert warp_error(BIG_SHARED) is None


@pytest.mark.parametrize("target", CUDA_TARGETS)
def test_a_one_mib_register_tile_is_flagged_for_every_cuda_target(analyse: Analyse, target: str) -> None:
    (record,) = _wh015(analyse(BIG_REGISTER, select=["WH015"], target=target))
    assert record.severity is Severity.WARNING
    assert (
        "register tile of shape (512, 512)" in record.message and "spills to local memory" in record.message
    )
    assert record.expected == 255 * 4 and record.actual == 1024  # 1 MiB / 1024 threads, the best case


def test_a_register_tile_is_fine_on_the_cpu(analyse: Analyse) -> None:
    assert analyse(BIG_REGISTER, select=["WH015"], target="cpu") == []


def test_the_cpu_tile_arena(analyse: Analyse) -> None:
    (record,) = _wh015(analyse(BIG_SHARED, select=["WH015"], target="cpu"))
    assert record.expected == CPU_TILE_ARENA and record.actual == 1 << 20
    assert "256 KiB tile arena" in record.message
    assert "lower N from 512 to 256" in (record.hint or "")


@pytest.mark.slow
def test_the_cpu_tile_arena_is_real(tmp_path: Path) -> None:
    """Launched on the CPU, a shared tile over 256 KiB kills the process (Warp 1.19)."""
    script = tmp_path / "big.py"
    script.write_text(
        BIG_SHARED
        + """
import numpy as np
wp.config.log_level = wp.LOG_WARNING
a = wp.array(np.ones((512, 512), dtype=np.float32), device="cpu")
b = wp.zeros((512, 512), dtype=float, device="cpu")
wp.launch_tiled(big, dim=(1, 1), inputs=[a, b], block_dim=64, device="cpu")
wp.synchronize()
print("survived")
""",
        encoding="utf-8",
    )
    env = {**os.environ, "WARP_CACHE_PATH": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode != 0 and "survived" not in done.stdout
    assert "exceeds the 256 KiB arena" in done.stdout + done.stderr


# --- hints and the fix -----------------------------------------------------------------------------------


def test_the_hint_names_the_constant_and_the_fix_rewrites_it(analyse: Analyse) -> None:
    (record,) = _wh015(analyse(GEMM, select=["WH015"], target="sm_86"))
    # acc 16 KiB + a 64 KiB + b 64 KiB; sm_86: 99 KiB less 4 bytes for each of the 256 threads
    assert record.actual == (64 * 64 + 64 * 256 + 256 * 64) * 4
    assert record.expected == 101376 - 4 * 256
    assert "(98 KiB usable at block_dim=256)" in record.message
    assert (record.hint or "").startswith("lower TILE_K from 256 to 128 (80 KiB)")
    assert record.related[0].message.startswith("64 KiB shared tile of shape (64, 256)")
    assert record.fix is not None and record.fix.title == "Set TILE_K = 128" and not record.fix.safe
    fixed, _ = apply_edits(GEMM, record.fix.edits)
    assert "TILE_K = wp.constant(128)" in fixed
    assert _wh015(analyse(fixed, select=["WH015"], target="sm_86")) == []
    assert warp_error(GEMM) is None and warp_error(fixed) is None
    # sm_90's 227 KiB hold the original
    assert _wh015(analyse(GEMM, select=["WH015"], target="sm_90")) == []


UNROLLED = """
import warp as wp

T = wp.constant(64)


@wp.kernel
def gemm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    acc = wp.tile_zeros(shape=(T, T), dtype=float)
    for k in range(8):
        a = wp.tile_load(A, shape=(T, T), offset=(0, k * T))
        b = wp.tile_load(B, shape=(T, T), offset=(k * T, 0))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc)
"""


def test_unrolled_loops_multiply_the_tiles(analyse: Analyse) -> None:
    (record,) = _wh015(analyse(UNROLLED, select=["WH015"], target="sm_86"))
    assert record.actual == (1 + 16) * 64 * 64 * 4
    assert "the loop at line 10 is unrolled (8 iterations <= max_unroll=16)" in (record.hint or "")
    assert record.related[0].message.startswith("8 x 16 KiB shared tile of shape (64, 64)")
    kept = UNROLLED.replace(
        "import warp as wp\n", 'import warp as wp\n\nwp.set_module_options({"max_unroll": 0})\n'
    )
    assert _wh015(analyse(kept, select=["WH015"], target="sm_86")) == []
    assert warp_smem(UNROLLED) == {"gemm": record.actual}
    assert warp_smem(kept) == {"gemm": 3 * 64 * 64 * 4}


EDGE = """
import warp as wp


@wp.kernel
def edge(a: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=24960, storage="shared")
    wp.tile_store(a, t)


def run(a):
    wp.launch_tiled(edge, dim=1, inputs=[a], block_dim={block_dim})
"""


def test_the_static_reservation_depends_on_block_dim(analyse: Analyse) -> None:
    # 99,840 bytes: under sm_86's 101,376, but not with 4 x 1024 bytes reserved
    (record,) = _wh015(analyse(EDGE.replace("{block_dim}", "1024"), select=["WH015"], target="sm_86"))
    assert (record.expected, record.actual) == (101376 - 4096, 99840)
    assert _wh015(analyse(EDGE.replace("{block_dim}", "32"), select=["WH015"], target="sm_86")) == []


GOOD = """
import warp as wp

TILE = wp.constant(32)


@wp.kernel
def small(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a = wp.tile_load(A, shape=(TILE, TILE), offset=(i * TILE, j * TILE))
    b = wp.tile_matmul(a, wp.tile_transpose(a))
    wp.tile_store(B, b, offset=(i * TILE, j * TILE))
"""


@pytest.mark.parametrize("target", [*CUDA_TARGETS, "cpu"])
def test_small_tiles_pass(analyse: Analyse, target: str) -> None:
    assert analyse(GOOD, select=["WH015"], target=target) == []
    assert warp_error(GOOD) is None


# --- calibration against Warp's own figures ------------------------------------------------------------

CALIBRATION = """
import warp as wp

TM = wp.constant(32)
TK = wp.constant(64)
TN = wp.constant(16)
T8 = wp.constant(8)


@wp.kernel
def register_only(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(TM, TK))
    wp.tile_store(b, t * 2.0)


@wp.kernel
def explicit_shared(a: wp.array2d(dtype=wp.float16), b: wp.array2d(dtype=wp.float16)):
    t = wp.tile_load(a, shape=(TM, TK), storage="shared")
    wp.tile_store(b, t)


@wp.kernel
def matmul_result(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    a = wp.tile_load(A, shape=(TM, TK))
    b = wp.tile_load(B, shape=(TK, TN))
    c = wp.tile_matmul(a, b)
    d = c + c
    wp.tile_store(C, d)


@wp.kernel
def dynamic_k_loop(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float),
                   n: int):
    acc = wp.tile_zeros(shape=(TM, TN), dtype=float)
    for k in range(n):
        a = wp.tile_load(A, shape=(TM, TK), offset=(0, k * TK))
        b = wp.tile_load(B, shape=(TK, TN), offset=(k * TK, 0))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc)


@wp.kernel
def unrolled_k_loop(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    acc = wp.tile_zeros(shape=(TM, TN), dtype=float)
    for k in range(4):
        a = wp.tile_load(A, shape=(TM, TK), offset=(0, k * TK))
        b = wp.tile_load(B, shape=(TK, TN), offset=(k * TK, 0))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc)


@wp.kernel
def views_and_indexing(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), c: wp.array(dtype=float)):
    t = wp.tile_load(a, shape=(TN, T8))
    u = wp.tile_transpose(t)
    wp.tile_store(b, u)
    s = wp.tile_sum(t)
    r = wp.tile_broadcast(s, shape=(T8, T8))
    wp.tile_store(b, r)
    v = wp.tile_load(a, shape=(T8, T8))
    v[0, 0] = 1.0
    w = wp.tile_load(c, shape=T8)
    x = w[3]
    c[0] = x


@wp.kernel
def branches(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), flag: int):
    if flag > 0:
        t = wp.tile_load(a, shape=(T8, T8), storage="shared")
        wp.tile_store(b, t)
    else:
        u = wp.tile_load(a, shape=(TN, TN), storage="shared")
        wp.tile_store(b, u)
"""


def warp_smem(source: str) -> dict[str, int]:
    """Warp's own shared-memory figure for each kernel: ``adj.get_total_required_shared()`` after codegen,
    the number the CUDA module's ``.meta`` file records and the launch configures."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    folder = Path(tempfile.mkdtemp(prefix="wh015_"))
    name = f"wh015_smem_{next(_counter)}"
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        result = {}
        for key, value in vars(module).items():
            if isinstance(value, wp.Kernel):
                opts = value.module.resolve_options(wp.config, 64)
                opts["output_arch"] = None
                value.adj.build(None, opts)
                result[key] = int(value.adj.get_total_required_shared())
        return result
    finally:
        sys.modules.pop(name, None)


def estimates(
    source: str, block_dim: int | None = None, arch: int | None = None, cpu: bool = False
) -> dict[str, int]:
    table = load_table()
    model = build_model(source, "k.py", table)
    return {
        k.name: SharedMemoryEstimator(
            model, k, model.types(k), max_unroll=max_unroll_of(model), block_dim=block_dim, arch=arch, cpu=cpu
        )
        .run()
        .request
        for k in model.kernels
        if k.is_kernel
    }


def test_the_estimate_matches_warp_codegen() -> None:
    ours, warps = estimates(CALIBRATION), warp_smem(CALIBRATION)
    assert set(ours) == set(warps)
    expected = {
        "register_only": 0,
        "explicit_shared": 32 * 64 * 2,
        "matmul_result": (32 * 64 + 64 * 16 + 32 * 16) * 4,
        "dynamic_k_loop": (32 * 16 + 32 * 64 + 64 * 16) * 4,
        "unrolled_k_loop": (32 * 16 + 4 * (32 * 64 + 64 * 16)) * 4,
        # transposed and indexed tiles, the reduced tile (one float, rounded up to 16 bytes) fed to a
        # broadcast, an element store
        "views_and_indexing": (16 * 8 + 8 * 8 + 8) * 4 + 16,
        "branches": (8 * 8 + 16 * 16) * 4,
    }
    assert ours == expected
    assert ours == warps


def test_the_estimate_matches_warp_codegen_on_warp_examples() -> None:
    """Over the tile kernels of warp's shipped examples that import without extra packages, against Warp's
    CPU codegen at block_dim 64 (the sm_90 builds: tests/model/test_shared_memory_aot.py)."""
    root = Path(importlib.util.find_spec("warp").origin).parent / "examples"  # type: ignore[arg-type,union-attr]
    checked = 0
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if (
            "tile_" not in source
            or "import torch" in source
            or "PIL" in source
            or "mpi4py" in source
            or "nccl" in source
            or "nvshmem" in source
        ):
            continue
        try:
            warps = warp_smem(source)
        except Exception:  # an example that needs a device or data at import
            continue
        for name, value in estimates(source, block_dim=64, cpu=True).items():
            if name in warps:
                assert value == warps[name], (path.name, name, value, warps[name])
                checked += 1
    assert checked >= 8


@pytest.mark.slow
def test_the_estimate_matches_nvrtc_module_metadata(tmp_path: Path) -> None:
    """A real CUDA build through Warp's bundled NVRTC (no GPU needed) records the same bytes."""
    source = """
import warp as wp

wp.set_module_options({"enable_backward": False, "enable_mathdx_gemm": False})
TILE = wp.constant(32)
TILE2 = wp.constant(64)


@wp.kernel
def tr(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(TILE, TILE2))
    u = wp.tile_transpose(t)
    wp.tile_store(b, u)


@wp.kernel
def mm(A: wp.array2d(dtype=float), B: wp.array2d(dtype=float), C: wp.array2d(dtype=float)):
    acc = wp.tile_zeros(shape=(TILE, TILE), dtype=float)
    for k in range(4):
        a = wp.tile_load(A, shape=(TILE, TILE), offset=(0, k * TILE))
        b = wp.tile_load(B, shape=(TILE, TILE), offset=(k * TILE, 0))
        wp.tile_matmul(a, b, acc)
    wp.tile_store(C, acc)
"""
    module_file = tmp_path / "wh015_aot.py"
    module_file.write_text(source, encoding="utf-8")
    out = tmp_path / "aot"
    script = f"""
import importlib.util, sys, warp as wp
wp.config.log_level = wp.LOG_WARNING
spec = importlib.util.spec_from_file_location("wh015_aot", {str(module_file)!r})
m = importlib.util.module_from_spec(spec); sys.modules["wh015_aot"] = m; spec.loader.exec_module(m)
wp.init()
wp.compile_aot_module("wh015_aot", arch=86, module_dir={str(out)!r}, use_ptx=True)
"""
    env = {**os.environ, "WARP_CACHE_PATH": str(tmp_path / "cache")}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (meta_file,) = out.glob("*.meta")
    meta = json.loads(meta_file.read_text())
    assert list(out.glob("*.sm86.ptx"))
    smem = {
        key.split("_")[0]: value
        for key, value in meta.items()
        if key.endswith("_cuda_kernel_forward_smem_bytes")
    }
    assert smem == estimates(source) == {"tr": 32 * 64 * 4, "mm": (32 * 32 + 4 * 2 * 32 * 32) * 4}


@pytest.mark.parametrize(("size", "flagged"), [(65537, True), (65536, False)])
def test_the_cpu_arena_boundary_of_warps_own_test(analyse: Analyse, size: int, flagged: bool) -> None:
    # warp/tests/tile/test_tile_shared_memory.py expects 65,537 shared floats to abort on the CPU
    source = f"""
import warp as wp


@wp.kernel
def oversize(out: wp.array(dtype=float)):
    tile = wp.tile_zeros(shape={size}, dtype=float, storage="shared")
    out[0] = tile[0]
"""
    records = _wh015(analyse(source, select=["WH015"], target="cpu"))
    assert bool(records) == flagged
    if flagged:
        # 65,537 floats, rounded up to 16 bytes as Warp allocates them
        assert records[0].message.startswith("tiles of kernel `oversize` need at least 262160 bytes")


def test_documented_examples(analyse: Analyse) -> None:
    import re

    from warp_harness.rules.wh015_tile_shared_memory import TileSharedMemory

    blocks = re.findall(r"```python\n(.*?)```", TileSharedMemory.doc(), re.S)
    bad = "import warp as wp\n\n" + blocks[0]
    good = bad.replace("TILE = wp.constant(128)", blocks[1].strip())
    (record,) = _wh015(analyse(bad, select=["WH015"], target="sm_86"))
    assert record.actual == 2 * 128 * 128 * 4 and "lower TILE from 128 to 64" in (record.hint or "")
    assert _wh015(analyse(good, select=["WH015"], target="sm_86")) == []
    assert warp_smem(bad) == {"square": 2 * 128 * 128 * 4} and warp_smem(good) == {"square": 2 * 64 * 64 * 4}


def _random_block(rng: random.Random, depth: int, names: set[str]) -> list[str]:
    lines: list[str] = []
    for _ in range(rng.randint(1, 4)):
        r = rng.random()
        name = f"t{rng.randint(0, 5)}"
        known = sorted(names)
        if r < 0.3:
            storage = rng.choice(["", ', storage="shared"', ', storage="register"'])
            lines.append(f"{name} = wp.tile_load(a, shape=({rng.choice('TU')}, {rng.choice('TU')}){storage})")
            names.add(name)
        elif r < 0.4:
            storage = rng.choice(["", ', storage="shared"'])
            lines.append(f"{name} = wp.tile_zeros(shape=(T, T), dtype=float{storage})")
            names.add(name)
        elif r < 0.5 and known:
            lines.append(f"{name} = wp.tile_transpose({rng.choice(known)})")
            names.add(name)
        elif r < 0.6 and known:
            lines.append(f"{name} = {rng.choice(known)} + {rng.choice(known)}")
            names.add(name)
        elif r < 0.7 and known:
            lines.append(f"s = {rng.choice(known)}[0, 0]")
        elif r < 0.8 and known:
            lines.append(f"{name} = wp.tile_matmul({rng.choice(known)}, {rng.choice(known)})")
            names.add(name)
        elif r < 0.85 and known:
            lines.append(f"wp.tile_store(b, {rng.choice(known)})")
        elif depth < 2:
            head = rng.choice(
                [f"for j in range({rng.randint(0, 5)}):", "for j in range(n):", "if n > 2:", "while n > 100:"]
            )
            lines.append(head)
            lines += ["    " + line for line in _random_block(rng, depth + 1, names)]
            if head.startswith("if") and rng.random() < 0.5:
                lines.append("else:")
                lines += ["    " + line for line in _random_block(rng, depth + 1, names)]
        else:
            lines.append("pass")
    return lines


def test_the_estimate_equals_warp_on_random_kernels() -> None:
    """Random mixes of loads, shared and register tiles, transposes, element reads, matmuls, constant
    and runtime loops, branches (Warp's ``where`` phis, loop-carried names): the estimate is Warp's figure."""
    rng = random.Random(20261202)
    header = """import warp as wp

T = wp.constant(8)
U = wp.constant(16)


@wp.kernel
def k(a: wp.array2d(dtype=float), b: wp.array2d(dtype=float), n: int):
    i = wp.tid()
"""
    built = 0
    for _ in range(int(os.environ.get("WH015_RANDOM_KERNELS", "120"))):
        source = header + "".join(f"    {line}\n" for line in _random_block(rng, 0, set()))
        try:
            actual = warp_smem(source)["k"]
        except Exception:  # inconsistent random shapes: Warp refuses the kernel
            continue
        estimate = estimates(source)["k"]
        assert estimate == actual, source
        built += 1
    assert built >= 60


FUNC_TILES = """
import warp as wp


@wp.func
def inner(a: wp.array2d(dtype=float)):
    t = wp.tile_load(a, shape=(512, 512), storage="shared")
    wp.tile_store(a, t)


@wp.func
def outer(a: wp.array2d(dtype=float)):
    inner(a)


@wp.kernel
def plain(a: wp.array2d(dtype=float)):
    outer(a)


@wp.kernel
def untiled(a: wp.array2d(dtype=float)):
    a[0, 0] = 1.0
"""


def test_a_kernel_without_tile_calls_is_still_charged_for_the_tiles_of_the_functions_it_calls(
    analyse: Analyse,
) -> None:
    # the kernel itself calls no `tile*` builtin: only the functions it reaches (transitively) do
    (record,) = _wh015(analyse(FUNC_TILES, select=["WH015"], target="sm_86"))
    assert record.location.kernel == "plain"
    assert record.actual == 512 * 512 * 4


# --- issue 14: the estimate against Warp's builds, CPU-only launches ---------------------------------------

CPU_ONLY = """
import warp as wp


@wp.kernel(module="unique")
def column_sums(x: wp.array2d(dtype=float), y: wp.array(dtype=float)):
    a = wp.tile_load(x, shape=(2, {n}), storage="shared")
    wp.tile_store(y, wp.tile_sum(a, axis=0))


def run(x, y):
    wp.launch_tiled(column_sums, dim=[1], inputs=[x], outputs=[y], block_dim=32, device={device})
"""


@pytest.mark.parametrize("target", CUDA_TARGETS)
def test_a_kernel_launched_only_on_the_cpu_is_not_judged_on_a_gpu(analyse: Analyse, target: str) -> None:
    """warp/tests/tile/test_tile_reduce.py's `tile_sum_axis0_large_cpu_gradient_kernel`: 2 x 14000 floats
    (109 KiB) in shared memory, more than sm_86 allows, launched with device="cpu" only, where the arena is
    256 KiB. It runs there (shown below); launched without a device, it is judged on the GPU."""
    source = CPU_ONLY.format(n=14000, device='"cpu"')
    assert _wh015(analyse(source, select=["WH015"], target=target)) == []
    default = CPU_ONLY.format(n=14000, device="None")
    flagged = _wh015(analyse(default, select=["WH015"], target=target))
    limit = load_profile(target).shared_memory_limit
    assert limit is not None
    assert bool(flagged) == (2 * 14000 * 4 > limit - 4 * 32)


def test_a_cpu_only_launch_is_judged_on_the_cpu_arena(analyse: Analyse) -> None:
    source = CPU_ONLY.format(n=40000, device='"cpu"')  # 2 x 40000 floats: 312.5 KiB
    (record,) = _wh015(analyse(source, select=["WH015"], target="sm_90"))
    assert record.expected == CPU_TILE_ARENA and record.actual == 2 * 40000 * 4
    assert 'every launch of it says device="cpu"' in record.message and "tile arena" in record.message


@pytest.mark.slow
def test_the_cpu_only_kernel_runs_on_the_cpu(tmp_path: Path) -> None:
    script = tmp_path / "cpu_only.py"
    script.write_text(
        CPU_ONLY.format(n=14000, device='"cpu"')
        + """
import numpy as np
x = wp.ones((2, 14000), dtype=float, device="cpu")
y = wp.zeros(14000, dtype=float, device="cpu")
run(x, y)
assert np.all(y.numpy() == 2.0)
print("ran")
""",
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "ran" in done.stdout, done.stderr[-2000:]


FFT = """
import warp as wp

N = wp.constant({n})
M = wp.constant({m})


@wp.kernel
def spectrum(x: wp.array2d(dtype=wp.vec2d), y: wp.array2d(dtype=wp.vec2d)):
    a = wp.tile_load(x, shape=(1, N))
    wp.tile_fft(a)
    a[0, 0] = wp.vec2d(0.0, 0.0)  # in shared memory after the transform
    b = wp.tile_load(y, shape=(1, M), storage="shared")
    wp.tile_store(y, a)
    wp.tile_store(x, b)


def run(x, y):
    wp.launch_tiled(spectrum, dim=[1], inputs=[x], outputs=[y], block_dim={block_dim})
"""


def test_the_fft_scratch_counts(analyse: Analyse) -> None:
    """`tile_fft` asks cuFFTDx for scratch on top of the tiles: on sm_90, 2048 points of vec2d with 16 per
    thread need all 32 KiB; on another architecture at least half of it. A 4096-point tile (64 KiB) and a
    1024-point one (16 KiB) fit sm_86's 98 KiB (at block_dim 256) alone but not with 32 KiB of scratch."""
    model = build_model(FFT.format(n=2048, m=64, block_dim=128), "k.py", load_table())
    (kernel,) = [k for k in model.kernels if k.is_kernel]
    estimate = SharedMemoryEstimator(model, kernel, model.types(kernel), block_dim=128, arch=90).run()
    assert estimate.own == (2048 + 64) * 16 and estimate.extra == estimate.extra_minimum == 2048 * 16
    # without knowing the architecture: the whole transform at most, half of it at least
    unsure = SharedMemoryEstimator(model, kernel, model.types(kernel), block_dim=128).run()
    assert (unsure.extra, unsure.extra_minimum) == (2048 * 16, 2048 * 8)
    (record,) = _wh015(analyse(FFT.format(n=4096, m=1024, block_dim=256), select=["WH015"], target="sm_86"))
    assert record.actual == (4096 + 1024) * 16 + 4096 * 8
    assert "scratch of `tile_fft`" in str(record.related)
    assert _wh015(analyse(FFT.format(n=4096, m=64, block_dim=256), select=["WH015"], target="sm_86")) == []


FACTORY = """
import functools

import warp as wp


@functools.cache
def make_block_solver(block: int):
    @wp.kernel
    def factor(A: wp.array2d(dtype=float), L: wp.array2d(dtype=float)):
        a = wp.tile_load(A, shape=(block, block), storage="shared")
        l = wp.tile_cholesky(a)
        wp.tile_store(L, l)

    return factor


class Solver:
    def __init__(self, block: int = {block}):
        self.kernel = make_block_solver(block)

    def factorize(self, A, L):
        wp.launch_tiled(self.kernel, dim=1, inputs=[A, L], block_dim=64)
"""


def test_a_factory_kernel_is_estimated_from_its_callers_defaults_but_not_judged(analyse: Analyse) -> None:
    model = build_model(FACTORY.format(block=128), "k.py", load_table())
    (kernel,) = [k for k in model.kernels if k.is_kernel]
    estimate = SharedMemoryEstimator(model, kernel, model.types(kernel)).run()
    # the input and the factor, 128 x 128 floats each: 128 KiB, over sm_86's 99 KiB
    assert estimate.request == 2 * 128 * 128 * 4 and estimate.assumed
    # other calls may pass a smaller block: no finding
    assert _wh015(analyse(FACTORY.format(block=128), select=["WH015"], target="sm_86")) == []


FACTORY_CALLED_ONCE = """
import warp as wp


def make_square(tile: int):
    @wp.kernel
    def square(a: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
        i, j = wp.tid()
        x = wp.tile_load(a, shape=(tile, tile), offset=(i * tile, j * tile))
        y = wp.tile_matmul(x, x)
        wp.tile_store(out, y, offset=(i * tile, j * tile))

    return square


square = make_square({tile})
"""


def test_a_factory_kernel_whose_sizes_the_files_one_call_passes_is_judged(analyse: Analyse) -> None:
    """The one call `make_square(256)` builds a kernel of exactly that size: x and y, 256 KiB each."""
    (record,) = _wh015(analyse(FACTORY_CALLED_ONCE.format(tile=256), select=["WH015"], target="cpu"))
    assert record.actual == 2 * 256 * 256 * 4 and "256 KiB tile arena" in record.message
    assert _wh015(analyse(FACTORY_CALLED_ONCE.format(tile=64), select=["WH015"], target="cpu")) == []
    # a second call may build it smaller: the largest is an assumption again
    twice = FACTORY_CALLED_ONCE.format(tile=256) + "small = make_square(16)\n"
    assert _wh015(analyse(twice, select=["WH015"], target="cpu")) == []


@pytest.mark.slow
def test_the_factory_kernel_really_overflows_the_cpu_arena(tmp_path: Path) -> None:
    script = tmp_path / "factory.py"
    script.write_text(
        FACTORY_CALLED_ONCE.format(tile=256)
        + """
import numpy as np
wp.config.log_level = wp.LOG_WARNING
a = wp.array(np.ones((256, 256), dtype=np.float32), device="cpu")
b = wp.zeros((256, 256), dtype=float, device="cpu")
wp.launch_tiled(square, dim=(1, 1), inputs=[a, b], block_dim=64, device="cpu")
wp.synchronize()
print("survived")
""",
        encoding="utf-8",
    )
    env = {**os.environ, "WARP_CACHE_PATH": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode != 0 and "survived" not in done.stdout
    assert "exceeds the 256 KiB arena" in done.stdout + done.stderr


TILE_OF_VALUES = """
import warp as wp

H = wp.constant(16)


@wp.kernel
def layer(w: wp.array2d(dtype=float), out: wp.array2d(dtype=float)):
    i = wp.tid()
    v = wp.vec4(float(i), 1.0, 2.0, 3.0)
    f = wp.tile(v)                      # 4 x block_dim
    W = wp.tile_load(w, shape=(H, 4))
    z = wp.tile_matmul(W, f)            # H x block_dim, shared
    wp.tile_store(out, z)


def run(w, out):
    wp.launch_tiled(layer, dim=[1], inputs=[w], outputs=[out], block_dim={block_dim})
"""


@pytest.mark.parametrize("block_dim", [32, 128])
def test_wp_tile_of_a_value_per_thread_is_block_dim_wide(block_dim: int) -> None:
    source = TILE_OF_VALUES.format(block_dim=block_dim)
    model = build_model(source, "k.py", load_table())
    (kernel,) = [k for k in model.kernels if k.is_kernel]
    ours = SharedMemoryEstimator(model, kernel, model.types(kernel), block_dim=block_dim).run().request
    assert ours == (4 * block_dim + 16 * 4 + 16 * block_dim) * 4
    assert warp_smem_at(source, block_dim) == {"layer": ours}


def warp_smem_at(source: str, block_dim: int) -> dict[str, int]:
    """`warp_smem` at another block_dim."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    folder = Path(tempfile.mkdtemp(prefix="wh015_"))
    name = f"wh015_smem_{next(_counter)}"
    (folder / f"{name}.py").write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        result = {}
        for key, value in vars(module).items():
            if isinstance(value, wp.Kernel):
                opts = value.module.resolve_options(wp.config, block_dim)
                opts["output_arch"] = None
                value.adj.build(None, opts)
                result[key] = int(value.adj.get_total_required_shared())
        return result
    finally:
        sys.modules.pop(name, None)


def test_cholesky_and_solver_results_are_new_shared_tiles() -> None:
    source = """
import warp as wp

np_type, wp_type = float, wp.float64
N = 32


@wp.kernel
def solve(A: wp.array2d(dtype=wp_type), X: wp.array(dtype=wp_type), Y: wp.array(dtype=wp_type)):
    a = wp.tile_load(A, shape=(N, N))
    l = wp.tile_cholesky(a)
    x = wp.tile_load(X, shape=N)
    y = wp.tile_cholesky_solve(l, x)
    wp.tile_store(Y, y)
"""
    # the dtype through a tuple assignment; a, l: 8 KiB each, x, y: 256 bytes (as warp's cholesky example)
    assert estimates(source) == warp_smem(source) == {"solve": 16896}


NO_TILES = """
import warp as wp


@wp.func
def twice(x: float):
    return x * 2.0


@wp.kernel
def scale(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = twice(a[i])


def run(a):
    wp.launch(scale, dim=a.shape[0], inputs=[a], block_dim=64)
"""


def test_a_kernel_reaching_no_tile_is_not_typed(analyse: Analyse, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel's types are read only for an estimate or a hint: a kernel whose calls reach no ``tile*``
    builtin (most kernels of a file with functions) needs none."""
    from warp_harness.model.module import ModuleModel

    typed: list[str] = []
    types = ModuleModel.types

    def counting(self: ModuleModel, kernel):  # type: ignore[no-untyped-def]
        typed.append(kernel.name)
        return types(self, kernel)

    monkeypatch.setattr(ModuleModel, "types", counting)
    assert analyse(NO_TILES, select=["WH015"], target="sm_86") == []
    assert typed == []
    assert [r.rule for r in analyse(BIG_SHARED, select=["WH015"], target="sm_86")] == ["WH015"]
    assert set(typed) == {"big"}


def test_a_kernel_reaching_no_tile_reads_no_module_options(
    analyse: Analyse, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty estimate fits any block_dim the launches may use: the module's options (a walk of the whole
    file for a ``"block_dim"`` key) are not read for it."""
    from warp_harness.rules.wh015_tile_shared_memory import TileSharedMemory

    def refused(ctx, kernel):  # type: ignore[no-untyped-def]
        raise AssertionError("module options read")

    monkeypatch.setattr(TileSharedMemory, "_default_block_dim", staticmethod(refused))
    assert analyse(NO_TILES.replace(", block_dim=64", ""), select=["WH015"], target="sm_86") == []
