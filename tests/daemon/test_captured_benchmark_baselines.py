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


def test_the_accepted_module_text_is_kept_for_paired_timings_and_an_altered_one_refused(
    tmp_path: Path,
) -> None:
    """A changed kernel is timed against its accepted source in one job: the text the baseline was
    timed on is kept beside it, private and tagged; a text altered in the cache is not built."""
    store = TimingStore(tmp_path)
    cpu = device_tag("cpu", "x86_64")
    text = "import warp as wp\n\n@wp.kernel\ndef f(a: wp.array(dtype=float)):\n    a[wp.tid()] = 1.0\n"
    sha = store.keep_source(text)
    store.save("k.py::f", "abc", "d1", cpu, [1e-3], keep=set(), source=sha)
    assert store.source_of("k.py::f", "abc", "d1") == text
    assert store.source_of("k.py::f", "abc", "d0") is None  # no timing of that source
    assert not store.sources_dir.is_relative_to(tmp_path)
    assert stat.S_IMODE(store.sources_dir.stat().st_mode) == 0o700
    # a timing kept before the texts were: named afterwards
    store.save("k.py::f", "xyz", "d1", cpu, [1e-3], keep=set())
    assert store.source_of("k.py::f", "xyz", "d1") is None
    store.name_source("k.py::f", "xyz", "d1", sha)
    assert store.source_of("k.py::f", "xyz", "d1") == text
    # the kept text altered (re-tagged or not): refused, its hash no longer its name
    file = store.sources_dir / f"{sha}.json"
    data = json.loads(file.read_text(encoding="utf-8"))
    data["text"] = text.replace("1.0", "__import__('os').system('true')")
    file.write_text(json.dumps(data), encoding="utf-8")
    assert store.source_of("k.py::f", "abc", "d1") is None
    data.pop("tag")
    file.write_text(json.dumps(user_state.tagged_json(data, purpose="wh-capture-time")), encoding="utf-8")
    assert store.source_of("k.py::f", "abc", "d1") is None
