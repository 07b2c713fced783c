"""Timing baselines of captured launches, in the user's private cache (never in the workspace).

Nothing a workspace ships is a baseline: the timings live under the user's private cache folder
(``user_state``: 0700, owner checked), per workspace and per machine, and every file carries a tag
made with the user's secret; a file without a valid tag is read as empty.

- ``workspaces/<key>/captured-timings/<host>.json``: per kernel (module path and name), per
  captured launch, per kernel source digest, the launch times of the latest run and the device
  they were measured on (a timing measured on another device is no baseline);
- ``captured-timing-noise/<machine>.json``: the machine's spread, the log-ratios of the medians of
  two runs of the *same* kernel source (any workspace), the most recent ``NOISE_KEPT``;
- ``workspaces/<key>/captured-sources/<sha256>.json``: the module text a timed source was read
  from (a timing names it), so that a changed kernel can be timed against its accepted source in
  one job, interleaved (``benchmark``); the newest ``SOURCES_KEPT``.

A *host* is this computer (its name, CPU model and count), a *machine* a host and one of its
devices (the name Warp gives it), each by digest.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import re
import threading
import time
from hashlib import blake2b
from pathlib import Path
from typing import Any

from warp_harness import user_state
from warp_harness.daemon.captured.benchmark_stats import NOISE_KEPT

PURPOSE = "wh-capture-time"
TIMES_KEPT = 256  # launch times kept per run
SOURCES_KEPT = 256  # module texts kept per workspace
_LOCK = threading.Lock()  # ci checks files on several threads


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _key(*parts: str) -> str:
    return blake2b("|".join(parts).encode("utf-8", "surrogateescape"), digest_size=10).hexdigest()


def host_key() -> str:
    return _key(platform.node(), _cpu_model(), str(os.cpu_count()))


def device_tag(device: str, device_name: str) -> str:
    """The device a launch was timed on: its kind (``cpu``, ``cuda``) and the name Warp gives it."""
    return f"{device.split(':')[0]}|{device_name}"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or not user_state.verify_json(data, purpose=PURPOSE):
        return {}
    data.pop("tag", None)
    return data


def _write(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(user_state.tagged_json(data, purpose=PURPOSE), f, separators=(",", ":"))
    os.replace(tmp, path)


class TimingStore:
    """The timings of one workspace's captured launches on this host, and its devices' spread."""

    def __init__(self, workspace: Path, host: str | None = None) -> None:
        """``host``: the `host_key` of the computer that timed the launches (a Ray node's); this one's
        when None."""
        host = host or host_key()
        if not re.fullmatch(r"[0-9a-f]{20}", host):
            raise ValueError(f"bad host key {host!r}")
        self.file = user_state.workspace_state_dir(workspace, "captured-timings") / f"{host}.json"
        self.noise_dir = user_state.private_dir(user_state.user_cache_root() / "captured-timing-noise")
        self.sources_dir = user_state.workspace_state_dir(workspace, "captured-sources")
        self.host = host

    def _noise_file(self, device: str) -> Path:
        return self.noise_dir / f"{_key(self.host, device)}.json"

    @staticmethod
    def kernel_key(module: str, kernel: str) -> str:
        return f"{module}::{kernel}"

    def has(self, kernel: str, launch: str, digest: str) -> bool:
        return isinstance(_read(self.file).get(kernel, {}).get(launch, {}).get(digest), dict)

    def timing(self, kernel: str, launch: str, digest: str, device: str) -> list[float] | None:
        """The launch times of the latest run of ``kernel``'s source ``digest`` on ``launch``, when
        it ran on ``device`` (a `device_tag`)."""
        entry = _read(self.file).get(kernel, {}).get(launch, {}).get(digest)
        if not isinstance(entry, dict) or entry.get("device") != device:
            return None
        times = [float(t) for t in entry.get("times") or [] if isinstance(t, int | float) and t > 0]
        return times or None

    def source_of(self, kernel: str, launch: str, digest: str) -> str | None:
        """The module text ``kernel``'s source ``digest`` was timed from on ``launch`` (None: not kept)."""
        entry = _read(self.file).get(kernel, {}).get(launch, {}).get(digest)
        sha = entry.get("source") if isinstance(entry, dict) else None
        if not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha):
            return None
        text = _read(self.sources_dir / f"{sha}.json").get("text")
        if (
            not isinstance(text, str)
            or hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest() != sha
        ):
            return None
        return text

    def keep_source(self, text: str) -> str:
        """Keep the module text ``text``; its name for `save`'s ``source``."""
        sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        file = self.sources_dir / f"{sha}.json"
        with _LOCK:
            if file.is_file():
                os.utime(file)
                return sha
            _write(file, {"text": text})
            kept = sorted(self.sources_dir.glob("*.json"), key=lambda f: f.stat().st_mtime, reverse=True)
            for old in kept[SOURCES_KEPT:]:
                old.unlink(missing_ok=True)
        return sha

    def name_source(self, kernel: str, launch: str, digest: str, sha: str) -> None:
        """Say that the timing of ``digest`` on ``launch`` was measured on the module text ``sha``."""
        with _LOCK:
            data = _read(self.file)
            entry = data.get(kernel, {}).get(launch, {}).get(digest)
            if isinstance(entry, dict) and entry.get("source") != sha:
                entry["source"] = sha
                _write(self.file, data)

    def noise(self, device: str) -> list[float]:
        """The same-code log-ratios measured on ``device`` (a `device_tag`) of this host."""
        values = _read(self._noise_file(device)).get("log_ratios") or []
        return [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]

    def save(
        self,
        kernel: str,
        launch: str,
        digest: str,
        device: str,
        times: list[float],
        *,
        keep: set[str],
        source: str | None = None,
    ) -> None:
        """The latest run of ``digest`` (``source``: the `keep_source` name of the module text it
        was timed on); timings of digests outside ``keep`` (``digest`` joins it) are dropped: a
        kernel's accepted source and its current one are all a comparison needs."""
        with _LOCK:
            data = _read(self.file)
            launches = data.setdefault(kernel, {})
            runs = launches.setdefault(launch, {})
            for old in [d for d in runs if d not in keep | {digest}]:
                del runs[old]
            runs[digest] = {"times": times[:TIMES_KEPT], "device": device, "when": time.time()}
            if source is not None:
                runs[digest]["source"] = source
            _write(self.file, data)

    def add_noise(self, device: str, log_ratio: float) -> None:
        if not math.isfinite(log_ratio):
            return
        with _LOCK:
            values = [*self.noise(device), log_ratio][-NOISE_KEPT:]
            _write(self._noise_file(device), {"log_ratios": values})
