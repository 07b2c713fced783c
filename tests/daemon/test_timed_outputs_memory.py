"""The benchmark's own buffers sent to the supervisor (steps/validate.ship_timed_outputs) without a
host copy of every array: a 1 GiB input is hashed in pieces read back one at a time, and each
output is read back once. On an H100 (2026-12-07) stream_large.py's 1 GiB copy kernels went past
the default 4,096 MB worker limit in the benchmark step, where a copy of every array, then each
output's bytes, were held at once."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from timed_helpers import timed_set

from warp_harness.daemon.steps import validate

wp = pytest.importorskip("warp")


@pytest.mark.parametrize("chunk", [64, 1000, 1 << 30])
def test_the_streamed_digest_is_the_digest_of_the_whole_arrays(
    monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    """Read back in pieces of ``chunk`` bytes (rows of a 2-D vec4 array; a piece smaller than one
    row; the whole array at once), the digest is the one the verdict worker computes from the
    inputs it regenerates, so the two workers still agree which inputs a timed set held."""
    monkeypatch.setattr(validate, "DIGEST_CHUNK_BYTES", chunk)
    params, hosts, args = timed_set(257, 3, 0.5)
    whole = validate.input_digest(params, hosts, {"a": args[2]})
    assert validate.streamed_input_digest(params, args, ["y"], {"a": args[2]}) == whole
    reversed_ids = wp.array(hosts["ids"][::-1].copy(), dtype=wp.int32, device="cpu")
    other = [*args[:1], reversed_ids, *args[2:]]
    assert validate.streamed_input_digest(params, other, ["y"], {"a": args[2]}) != whole


@pytest.mark.slow
def test_the_verdict_worker_skips_the_references_of_sets_never_shipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sets too big for three on the host (the benchmark makes one, its device copies share its
    seed) and too big for the gaps' host check (no refilled set is shipped): only the first set's
    reference is computed (a 1 GiB set's costs the verdict worker seconds and gigabytes)."""
    from daemon_helpers import FAST, write

    from warp_harness.daemon import worker
    from warp_harness.daemon.steps import device_check

    path = write(
        tmp_path,
        "big.py",
        """
        import numpy as np
        import warp as wp
        from warp_harness.contract import Contract

        @wp.kernel
        def twice(x: wp.array(dtype=float), y: wp.array(dtype=float)):
            y[wp.tid()] = 2.0 * x[wp.tid()]

        contract = Contract(
            kernel=twice,
            reference=lambda x: {"y": 2.0 * x},
            inputs=lambda n, rng: {"x": rng.random(n).astype(np.float32), "y": np.empty(n, np.float32)},
            outputs=["y"],
            sizes=[1, 64],
            bench_size=1024,
        )
        """,
    )

    def timed_seeds() -> list[int]:
        msg = {
            "kind": "reference",
            "path": str(path),
            "workspace": str(tmp_path),
            "options": FAST.merged({"seed": 3}).to_dict(),
            "timed": True,
            "timed_windows": 4,
            "sample_seed": 1,
        }
        out = worker.run_reference_job(msg, lambda **_: None)
        assert out["status"] == "ok" and not out["missing"], out
        return sorted(c["seed"] for c in out["cases"] if c["timed"])

    first = 3 + validate.TIMED_SEED
    assert timed_seeds() == sorted(
        [first + k for k in range(validate.TIMED_SETS)] + validate.refill_seeds(3, 4)
    )
    monkeypatch.setattr(device_check, "ROTATE_MAX_BYTES", 8 << 10)  # a set is 8 KiB: one set
    monkeypatch.setattr(device_check, "REVALIDATE_MAX_BYTES", 4 << 10)  # no refilled set
    assert timed_seeds() == [first]


@pytest.mark.parametrize(
    ("dtype", "np_dtype", "shape"),
    [("vec4", np.float32, (3000, 4)), ("float64", np.float64, (20000,)), ("int32", np.int32, (9001,))],
)
def test_outputs_gathered_on_the_device_are_the_sample_the_supervisor_compares(
    dtype: str, np_dtype: type, shape: tuple[int, ...]
) -> None:
    """The timed outputs sampled where they lie (device_check.gathered: 4,096 scalars read back,
    not a 1 GiB output) are exactly the elements the supervisor's sample of the whole output
    holds (comparison.sampled at the same seed): a vec4 is four float32s, a float64 two words."""
    from warp_harness.daemon.comparison import sample_indices, sampled
    from warp_harness.daemon.steps import device_check

    host = (np.random.default_rng(5).random(shape) * 1000).astype(np_dtype)
    arr = wp.array(host, dtype=getattr(wp, dtype), device="cpu")
    idx = sample_indices(host.size, 77)
    assert idx is not None
    got = device_check.gathered(arr, np_dtype, idx)
    assert got.dtype == np.dtype(np_dtype)
    np.testing.assert_array_equal(got, sampled(host, 77))
    # the policy: only CUDA arrays are gathered (a CPU array is read as it is)
    assert not device_check.can_gather(arr, np_dtype)
    np.testing.assert_array_equal(validate._timed_sample(arr, np_dtype, 77), sampled(host, 77))
