"""The check after the timed loop for large outputs (daemon/steps/device_check.py, bench.recheck).

On the CPU the device functions run on real Warp arrays (``cpu`` is a Warp device like any);
the bench step itself only takes the large path on CUDA, so its end-to-end test is a GPU one.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
from daemon_helpers import FAST, by_rule, rules_of

from warp_harness.daemon import findings as F
from warp_harness.daemon.comparison import poison_like, unwritten_mask
from warp_harness.daemon.steps import device_check as D
from warp_harness.daemon.supervisor import Supervisor


@pytest.fixture(scope="module")
def wp():  # type: ignore[no-untyped-def]
    import warp

    warp.init()
    return warp


def test_the_device_poison_is_the_hosts_poison_and_is_counted_per_scalar(wp) -> None:  # type: ignore[no-untyped-def]
    a = wp.array(np.arange(10, dtype=np.float32), device="cpu")
    D.poison(a, np.float32)
    host = a.numpy()
    assert host.tobytes() == poison_like(np.zeros(10, np.float32)).tobytes()
    assert unwritten_mask(host).all()
    assert D.unwritten_elements(a, np.float32) == (10, 10)
    v = wp.zeros(5, dtype=wp.vec4, device="cpu")
    assert D.unwritten_elements(v, np.float32) == (0, 20)  # a vec4 is four float32 scalars
    D.poison(v, np.float32)
    v_host = v.numpy()
    v_host[2, 1] = 3.0
    v.assign(v_host)
    assert D.unwritten_elements(v, np.float32) == (19, 20)
    ints = wp.array(np.arange(6, dtype=np.int64), device="cpu")
    D.poison(ints, np.int64)
    assert (ints.numpy() == poison_like(np.zeros(6, np.int64))).all()
    assert D.unwritten_elements(ints, np.int64) == (6, 6)
    assert D.poison_word(np.float64) is None and not D.can_check(a, np.float64)  # read back instead


def test_prefix_views_share_the_timed_buffers_memory(wp) -> None:  # type: ignore[no-untyped-def]
    x = wp.array(np.arange(100, dtype=np.float32), device="cpu")
    m = wp.zeros((100, 3), dtype=float, device="cpu")
    views = D.prefix_views([x, m, 2.5], [(10,), (10, 3), None])
    assert views is not None
    assert views[0].shape == (10,) and views[0].ptr == x.ptr
    assert views[1].shape == (10, 3) and views[1].ptr == m.ptr and views[2] == 2.5
    views[0].assign(np.full(10, -1.0, np.float32))
    assert (x.numpy()[:10] == -1.0).all() and x.numpy()[10] == 10.0
    assert D.prefix_views([m], [(10, 10)]) is None  # a square matrix at another size: no prefix
    assert D.prefix_views([x], [(101,)]) is None


_PARTIAL = """
import numpy as np
import warp as wp

from warp_harness.contract import Contract

N = 1 << 26  # 256 MiB per array: the large path


@wp.kernel
def {name}(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    if i < {limit}:
        y[i] = 2.0 * x[i]


contract = Contract(
    kernel={name},
    reference=lambda x: {{"y": 2.0 * x}},
    inputs=lambda n, rng: {{"x": rng.random(n, dtype=np.float32), "y": np.empty(n, np.float32)}},
    outputs=["y"],
    sizes=[1, 1000],
    bench_size=N,
    bytes=lambda n: 8 * n,
)
"""


@pytest.mark.gpu
@pytest.mark.slow
def test_large_outputs_are_checked_on_the_device_at_full_size(tmp_path: Path, wp) -> None:  # type: ignore[no-untyped-def]  # pragma: no cover
    """A kernel right up to 2^24 elements passes validation (sizes 1, 1000) and the capped value
    check (2^21 elements: 16 MiB of arrays); only the full-size count in the timed buffers sees
    the rest."""
    if wp.get_cuda_device_count() == 0:
        pytest.skip("no CUDA device")
    (tmp_path / "honest.py").write_text(textwrap.dedent(_PARTIAL.format(name="double", limit="y.shape[0]")))
    (tmp_path / "partial.py").write_text(
        textwrap.dedent(_PARTIAL.format(name="double_part", limit="1 << 24"))
    )
    opts = FAST.merged({"devices": ["cuda:0"], "seed": 7, "bench": True})
    with Supervisor(tmp_path, opts) as sup:
        honest = sup.check(tmp_path / "honest.py")
        partial = sup.check(tmp_path / "partial.py")
    bench = honest.kernels["double"]["bench"]["cuda:0"]
    assert bench["revalidated"] is True, rules_of(honest.to_dict())
    assert not by_rule(honest.to_dict(), F.WRONG_AFTER_TIMING)
    assert 0 < honest.notes["recheck_sizes"]["double@cuda:0"] < 1 << 26
    rec = by_rule(partial.to_dict(), F.WRONG_AFTER_TIMING)
    assert rec and "counted on the device" in rec[0]["message"], rules_of(partial.to_dict())
    assert f"{(1 << 26) - (1 << 24)} of {1 << 26}" in rec[0]["message"]
    print(f"\nGPU-FIGURE large_recheck: revalidate {honest.timings.get('revalidate_ms'):.0f} ms", flush=True)
    shutil.rmtree(tmp_path, ignore_errors=True)
