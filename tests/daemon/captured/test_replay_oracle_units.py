"""The CPU-testable parts of the replay's newer oracles: the CUDA race comparison and its scheduling,
the configurable tolerances, and the shrinker's reading of a kernel's indexing.

The race oracle is motivated by races Warp users hit that a CPU run cannot show, e.g. a thread that
resets a count other threads still read (https://github.com/newton-physics/newton/pull/2477), a
skip flag shared across worlds (https://github.com/google-deepmind/mujoco_warp/pull/809) and
accumulations read back in the same launch (https://github.com/newton-physics/newton/pull/3443).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from warp_harness.config import ConfigError
from warp_harness.daemon.captured import cuda_oracle, replay_cache, shrink
from warp_harness.daemon.captured import tolerances as tol
from warp_harness.daemon.options import RuntimeOptions, load_runtime_options

# ---------------------------------------------------------------- CUDA oracle: scheduling


def test_the_oracle_needs_a_cuda_device() -> None:
    assert cuda_oracle.plan(["cpu", "cuda"], "cpu", 0) == (None, cuda_oracle.NOT_RUN_NO_CUDA)
    assert cuda_oracle.plan(["cuda:0"], "cuda:0", 0)[0] is None


def test_the_workspace_devices_decide_for_a_cpu_launch() -> None:
    device, why = cuda_oracle.plan(["cpu"], "cpu", 1)
    assert device is None and "devices do not include CUDA" in why
    assert cuda_oracle.plan(["cpu", "cuda"], "cpu", 1) == ("cuda:0", "")
    assert cuda_oracle.plan(["cuda:1"], "cpu", 2) == ("cuda:1", "")
    device, why = cuda_oracle.plan(["cuda:3"], "cpu", 2)
    assert device is None and "cuda:3 is not present" in why


def test_a_launch_captured_on_cuda_gets_it_whatever_the_devices() -> None:
    assert cuda_oracle.plan(["cpu"], "cuda:0", 1) == ("cuda:0", "")
    assert cuda_oracle.plan(["cpu"], "cuda:1", 1) == (None, "cuda:1 is not present (1 CUDA device(s))")


# ---------------------------------------------------------------- CUDA oracle: comparison


def test_a_lost_update_is_flagged_and_accumulation_order_is_not() -> None:
    """A sum of 10,000 float32 terms in two orders differs in its last bits; a sum that lost one
    term (a non-atomic `+=` on a GPU) differs by the term."""
    rng = np.random.default_rng(3)
    terms = rng.uniform(-1, 1, 10_000).astype(np.float32)
    forward = np.array([np.float32(0)], np.float32)
    backward = forward.copy()
    for t in terms:
        forward[0] += t
    for t in terms[::-1]:
        backward[0] += t
    assert forward[0] != backward[0]  # the order shows in the bits
    assert cuda_oracle.compare("s", "x", forward, backward, threads=terms.size) is None
    lost = forward - terms[17]
    found = cuda_oracle.compare("s", "the CPU and cuda:0", forward, lost, threads=terms.size)
    assert found is not None and found.count == 1 and found.first[0][0] == (0,)


def test_plain_stores_are_compared_element_by_element() -> None:
    """A compare-then-store maximum that lost the race to a value 1e-3 below the true one: within
    what a sum's order explains of the array's scale, far beyond one thread's rounding."""
    best = np.array([1000.0, 2.0], np.float32)
    raced = np.array([999.0, 2.0], np.float32)
    found = cuda_oracle.compare("best", "x", best, raced)
    assert found is not None and found.count == 1
    ulps = best * np.float32(1 + 2e-7)
    assert cuda_oracle.compare("best", "x", best, ulps) is None


def test_which_arrays_a_kernel_sums_into_with_atomics() -> None:
    text = (
        "@wp.kernel\ndef k(x: wp.array(dtype=float), s: wp.array(dtype=float), f: wp.array(dtype=wp.vec3),"
        " h: wp.array(dtype=int), m: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    wp.atomic_add(s, 0, x[i])\n    f[i // 2] += wp.vec3(1.0)\n"
        "    h[0] = h[0] + 1\n    wp.atomic_max(m, 0, x[i])\n"
    )
    assert cuda_oracle.accumulated_arrays(text, "k") == frozenset({"s", "f"})


def test_integers_are_exact_and_the_first_elements_are_listed() -> None:
    a = np.arange(20, dtype=np.int32)
    b = a.copy()
    b[[3, 4, 9, 11, 12, 19]] += 1
    found = cuda_oracle.compare("hist", "two runs on cuda:0", a, b)
    assert found is not None and found.count == 6 and found.total == 20
    assert [i for i, _, _ in found.first] == [(3,), (4,), (9,), (11,), (12,)]  # FIRST_SHOWN of them


def test_poison_left_by_both_runs_is_equal() -> None:
    nan = np.array([np.nan, 1.0], np.float32)
    assert cuda_oracle.compare("y", "x", nan, nan.copy()) is None


def test_compare_runs_reports_both_oracles_of_an_array() -> None:
    cpu = {"s": np.array([100.0], np.float32), "x": np.ones(4, np.float32)}
    cuda = [
        {"s": np.array([37.0], np.float32), "x": np.ones(4, np.float32)},
        {"s": np.array([41.0], np.float32), "x": np.ones(4, np.float32)},
    ]
    (found,) = cuda_oracle.compare_runs(cpu, cuda, "cuda:0", frozenset({"s"}), 4)
    assert found.array == "s" and [d.between for d in found.differences] == [
        "the CPU and cuda:0",
        "two runs on cuda:0",
    ]
    text = cuda_oracle.message("total", found, "captured launch 0123abcd (dim [4], cpu) from k.py:9")
    assert text.startswith("`total`: likely race (non-atomic read-modify-write, compare-then-store) in `s`")
    assert "1 of 1 elements differ between the CPU and cuda:0, max difference 63" in text
    assert "(first: [0] 100.0 vs 37.0)" in text and "from k.py:9" in text
    same = [{"s": np.array([100.0], np.float32)}] * 2
    assert cuda_oracle.compare_runs({"s": np.array([100.0], np.float32)}, same, "cuda:0") == []


def test_the_summary_says_when_it_could_not_run() -> None:
    assert cuda_oracle.summary_note({"skipped": cuda_oracle.NOT_RUN_NO_CUDA}) == (
        "; CUDA race oracle not run: no CUDA device on this machine"
    )
    assert "two runs on cuda:0 agree" in cuda_oracle.summary_note({"device": "cuda:0"})
    assert cuda_oracle.summary_note(None) == ""


# ---------------------------------------------------------------- tolerances


def _workspace(tmp_path: Path, table: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        f"[tool.warp-harness]\n\n[tool.warp-harness.runtime.tolerances]\n{table}\n", encoding="utf-8"
    )
    return tmp_path


def test_tolerances_by_dtype_and_kernel_with_their_source(tmp_path: Path) -> None:
    ws = _workspace(tmp_path, 'float32 = { rtol = 1e-2, atol = 1e-3 }\n"fill.float64" = [1e-12, 0.0]')
    user = tol.parse_flags(["fill.float32=5e-5,1e-6"])
    t = tol.load(ws, user)
    assert t.get("fill", "float32") == tol.Tolerance(5e-5, 1e-6, tol.USER, "fill.float32")
    assert t.get("scale", "float32") == tol.Tolerance(1e-2, 1e-3, tol.WORKSPACE, "float32")
    assert t.get("scale", "float64").source == tol.DEFAULT
    looser = t.get("scale", "float32")
    assert looser.note("float32") == (
        "tolerance rtol 0.01, atol 0.001 for float32 set by the workspace's pyproject.toml (`float32`), "
        "looser than the default rtol 0.0001, atol 1e-05"
    )
    assert t.get("fill", "float64").note("float64") == ""  # the workspace's, but tighter
    assert t.get("fill", "float32").note("float32") == ""  # the user's own choice says nothing


def test_bad_tolerances_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="must be a float dtype"):
        tol.parse_table({"int32": [0, 1]}, "here")
    with pytest.raises(ConfigError, match="two numbers >= 0"):
        tol.parse_table({"float32": [-1, 0]}, "here")
    with pytest.raises(ConfigError, match="DTYPE=RTOL,ATOL"):
        tol.parse_flags(["float32=1e-3"])
    ws = _workspace(tmp_path, 'float32 = "loose"')
    assert tol.load(ws, None).get("k", "float32").source == tol.DEFAULT  # ignored, one line on stderr


def test_the_command_line_sets_the_user_tolerances_and_the_workspace_cannot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.warp-harness.runtime]\nreplay_tolerances = { float32 = [1.0, 1.0] }\n", encoding="utf-8"
    )
    options = load_runtime_options(tmp_path, {"replay_tolerances": ["float32=1e-3,1e-6"]})
    assert options.replay_tolerances == {"float32": (1e-3, 1e-6)}
    assert "only the command line sets it" in capsys.readouterr().err
    assert load_runtime_options(tmp_path, None).replay_tolerances == {}
    again = RuntimeOptions.from_dict(options.to_dict())  # through the worker's pipe and the cache key
    assert again.replay_tolerances == options.replay_tolerances


# ---------------------------------------------------------------- shrinking


KERNELS = """
import warp as wp

@wp.kernel
def by_tid(x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array2d(dtype=float)):
    i, j = wp.tid()
    y[i] = x[i + 2] * 2.0
    out[i, j] += x[j]
    wp.atomic_add(out, i, j, 1.0)

@wp.kernel
def shared(x: wp.array(dtype=float), s: wp.array(dtype=float)):
    i = wp.tid()
    wp.atomic_add(s, 0, x[i])

@wp.kernel
def neighbour(y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = y[i + 1]

@wp.kernel
def aliased(y: wp.array(dtype=float)):
    i = wp.tid()
    k = i
    y[k] = 1.0
"""


def test_prefix_shrinking_needs_every_written_array_indexed_by_the_thread() -> None:
    assert shrink.prefix_arrays(KERNELS, "by_tid") == frozenset({"y", "out"})  # x is only read
    assert shrink.prefix_arrays(KERNELS, "shared") is None  # every thread writes s[0]
    assert shrink.prefix_arrays(KERNELS, "neighbour") is None  # thread i reads what i + 1 writes
    assert shrink.prefix_arrays(KERNELS, "aliased") is None
    assert shrink.prefix_arrays(KERNELS, "missing") is None


def test_bisection_finds_the_smallest_failing_prefix() -> None:
    tried: list[int] = []

    def fails(k: int) -> bool:
        tried.append(k)
        return k >= 7

    assert shrink.smallest_failing(8, fails) == 7 and len(tried) == 3
    assert shrink.smallest_failing(1 << 20, lambda k: k > 1000, max_trials=30) == 1001
    assert shrink.smallest_failing(1 << 20, lambda k: k > 1000, max_trials=4) == 1 << 16  # best found


@pytest.mark.slow
def test_real_warp_sums_in_another_order_pass_and_a_lost_update_does_not() -> None:
    """Warp on the CPU sums `wp.atomic_add(s, 0, x[i])` in thread order: the same terms in reverse
    order differ in the last bits (not a race); a launch that lost one thread's term (what a
    non-atomic update does on a GPU) differs by the term."""
    import warp as wp

    @wp.kernel
    def total(x: wp.array(dtype=float), s: wp.array(dtype=float)):  # type: ignore[no-untyped-def]
        i = wp.tid()
        wp.atomic_add(s, 0, x[i])

    n = 1 << 14
    terms = np.random.default_rng(5).uniform(0.0, 1.0, n).astype(np.float32)

    def run(values: np.ndarray, dim: int) -> np.ndarray:
        s = wp.zeros(1, dtype=float, device="cpu")
        wp.launch(total, dim=dim, inputs=[wp.array(values, device="cpu"), s], device="cpu")
        return np.asarray(s.numpy())

    forward, backward, lost = run(terms, n), run(terms[::-1].copy(), n), run(terms, n - 1)
    assert forward[0] != backward[0]
    sums = frozenset({"s"})
    assert (
        cuda_oracle.compare_runs({"s": forward}, [{"s": backward}, {"s": forward}], "cuda:0", sums, n) == []
    )
    (found,) = cuda_oracle.compare_runs({"s": forward}, [{"s": lost}, {"s": forward}], "cuda:0", sums, n)
    assert [d.between for d in found.differences] == ["the CPU and cuda:0", "two runs on cuda:0"]


def test_the_replay_cache_keeps_its_newest_entries(tmp_path: Path) -> None:
    for n in range(6):
        (tmp_path / f"{n}.json").write_text("{}")
        os.utime(tmp_path / f"{n}.json", (n, n))
    replay_cache._prune(tmp_path, keep=4)
    assert sorted(f.name for f in tmp_path.glob("*.json")) == ["2.json", "3.json", "4.json", "5.json"]
