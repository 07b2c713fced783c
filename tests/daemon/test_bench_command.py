"""`warp-harness bench`: the benchmark stage headless, its table, trust, profiles; the
benchmark stage's CUDA details (events on the device's stream, warm-up by time, rotation
over fresh allocations) where they can be checked without a GPU."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import EXAMPLES

from warp_harness.config import ConfigError
from warp_harness.daemon.benchcmd import BenchOutcome, rows_of, table
from warp_harness.daemon.cli import build_parser
from warp_harness.daemon.options import RuntimeOptions
from warp_harness.daemon.results import CheckReport

FAST_ARGS = ["--repeats", "5", "--max-time", "0.05", "--launch-timeout", "5", "--seed", "3"]


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness.daemon", "bench", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.warp-harness]\n")
    for name in ("saxpy.py", "slow_target.py", "race_sum.py"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    return tmp_path


def test_bench_and_calibrate_register() -> None:
    parser = build_parser()
    assert callable(parser.parse_args(["bench"]).func)
    assert callable(parser.parse_args(["calibrate"]).func)
    args = parser.parse_args(["bench", "k.py", "--device", "cuda:0", "--trust", "--target", "sm_90"])
    assert args.device == ["cuda:0"] and args.trust and args.profile == "sm_90"


def test_bench_needs_trust(ws: Path) -> None:
    (ws / "marker.py").write_text(
        "import pathlib\npathlib.Path(__file__).with_name('EXECUTED').touch()\n", encoding="utf-8"
    )
    p = _run(".", cwd=ws)
    assert p.returncode == 2
    assert "not trusted" in p.stderr
    assert not (ws / "EXECUTED").exists()


@pytest.mark.slow
def test_bench_prints_a_table_and_checks_targets(ws: Path) -> None:
    p = _run("saxpy.py", "slow_target.py", "race_sum.py", "--trust", *FAST_ARGS, cwd=ws)
    assert p.returncode == 1, p.stderr  # slow_target misses its targets
    lines = p.stdout.splitlines()
    assert lines[0].split()[:4] == ["kernel", "device", "size", "median"]
    row = next(line for line in lines if line.startswith("saxpy.py::saxpy"))
    assert " cpu " in row and "65536" in row and "latency_us <= 100000: met" in row
    slow = next(line for line in lines if line.startswith("slow_target.py::row_sum"))
    assert "latency_us <= 0.5: missed" in slow and "bandwidth_util >= 0.8: missed" in slow
    # the non-atomic sum is right on the CPU (threads run one after another)
    assert any(line.startswith("race_sum.py::racy_sum") and " cpu " in line for line in lines)
    assert "3 timed" in p.stderr


@pytest.mark.slow
def test_bench_json_with_a_calibrated_profile(ws: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    from warp_harness.hardware import load_profile

    prof = tmp_path_factory.mktemp("prof") / "mine.toml"
    text = (Path(__file__).resolve().parents[2] / "warp_harness" / "hardware" / "cpu.toml").read_text()
    prof.write_text(text.replace("peak_bandwidth_gbs = 50.0", "peak_bandwidth_gbs = 2.5"), encoding="utf-8")
    assert load_profile(str(prof)).peak_bandwidth_gbs == 2.5
    out = ws / "bench.json"
    p = _run(
        "saxpy.py", "--trust", *FAST_ARGS, "--profile", str(prof), "--format", "json", "-o", str(out), cwd=ws
    )
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    (row,) = data["rows"]
    assert row["status"] == "timed" and row["device"] == "cpu" and row["size"] == 1 << 16
    m = row["metrics"]
    assert m["bandwidth_util"] == pytest.approx(m["bandwidth_gbs"] / 2.5)
    assert row["targets"] == [{"target": "latency_us <= 100000", "value": m["latency_us"], "verdict": "met"}]
    assert row["timer"] == "perf_counter+synchronize"
    # the CPU times in one window (the windows and their early stop are CUDA's: steps/bench_windows.py)
    assert row["windows"] == 1 and row["windows_stop"] == "one window"


def test_bench_rejects_an_unknown_profile(ws: Path) -> None:
    p = _run("saxpy.py", "--trust", "--profile", "nope.toml", cwd=ws)
    assert p.returncode == 2 and "does not exist" in p.stderr


@pytest.mark.slow
def test_bench_on_a_missing_cuda_device_says_so(ws: Path) -> None:
    import warp as wp

    if wp.get_cuda_device_count() > 0:  # pragma: no cover - GPU machines
        pytest.skip("a CUDA device is present")
    p = _run("saxpy.py", "--trust", "--device", "cuda:0", *FAST_ARGS, cwd=ws)
    assert p.returncode == 0, p.stderr
    assert "note: device cuda:0 skipped" in p.stdout


def _payload(**bench: Any) -> CheckReport:
    return CheckReport(
        path="k.py",
        trusted=True,
        devices=["cpu", "cuda:0"],
        kernels={
            "k": {
                "contract": "k",
                "validate": {"cpu": "pass", "cuda:0": "fail"},
                "bench": {"cpu": bench},
            },
            "helper": {"contract": None, "validate": {}, "bench": {}},
        },
    )


def test_rows_and_table_from_a_result() -> None:
    payload = _payload(
        size=1024,
        median_s=2e-3,
        min_s=1.9e-3,
        max_s=2.5e-3,
        iqr_s=1e-4,
        repeats=50,
        timer="cuda events",
        metrics={"bandwidth_gbs": 12.5, "bandwidth_util": 0.25},
        targets=[{"target": "bandwidth_util >= 0.8", "value": 0.25, "verdict": "missed"}],
    )
    rows = rows_of(payload)
    assert [(r.kernel, r.device, r.status) for r in rows] == [
        ("k", "cpu", "timed"),
        ("k", "cuda:0", "validate:fail"),
    ]
    assert not rows[0].ok and not rows[1].ok
    text = table(BenchOutcome(rows, ["k.py"], [], RuntimeOptions()))
    first = text.splitlines()[2]
    assert "2.000 ms" in first and "±2.5%" in first and "12.5" in first and "25.0" in first
    assert "bandwidth_util >= 0.8: missed" in first
    assert "validate:fail" in text.splitlines()[3]


def test_profile_and_warmup_options() -> None:
    opts = RuntimeOptions().merged({"profile": "sm_90", "bench_warmup_s": 0})
    assert opts.profile == "sm_90" and opts.bench_warmup_s == 0.0
    assert RuntimeOptions.from_dict(opts.to_dict()) == opts
    with pytest.raises(ConfigError):
        RuntimeOptions().merged({"profile": 3})
    with pytest.raises(ConfigError):
        RuntimeOptions().merged({"bench_warmup_s": -1})


class _FakeStream:
    def __init__(self) -> None:
        self.recorded: list[Any] = []

    def record_event(self, ev: Any) -> None:
        self.recorded.append(ev)


class _FakeCuda:
    """Enough of a CUDA warp.Device for the benchmark stage's bookkeeping."""

    is_cuda = True
    is_cpu = False
    arch = 90
    free_memory = 64 << 30

    def __init__(self) -> None:
        self.stream = _FakeStream()


@dataclasses.dataclass
class _FakeCudaBench:
    """The benchmark stage's ``measure`` on a stubbed CUDA device (Warp's launch, arrays, events and
    the clocks replaced): each launch takes 1 ms of the fake clock, ``elapsed(gaps)`` gives the
    events' time of a launch after that many gaps between windows."""

    measure: Any
    launches: list[Any]
    allocs: list[Any]
    gaps: list[float]
    checks: list[dict[str, Any]]
    fills: list[float]
    device: Any


def _fake_cuda_bench(monkeypatch: pytest.MonkeyPatch, elapsed: Any, **options: Any) -> _FakeCudaBench:
    import numpy as np

    from warp_harness.contract import Contract
    from warp_harness.daemon import integrity as I
    from warp_harness.daemon.steps import JobSpec, KernelInfo, StepContext
    from warp_harness.daemon.steps import bench as B
    from warp_harness.daemon.steps import launching as L

    class Arg:
        def __init__(self, label: str, type_: Any) -> None:
            self.label, self.type = label, type_

    class ArrType:
        dtype = "float32"

    kernel = type("K", (), {"adj": type("A", (), {"args": [Arg("x", ArrType()), Arg("y", ArrType())]})()})()
    n = 1 << 20
    contract = Contract(
        kernel="k",
        reference=lambda x: {"y": x},
        inputs=lambda size, rng: {"x": np.ones(size, np.float32), "y": np.ones(size, np.float32)},
        outputs=["y"],
        sizes=[n],
    )
    launches: list[Any] = []
    allocs: list[Any] = []
    clock = [0.0]
    gaps: list[float] = []

    class FakeArray:
        def __init__(self, host: Any, dtype: Any = None, device: Any = None) -> None:
            self.shape = host.shape
            self.dtype = dtype
            self.device = device
            allocs.append(self)

    class FakeEvent:
        def __init__(self, device: Any, enable_timing: bool = False) -> None:
            pass

    def launch(k: Any, dim: Any, inputs: Any, device: Any, stream: Any = None) -> None:
        clock[0] += 0.001
        launches.append((inputs, stream))

    fake_wp = type(
        "W",
        (),
        {
            "array": FakeArray,
            # the device copies of a big set (steps/bench._device_copy: allocated, then assigned)
            "empty": staticmethod(
                lambda shape, dtype=None, device=None: FakeArray(np.empty(shape), dtype, device)
            ),
            "Event": FakeEvent,
            "launch": staticmethod(launch),
            "synchronize_device": staticmethod(lambda d: None),
            "synchronize_event": staticmethod(lambda e: None),
            "get_event_elapsed_time": staticmethod(lambda a, b: elapsed(len(gaps))),
        },
    )
    monkeypatch.setattr(B, "wp", fake_wp)
    # the steps launch, synchronise and time through the functions saved when the worker
    # started (integrity.TRUSTED), never through `wp.` looked up at call time
    fake_trusted = dataclasses.replace(
        I.TRUSTED,
        launch=launch,
        event=FakeEvent,
        synchronize_device=lambda d: None,
        synchronize_event=lambda e: None,
        get_event_elapsed_time=fake_wp.get_event_elapsed_time,
        perf_counter=lambda: clock[0],
        array_assign=lambda out, src: None,
    )
    monkeypatch.setattr(B, "TRUSTED", fake_trusted)
    monkeypatch.setattr(L, "TRUSTED", fake_trusted)  # the launches (validation's and the benchmark's)
    monkeypatch.setattr(B, "_clock", lambda: clock[0])
    checks: list[dict[str, Any]] = []  # the re-validations (run on real arrays in tests/exploits)
    monkeypatch.setattr(B, "revalidate", lambda *a, **k: checks.append(k))
    monkeypatch.setattr(B, "is_array", lambda t: isinstance(t, ArrType))
    monkeypatch.setattr(B, "_numpy_dtype", lambda t: np.float32)
    monkeypatch.setattr(B, "ROTATE_MAX_BYTES", 1 << 20)  # one host-made set only
    monkeypatch.setattr(B.time, "perf_counter", lambda: clock[0])

    def sleep(seconds: float) -> None:
        gaps.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(B.time, "sleep", sleep)
    fills: list[float] = []

    class CountingFiller:  # the real one launches a spin kernel (tests/daemon/test_stream_filler.py)
        filled_s = 0.0

        def __init__(self, device: Any, stream: Any) -> None:
            pass

        def fill(self) -> None:
            fills.append(clock[0])

        def enqueued(self, host_s: float) -> None:
            pass

    monkeypatch.setattr(B, "StreamFiller", CountingFiller)
    opts = RuntimeOptions(
        bench_repeats=10,
        bench_warmup=2,
        bench_warmup_s=0.02,
        bench_min_time_s=0.03,
        bench_max_time_s=10.0,
        bench_window_gap_s=0.2,
    ).merged(options)
    job = StepContext(JobSpec(0, Path("k.py"), "k.py", Path("."), opts, seed=1), progress=lambda **_: None)
    info = KernelInfo("k", 1, 0, 0, kernel=kernel, runnable=kernel, contract=contract)
    device = _FakeCuda()
    return _FakeCudaBench(
        lambda: B.measure(job, info, "cuda:1", device, n), launches, allocs, gaps, checks, fills, device
    )


def test_bench_stage_cuda_paths_without_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events go on the device's own stream (not the current device's), the warm-up lasts at
    least bench_warmup_s, and inputs too big for host-made rotation are re-uploaded into
    fresh allocations: with Warp's launch and arrays stubbed out."""
    # a slow spell of the device: 5% slower in the first two windows
    fake = _fake_cuda_bench(monkeypatch, lambda gaps: 1.0 if gaps == 2 else 1.05, bench_windows=3)
    m = fake.measure()
    gaps, checks, launches, device = fake.gaps, fake.checks, fake.launches, fake.device
    # three windows, 0.2 s apart, each of at least 0.01 s of 1 ms launches (past 10/3 repeats);
    # the time is the best window's median, not the median of all launches
    assert m["windows"] == 3 and gaps == [0.2, 0.2]
    assert m["windows_stop"] == "all windows" and m["window_spread"] == pytest.approx(0.05)
    # in each gap, the buffers just timed re-validated on inputs of their own; then the final one
    assert [(c.get("first"), c.get("window"), c.get("seed_check")) for c in checks] == [
        (0, 1, False),
        (1, 2, False),
        (0, 0, True),
    ]
    assert m["window_medians_s"] == pytest.approx([1.05e-3, 1.05e-3, 1e-3])
    assert m["timer"] == "cuda events" and m["median_s"] == pytest.approx(1e-3)
    assert 30 <= m["repeats"] <= 33 and m["pooled_median_s"] == pytest.approx(1.05e-3)
    assert m["rotated_sets"] == 5 and len(fake.allocs) == 10  # one host-made set, four more uploads of it
    assert len(m["set_medians_s"]) == 5 and all(t == pytest.approx(1.05e-3) for t in m["set_medians_s"])
    timed = [(args, stream) for args, stream in launches if stream is device.stream]
    assert len(timed) == m["repeats"]
    warm = len(launches) - len(timed)
    assert warm >= 60  # 0.02 s of 1 ms launches before each window, not just bench_warmup=2
    assert len(device.stream.recorded) == 2 * m["repeats"]  # start and end of each timed launch
    assert len(fake.fills) == m["repeats"]  # the stream kept busy ahead of every timed launch
    assert len({id(args[0]) for args, _ in timed}) == 5  # rotating between the allocations


def test_a_quiet_device_stops_the_windows_once_they_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #36 item 3: of at most 15 windows, a device that shows no slow spell (every window's
    median the same within 0.3%) is timed in bench_windows_agree = 4 (3 gaps, each re-validated),
    which is where the default's cost over one window went (about 2 s per kernel on an H100)."""
    jitter = [1.002, 1.0, 1.0025, 1.001]  # ms, per window: within 0.3% of the best
    fake = _fake_cuda_bench(monkeypatch, lambda gaps: jitter[gaps % 4], bench_windows=15)
    m = fake.measure()
    assert m["windows"] == 4 and m["windows_most"] == 15 and m["windows_stop"] == "agreed"
    assert fake.gaps == pytest.approx([0.2, 0.2, 0.2])
    assert [c.get("window") for c in fake.checks] == [1, 2, 3, 0]  # the gaps', then the final check
    assert m["median_s"] == pytest.approx(1e-3) and m["window_spread"] == pytest.approx(0.0025)


def test_a_slow_spell_takes_every_window_and_the_best_of_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """A device in a slow spell (windows 2-4% slower, scattered, the fast state only from window 13 on:
    the H200's vec4 copy in run 10) is timed in all 15 windows, and the time is the fast window's:
    windows 5-8 agree within 0.3% of the best so far, but window 2 was 1.4% above it (a spell)."""
    spell = [1.030, 1.045, 1.031, 1.040, 1.033, 1.032, 1.030, 1.031, 1.030, 1.036, 1.031, 1.040]
    spell += [1.0, 1.002, 1.001]
    fake = _fake_cuda_bench(monkeypatch, lambda gaps: spell[gaps], bench_windows=15)
    m = fake.measure()
    assert m["windows"] == 15 and m["windows_stop"] == "all windows" and len(fake.gaps) == 14
    assert m["median_s"] == pytest.approx(1e-3) and m["window_spread"] == pytest.approx(0.045)


@pytest.mark.slow
def test_bench_shows_performance_warnings_as_ci_does(tmp_path: Path) -> None:
    # too_fast.py's timing is beyond the hardware's peak: `ci` and the MCP `bench` tool said so (WHD032),
    # the table hid it
    shutil.copy(EXAMPLES / "too_fast.py", tmp_path / "too_fast.py")
    p = _run("too_fast.py", "--trust", *FAST_ARGS, cwd=tmp_path)
    assert any(line.startswith("warning WHD032 too_fast.py:") for line in p.stdout.splitlines()), p.stdout
    as_json = json.loads(_run("too_fast.py", "--trust", "--format", "json", *FAST_ARGS, cwd=tmp_path).stdout)
    assert "WHD032" in [w["rule"] for w in as_json["warnings"]]
