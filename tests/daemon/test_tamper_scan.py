"""daemon/tamper_scan.py: what in a kernel module's text would patch the evaluator. The exploits
of examples/exploits/ whose only trick is code at import are found; the contracts of
examples/contracts/ (and Warp's own settings, and code inside kernels) are not."""

from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.daemon.tamper_scan import patches

ROOT = Path(__file__).resolve().parents[2]


def whats(text: str) -> list[str]:
    return [p.what for p in patches(text)]


@pytest.mark.parametrize(
    ("name", "what"),
    [
        ("patch_launch", "assigns `wp.launch`"),
        ("patch_timer", "assigns `time.perf_counter`"),
        ("cached_results", "assigns `wp.launch`"),
        ("stale_output", "assigns `wp.launch`"),
        ("ctypes_code_swap", "reads `wp.launch.__globals__`"),
        ("timed_swap", "assigns `KernelInfo.runnable`"),
        ("patch_compare", "assigns `np.allclose`"),
    ],
)
def test_the_exploits_patches_are_found(name: str, what: str) -> None:
    assert what in whats((ROOT / "examples" / "exploits" / f"{name}.py").read_text(encoding="utf-8"))


def test_no_contract_example_patches_anything() -> None:
    for path in sorted((ROOT / "examples" / "contracts").glob("*.py")):
        assert patches(path.read_text(encoding="utf-8")) == [], path.name


def test_settings_kernels_and_local_objects_are_not_patches() -> None:
    text = (
        "import warp as wp\nimport numpy as np\n"
        "wp.config.mode = 'debug'\nwp.config.verify_fp = True\n"
        "np.set_printoptions(precision=3)\n"
        "class State:\n    pass\nstate = State()\nstate.x = np.zeros(3)\nbuf = np.zeros(4)\nbuf[0] = 1.0\n"
        "@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[wp.tid()] = 1.0\n"
    )
    assert patches(text) == []


def test_every_way_to_patch_is_found() -> None:
    text = (
        "import time, ctypes, warp as wp\nfrom warp import launch\nimport numpy\n"
        "from warp_harness.daemon import integrity\n"
        "wp.config = None\n"  # replaces every setting
        "launch.__defaults__ = (1,)\n"
        "setattr(time, 'perf_counter', lambda: 0.0)\n"
        "del numpy.allclose\n"
        "numpy.testing.assert_allclose = print\n"
        "wp.types.array.numpy = lambda self: None\n"
        "ctypes.memmove(0, 0, 8)\n"
        "def later():\n    wp.synchronize = lambda: None\n"
    )
    assert whats(text) == [
        "imports the harness's `warp_harness.daemon`",
        "assigns `wp.config`",
        "assigns `launch.__defaults__`",
        "reads `launch.__defaults__`",
        "calls `setattr` on `time`",
        "deletes `numpy.allclose`",
        "assigns `numpy.testing.assert_allclose`",
        "assigns `wp.types.array.numpy`",
        "writes process memory with ctypes `memmove`",
        "assigns `wp.synchronize`",
    ]
    assert patches("def broken(:\n") == []
