"""The digest of a CUDA benchmark's large timed set hashed from its host arrays while it is timed
(daemon/steps/timed_digest.py), on real Warp arrays on the CPU (the device comparison is the same
harness kernel there). On an H100, reading a 1 GiB input back and hashing it after the timed loop
was 2 s per kernel (stream_large, 2026-12-07)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from timed_helpers import TimedSet, timed_set

from warp_harness.daemon.steps import device_check, validate
from warp_harness.daemon.steps.timed_digest import PendingDigest

wp = pytest.importorskip("warp")


def _timed_set() -> TimedSet:
    return timed_set(513, 11, 0.25)


def _pending(params: list[tuple[str, Any]], hosts: dict[str, np.ndarray], args: list[Any]) -> PendingDigest:
    pristine = {0: wp.clone(args[0]), 1: wp.clone(args[1])}
    return PendingDigest(params, dict(hosts), {"a": args[2]}, pristine, ["y"])


def test_untouched_inputs_get_the_digest_the_verdict_worker_computes() -> None:
    """Inputs the timed launches left as they were: the case gets the host arrays' digest, which is
    the verdict worker's for the generator's inputs (validate.input_digest) and the one read back
    from the buffers (validate.streamed_input_digest), only once ``finish`` has joined the thread."""
    params, hosts, args = _timed_set()
    expected = validate.input_digest(params, hosts, {"a": args[2]})
    assert validate.streamed_input_digest(params, args, ["y"], {"a": args[2]}) == expected
    pending = _pending(params, hosts, args)
    case: dict[str, Any] = {"key": "k"}
    pending.digest_for(args, case, {"a": args[2]})
    assert not pending.pristine  # the device copies are freed once compared
    pending.finish(30.0)
    assert case["digest"] == expected


def test_inputs_changed_by_the_timed_launches_get_the_digest_of_what_the_buffers_hold() -> None:
    """A kernel that wrote one element of its input while timed: the comparison with the pristine
    copy finds it, and the digest shipped is that of the buffers as they are, which differs from
    the generator's (the supervisor then confirms no pass: daemon/verdict.py)."""
    params, hosts, args = _timed_set()
    expected = validate.input_digest(params, hosts, {"a": args[2]})
    pending = _pending(params, hosts, args)
    changed = args[1].numpy()
    changed[1000] += 1
    args[1] = wp.array(changed, dtype=wp.int32, device="cpu")
    case: dict[str, Any] = {"key": "k"}
    pending.digest_for(args, case, {"a": args[2]})
    pending.finish(30.0)
    assert case["digest"] == validate.streamed_input_digest(params, args, ["y"], {"a": args[2]})
    assert case["digest"] != expected


def test_a_digest_that_fails_leaves_the_case_without_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hashing thread raises (or never finishes): the waiting case keeps ``None``, which matches
    no reference's digest, so the supervisor confirms no pass (it fails closed)."""
    params, hosts, args = _timed_set()

    def broken(*_: Any) -> str:
        raise MemoryError("no room to hash")

    monkeypatch.setattr("warp_harness.daemon.steps.timed_digest.input_digest", broken)
    pending = _pending(params, hosts, args)
    case: dict[str, Any] = {"key": "k"}
    pending.digest_for(args, case, {"a": args[2]})
    pending.finish(30.0)
    assert "digest" in case and case["digest"] is None


def test_differing_words_counts_bitwise_differences_on_the_device() -> None:
    a = wp.array(np.arange(1000, dtype=np.float32), device="cpu")
    b = wp.clone(a)
    assert device_check.differing_words(a, b) == 0
    host = b.numpy()
    host[[3, 999]] = -1.0
    assert device_check.differing_words(a, wp.array(host, device="cpu")) == 2
