"""Timing baselines of captured launches live in the user's private cache, tagged with the user's secret
(daemon/captured/benchmark_baselines.py): a file someone else wrote or altered is read as empty."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from warp_harness import user_state
from warp_harness.daemon.captured.benchmark_baselines import TimingStore, device_tag


def test_timings_and_spread_round_trip_in_the_private_cache(tmp_path: Path) -> None:
    store = TimingStore(tmp_path)
    cpu = device_tag("cpu", "x86_64")
    store.save("k.py::f", "abc", "d1", cpu, [1e-3, 2e-3], keep={"d0"})
    store.add_noise(cpu, 0.05)
    assert store.timing("k.py::f", "abc", "d1", cpu) == [1e-3, 2e-3]
    assert store.timing("k.py::f", "abc", "d1", device_tag("cuda:0", "NVIDIA H100")) is None  # another device
    assert store.noise(cpu) == [0.05] and store.noise(device_tag("cuda:0", "NVIDIA H100")) == []
    assert store.file.is_relative_to(user_state.user_cache_root())
    assert not store.file.is_relative_to(tmp_path)  # nothing in the workspace
    assert stat.S_IMODE(store.file.parent.stat().st_mode) == 0o700
    # a newer source's timing drops the digests that are neither it nor the ones kept
    store.save("k.py::f", "abc", "d2", cpu, [3e-3], keep={"d1"})
    store.save("k.py::f", "abc", "d3", cpu, [4e-3], keep={"d1"})
    assert store.has("k.py::f", "abc", "d1") and store.has("k.py::f", "abc", "d3")
    assert not store.has("k.py::f", "abc", "d2")


def test_an_altered_or_untagged_timing_file_is_read_as_empty(tmp_path: Path) -> None:
    store = TimingStore(tmp_path)
    cpu = device_tag("cpu", "x86_64")
    store.save("k.py::f", "abc", "d1", cpu, [1e-3], keep=set())
    data = json.loads(store.file.read_text(encoding="utf-8"))
    data["k.py::f"]["abc"]["d1"]["times"] = [9.0]  # a baseline made slow, so no edit looks slower
    store.file.write_text(json.dumps(data), encoding="utf-8")
    assert store.timing("k.py::f", "abc", "d1", cpu) is None
    data.pop("tag")
    store.file.write_text(json.dumps(data), encoding="utf-8")
    assert store.timing("k.py::f", "abc", "d1", cpu) is None
    store.file.write_text("{not json", encoding="utf-8")
    assert not store.has("k.py::f", "abc", "d1")
