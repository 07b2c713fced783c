"""``warp-harness calibrate``: measure a device and write a hardware profile for it.

Measured: device-to-device copy bandwidth (``wp.copy`` of a large buffer, bytes read plus
bytes written), the rate of a large float32 matrix product (Warp's ``tile_matmul`` in a
tiled GEMM; on CUDA also torch's, when torch is there, as a reference), shared memory per
block and the SM count (``wp.get_device(...)`` attributes; cupy's device properties when
present). Fields that cannot be measured come from the bundled profile of the same
architecture (else from the nearest one). The result is a TOML file that
``warp_harness.hardware.load_profile`` accepts, so ``--target FILE.toml`` (the static
rules) and ``profile = "FILE.toml"`` of ``[tool.warp-harness.runtime]`` (the benchmark's
roofline figures) both use it.

Timing: CUDA events on the device's stream around each launch; on the CPU ``perf_counter``
around launch + synchronise. Warm-up excluded, median of the repeats; on CUDA the copy is
timed in the benchmark stage's windows (15, 0.1 s apart) and the fastest window counts (a GPU
has slow spells of a few %: benchmarks/RESULTS.md, runs 7-8).
"""

from __future__ import annotations

import importlib
import math
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from warp_harness.daemon.options import RuntimeOptions

# sizes: large enough to leave the caches (CUDA: 1 GiB per buffer, 4096^3 GEMM)
CUDA_COPY_BYTES = 1 << 30
CPU_COPY_BYTES = 64 << 20
CUDA_GEMM_N = 4096
CPU_GEMM_N = 256


@dataclass
class Measurement:
    name: str
    median_s: float
    min_s: float
    max_s: float
    repeats: int
    rate: float  # GB/s or TFLOP/s
    unit: str
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "median_s": self.median_s,
            "min_s": self.min_s,
            "max_s": self.max_s,
            "repeats": self.repeats,
            "rate": self.rate,
            "unit": self.unit,
            "detail": self.detail,
        }


@dataclass
class Calibration:
    device: str
    device_name: str
    arch: int | None
    sm_count: int
    shared_memory_per_block_optin: int
    measurements: list[Measurement] = field(default_factory=list)
    properties: dict[str, int] = field(default_factory=dict)  # cupy's device properties, when read
    template: str = "cpu"
    date: str = ""

    def get(self, name: str) -> Measurement | None:
        return next((m for m in self.measurements if m.name == name), None)


def _wp() -> Any:
    wp: Any = importlib.import_module("warp")
    return wp


def time_launches(
    fn: Callable[[], None], device: Any, *, repeats: int = 20, warmup: int = 3, max_time_s: float = 5.0
) -> list[float]:
    """Seconds per call of ``fn`` (which launches on ``device``), warm-up excluded."""
    wp = _wp()
    for _ in range(warmup):
        fn()
    wp.synchronize_device(device)
    times: list[float] = []
    started = time.perf_counter()
    cuda = bool(getattr(device, "is_cuda", False))
    while len(times) < repeats:
        if cuda:
            stream = device.stream
            start = wp.Event(device, enable_timing=True)
            end = wp.Event(device, enable_timing=True)
            stream.record_event(start)
            fn()
            stream.record_event(end)
            times.append(wp.get_event_elapsed_time(start, end) / 1e3)
        else:
            t0 = time.perf_counter()
            fn()
            wp.synchronize_device(device)
            times.append(time.perf_counter() - t0)
        if len(times) >= 3 and time.perf_counter() - started > max_time_s:
            break
    return times


# the benchmark stage's own defaults: a GPU has slow spells (steps/bench.py)
COPY_WINDOWS = RuntimeOptions.bench_windows
COPY_WINDOW_GAP_S = RuntimeOptions.bench_window_gap_s


def best_window(
    measure: Callable[[], list[float]],
    windows: int,
    gap_s: float,
    sleep: Callable[[float], None] = time.sleep,
) -> list[float]:
    """The times of the fastest (lowest-median) of ``windows`` calls of ``measure``, ``gap_s``
    apart: the device's speed outside its slow spells, which would otherwise lower a peak."""
    best: list[float] | None = None
    for w in range(windows):
        if w:
            sleep(gap_s)
        times = measure()
        if best is None or statistics.median(times) < statistics.median(best):
            best = times
    assert best is not None
    return best


def _measurement(name: str, times: list[float], work: float, unit: str, detail: str = "") -> Measurement:
    median = statistics.median(times)
    scale = 1e9 if unit == "GB/s" else 1e12
    return Measurement(name, median, min(times), max(times), len(times), work / median / scale, unit, detail)


def measure_copy(device: Any, nbytes: int | None = None, repeats: int = 20) -> Measurement:
    """Device-to-device ``wp.copy``: bytes read + bytes written over the median time."""
    wp = _wp()
    nbytes = nbytes or (CUDA_COPY_BYTES if device.is_cuda else CPU_COPY_BYTES)
    n = nbytes // 4
    src = wp.full(n, 1.5, dtype=wp.float32, device=device)
    dst = wp.empty(n, dtype=wp.float32, device=device)
    windows = COPY_WINDOWS if device.is_cuda else 1
    times = best_window(
        lambda: time_launches(lambda: wp.copy(dst, src), device, repeats=repeats),
        windows,
        COPY_WINDOW_GAP_S,
    )
    if not bool((dst.numpy()[:: max(1, n // 1024)] == 1.5).all()):
        raise RuntimeError("wp.copy produced wrong data during calibration")
    how = f", best of {windows} windows" if windows > 1 else ""
    return _measurement("copy", times, 2.0 * n * 4, "GB/s", f"wp.copy of {n * 4 / 2**20:.0f} MiB{how}")


def measure_tile_gemm(device: Any, n: int | None = None, repeats: int = 10) -> Measurement:
    """A tiled float32 GEMM through Warp's ``tile_matmul``: 2 n^3 FLOP over the median time."""
    import numpy as np

    wp = _wp()
    from warp_harness.daemon import calibrate_kernels as K

    n = n or (CUDA_GEMM_N if device.is_cuda else CPU_GEMM_N)
    tm, tn = int(K.CAL_TILE_M), int(K.CAL_TILE_N)
    n = max(tm, n - n % tm)
    rng = np.random.default_rng(0)
    a_host = rng.standard_normal((n, n)).astype(np.float32)
    b_host = rng.standard_normal((n, n)).astype(np.float32)
    a = wp.array(a_host, dtype=wp.float32, device=device)
    b = wp.array(b_host, dtype=wp.float32, device=device)
    c = wp.zeros((n, n), dtype=wp.float32, device=device)

    def launch() -> None:
        wp.launch_tiled(
            K.cal_tile_gemm,
            dim=(n // tm, n // tn),
            inputs=[a, b, c],
            block_dim=K.CAL_TILE_THREADS,
            device=device,
        )

    t0 = time.perf_counter()
    launch()
    wp.synchronize_device(device)
    first_s = time.perf_counter() - t0
    rows = slice(0, min(n, 64))
    ref = a_host[rows].astype(np.float64) @ b_host.astype(np.float64)
    got = c.numpy()[rows]
    rel = float(np.linalg.norm(got - ref) / np.linalg.norm(ref))
    if not rel < 1e-2:
        raise RuntimeError(f"the calibration GEMM is wrong (relative error {rel:.3g})")
    times = time_launches(launch, device, repeats=repeats, warmup=1)
    return _measurement(
        "tile_gemm",
        times,
        2.0 * n**3,
        "TFLOP/s",
        f"warp tile_matmul {n}x{n}x{n} float32, tiles {tm}x{tn}x{int(K.CAL_TILE_K)}, "
        f"block_dim {K.CAL_TILE_THREADS}; rel. error {rel:.2e}; first launch incl. compile {first_s:.1f} s",
    )


def measure_reference_gemm(device: Any, n: int | None = None, dtype: str = "float32") -> Measurement | None:
    """A library GEMM for reference: torch on CUDA (TF32 off), numpy on the CPU."""
    n = n or (CUDA_GEMM_N * 2 if device.is_cuda else 1024)
    if not device.is_cuda:
        import numpy as np

        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n)).astype(dtype)
        b = rng.standard_normal((n, n)).astype(dtype)
        a @ b
        times = []
        for _ in range(5):
            t0 = time.perf_counter()
            a @ b
            times.append(time.perf_counter() - t0)
        return _measurement(f"numpy_gemm_{dtype}", times, 2.0 * n**3, "TFLOP/s", f"numpy {n}^3 {dtype}")
    try:
        torch: Any = importlib.import_module("torch")
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = f"cuda:{device.ordinal}"
    tdtype = getattr(torch, dtype)
    a = torch.randn(n, n, device=dev, dtype=torch.float32).to(tdtype)
    b = torch.randn(n, n, device=dev, dtype=torch.float32).to(tdtype)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize(dev)
    times = []
    for _ in range(10):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        torch.matmul(a, b)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    return _measurement(f"torch_gemm_{dtype}", times, 2.0 * n**3, "TFLOP/s", f"torch.matmul {n}^3 {dtype}")


def _cupy_properties(device: Any) -> dict[str, int]:
    try:
        cupy: Any = importlib.import_module("cupy")
        props = cupy.cuda.runtime.getDeviceProperties(device.ordinal)
    except Exception:
        return {}
    keys = (
        "sharedMemPerBlock",
        "sharedMemPerBlockOptin",
        "sharedMemPerMultiprocessor",
        "regsPerMultiprocessor",
        "regsPerBlock",
        "warpSize",
        "maxThreadsPerBlock",
        "multiProcessorCount",
    )
    return {k: int(props[k]) for k in keys if k in props}


def _template_name(arch: int | None) -> str:
    from warp_harness.hardware import bundled_profiles

    names = bundled_profiles()
    if arch is None:
        return "cpu"
    if f"sm_{arch}" in names:
        return f"sm_{arch}"
    cuda = sorted((int(n[3:]) for n in names if n.startswith("sm_")), key=lambda a: (abs(a - arch), -a))
    return f"sm_{cuda[0]}" if cuda else "cpu"


def calibrate(
    device_name: str = "cpu",
    *,
    gemm: bool = True,
    reference: bool = True,
    on_progress: Callable[[dict[str, Any]], None] | None = None,
) -> Calibration:
    """Measure ``device_name``; ``on_progress`` gets ``{"label": ...}`` before each measurement."""

    def say(label: str) -> None:
        if on_progress is not None:
            on_progress({"label": f"calibrate {device_name}: {label}"})

    say("starting Warp")
    wp = _wp()
    wp.config.log_level = wp.LOG_WARNING
    wp.init()
    device = wp.get_device(device_name)
    arch = int(device.arch) if device.is_cuda else None
    cal = Calibration(
        device=str(device),
        device_name=str(device.name),
        arch=arch,
        sm_count=int(getattr(device, "sm_count", 0) or 0),
        shared_memory_per_block_optin=int(getattr(device, "max_shared_memory_per_block", 0) or 0),
        template=_template_name(arch),
        date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    if device.is_cuda:
        cal.properties = _cupy_properties(device)
    say("copy bandwidth")
    cal.measurements.append(measure_copy(device))
    if gemm:
        say("tile GEMM (compiles a kernel)")
        cal.measurements.append(measure_tile_gemm(device))
    if reference:
        for dtype in ("float32", "float16", "float64") if device.is_cuda else ("float32", "float64"):
            say(f"reference GEMM {dtype}")
            try:
                m = measure_reference_gemm(device, dtype=dtype)
            except Exception:
                m = None
            if m is not None:
                cal.measurements.append(m)
    return cal


def profile_fields(cal: Calibration, name: str | None = None) -> dict[str, Any]:
    """Every HardwareProfile field: measured where measured, else the template profile's."""
    from dataclasses import asdict

    from warp_harness.hardware import load_profile

    base = asdict(load_profile(cal.template))
    out: dict[str, Any] = dict(base)
    props = cal.properties
    out["name"] = name or (f"calibrated-sm_{cal.arch}" if cal.arch else "calibrated-cpu")
    out["description"] = f"{cal.device_name} ({cal.device}), measured by warp-harness calibrate on {cal.date}"
    out["device"] = "cuda" if cal.arch else "cpu"
    out["arch"] = cal.arch
    if cal.arch:
        optin = props.get("sharedMemPerBlockOptin") or cal.shared_memory_per_block_optin
        if optin:
            out["shared_memory_per_block_optin"] = int(optin)
        per_block = props.get("sharedMemPerBlock") or min(int(out["shared_memory_per_block"]) or 49152, optin)
        out["shared_memory_per_block"] = int(per_block)
        out["sm_count"] = int(props.get("multiProcessorCount") or cal.sm_count or out["sm_count"])
        for key, prop in (
            ("shared_memory_per_sm", "sharedMemPerMultiprocessor"),
            ("registers_per_sm", "regsPerMultiprocessor"),
            ("warp_size", "warpSize"),
            ("max_threads_per_block", "maxThreadsPerBlock"),
        ):
            if props.get(prop):
                out[key] = int(props[prop])
    copy = cal.get("copy")
    if copy is not None:
        out["peak_bandwidth_gbs"] = round(copy.rate, 1)
    fp32 = [
        m.rate
        for m in cal.measurements
        if m.name in ("tile_gemm", "torch_gemm_float32", "numpy_gemm_float32")
    ]
    if fp32:
        out["peak_fp32_tflops"] = round(max(fp32), 3)
    for key, mname in (
        ("peak_fp16_tflops", "torch_gemm_float16"),
        ("peak_fp64_tflops", "torch_gemm_float64"),
    ):
        m = cal.get(mname)
        if m is not None:
            out[key] = round(m.rate, 3)
    if cal.get("numpy_gemm_float64") is not None:
        out["peak_fp64_tflops"] = round(cal.get("numpy_gemm_float64").rate, 3)  # type: ignore[union-attr]
    measured = ", ".join(f"{m.name} {m.rate:.4g} {m.unit}" for m in cal.measurements)
    out["source"] = f"warp-harness calibrate {cal.date}: {measured}; other fields from {cal.template}.toml"
    return out


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else "0.0"
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def to_toml(cal: Calibration, name: str | None = None) -> str:
    fields_ = profile_fields(cal, name)
    lines = [
        "# written by `warp-harness calibrate`: a hardware profile for load_profile() / --target",
        f"# host {platform.node()}, {cal.date}",
    ]
    for key, value in fields_.items():
        if value is None:
            continue
        lines.append(f"{key} = {_toml_value(value)}")
    lines.append("")
    lines.append("[calibration]  # the raw measurements (ignored by load_profile)")
    lines.append(f"template = {_toml_value(cal.template)}")
    for m in cal.measurements:
        lines.append(
            f"{m.name} = {{ median_s = {m.median_s!r}, min_s = {m.min_s!r}, max_s = {m.max_s!r}, "
            f"repeats = {m.repeats}, rate = {m.rate!r}, unit = {_toml_value(m.unit)}, "
            f"detail = {_toml_value(m.detail)} }}"
        )
    for key, value in sorted(cal.properties.items()):
        lines.append(f"prop_{key} = {value}")
    return "\n".join(lines) + "\n"


def summary(cal: Calibration) -> str:
    rows = [
        f"{cal.device} ({cal.device_name}), arch {cal.arch or '-'}, {cal.sm_count} SMs, "
        f"shared memory per block (opt-in) {cal.shared_memory_per_block_optin} B"
    ]
    for m in cal.measurements:
        rows.append(
            f"  {m.name:20} {m.rate:10.4g} {m.unit:8} median {m.median_s * 1e3:9.3f} ms "
            f"(min {m.min_s * 1e3:.3f}, max {m.max_s * 1e3:.3f}, n={m.repeats})  {m.detail}"
        )
    return "\n".join(rows)


def write_profile(cal: Calibration, output: Path, name: str | None = None) -> Path:
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(to_toml(cal, name), encoding="utf-8")
    return output
