"""The capture store: ``<workspace>/.warp-harness/captures/``, data only, never code.

- ``blobs/<sha256>.npy``: every array (an argument before a launch, an output after it, an accepted
  baseline), content-addressed; read back only with ``allow_pickle=False``, only when its bytes hash
  to its name, and only with a plain numeric dtype.
- ``kernels/<name>.json``: one index per kernel (module path, name, source digest) listing its
  launches: device, dim, block_dim, arguments (arrays by dtype/shape/strides and blob; scalars,
  vectors and struct fields by value), which arrays it wrote, their baseline (the outputs stored at
  capture or at the last ``accept``), where the launch came from, and when it was last used.
- Every index carries ``tag``: ``user_state.sign(..., purpose="capture")`` over its canonical JSON.
  The workspace is untrusted; an index that is unsigned, wrongly signed (planted by someone else,
  or shipped in a repository), corrupt or naming a blob that is missing or altered is *refused*
  (`Refusal`: a clear reason), never replayed.
- A byte budget (default 256 MB) with least-recently-used eviction of launches (`prune`).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from warp_harness import user_state

SCHEMA = 1
PURPOSE = "capture"
DEFAULT_BUDGET_BYTES = 256 * 1024 * 1024
MAX_INDEX_BYTES = 8 * 1024 * 1024
MAX_BLOB_BYTES = 1024 * 1024 * 1024
NUMERIC_KINDS = frozenset("biuf")
STATE = ".warp-harness"


class CaptureRefused(Exception):
    """A capture file that is not this harness's data (``str()``: why, one line)."""


class OutsideWorkspace(PermissionError):
    pass


@dataclass(frozen=True)
class Refusal:
    file: str  # relative to the workspace
    reason: str


@dataclass
class KernelIndex:
    file: Path
    data: dict[str, Any]

    @property
    def path(self) -> str:
        return str(self.data["kernel"]["path"])

    @property
    def name(self) -> str:
        return str(self.data["kernel"]["name"])

    @property
    def digest(self) -> str:
        return str(self.data["kernel"]["digest"])

    @property
    def launches(self) -> list[dict[str, Any]]:
        launches: list[dict[str, Any]] = self.data["launches"]
        return launches


@dataclass
class IngestReport:
    launches: int = 0
    kernels: set[str] = field(default_factory=set)
    skipped: list[str] = field(default_factory=list)
    bytes_added: int = 0
    evicted: int = 0


def canonical(data: dict[str, Any]) -> bytes:
    body = {k: v for k, v in data.items() if k != "tag"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _inside(path: Path, workspace: Path) -> bool:
    try:
        return path.resolve().is_relative_to(workspace.resolve())
    except (OSError, RuntimeError):
        return False


def _read_regular(path: Path, limit: int) -> bytes:
    """A regular file's bytes (never through a link), at most ``limit``."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | os.O_NONBLOCK)
    except OSError as exc:
        raise CaptureRefused(f"{path.name}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CaptureRefused(f"{path.name} is not a regular file")
        if st.st_size > limit:
            raise CaptureRefused(f"{path.name} is larger than {limit} bytes")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(limit + 1)
    finally:
        os.close(fd)


def _atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
    os.replace(tmp, path)


def decode_array(data: bytes) -> np.ndarray:
    """An ``.npy`` payload as an array: no pickle, plain numeric dtypes only."""
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise CaptureRefused(f"not a plain .npy array ({exc})") from None
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in NUMERIC_KINDS or arr.dtype.names:
        raise CaptureRefused(f"array of dtype {getattr(arr, 'dtype', '?')} is not a plain numeric array")
    return arr


def encode_array(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


class CaptureStore:
    """One workspace's captures."""

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace.resolve()
        self.root = self.workspace / STATE / "captures"

    # ------------------------------------------------------------------ folders
    def exists(self) -> bool:
        return (self.root / "kernels").is_dir()

    def _folder(self, name: str, *, create: bool) -> Path:
        folder = self.root / name
        for p in (self.workspace / STATE, self.root, folder):
            if (p.exists() or p.is_symlink()) and not _inside(p, self.workspace):
                raise OutsideWorkspace(f"{p} resolves outside the workspace {self.workspace}")
        if create:
            folder.mkdir(parents=True, exist_ok=True)
            ignore = self.workspace / STATE / ".gitignore"
            if not ignore.exists():
                try:
                    ignore.write_text("*\n", encoding="utf-8")
                except OSError:
                    pass
        return folder

    # ------------------------------------------------------------------ blobs
    def put_blob(self, arr: np.ndarray) -> tuple[str, int]:
        data = encode_array(arr)
        sha = hashlib.sha256(data).hexdigest()
        path = self._folder("blobs", create=True) / f"{sha}.npy"
        if not path.is_file():
            _atomic_write(path, data)
        return sha, len(data)

    def blob_bytes(self, sha: str) -> bytes:
        """The verified bytes of a blob (CaptureRefused when missing, altered or not a plain array)."""
        if not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise CaptureRefused(f"bad blob name {sha!r}")
        data = _read_regular(self._folder("blobs", create=False) / f"{sha}.npy", MAX_BLOB_BYTES)
        if hashlib.sha256(data).hexdigest() != sha:
            raise CaptureRefused(f"blob {sha[:12]} was altered (its bytes no longer hash to its name)")
        decode_array(data)
        return data

    def blob(self, sha: str) -> np.ndarray:
        return decode_array(self.blob_bytes(sha))

    # ------------------------------------------------------------------ indexes
    @staticmethod
    def index_name(path: str, name: str) -> str:
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{path}__{name}")[-80:]
        return f"{slug}.{hashlib.sha256(f'{path}::{name}'.encode()).hexdigest()[:10]}.json"

    def write_index(self, data: dict[str, Any]) -> Path:
        data = dict(data, schema=SCHEMA)
        data["tag"] = user_state.sign(canonical(data), purpose=PURPOSE)
        path = self._folder("kernels", create=True) / self.index_name(
            data["kernel"]["path"], data["kernel"]["name"]
        )
        _atomic_write(path, json.dumps(data, sort_keys=True).encode())
        return path

    def load_index(self, file: Path) -> KernelIndex:
        """A verified index; CaptureRefused (never anything else) when it is not this user's data."""
        raw = _read_regular(file, MAX_INDEX_BYTES)
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise CaptureRefused(f"corrupt index ({exc.__class__.__name__})") from None
        if not isinstance(data, dict):
            raise CaptureRefused("corrupt index (not an object)")
        tag = data.get("tag")
        if not isinstance(tag, str):
            raise CaptureRefused("unsigned index: not written by this user's warp-harness")
        if not user_state.verify(canonical(data), tag, purpose=PURPOSE):
            raise CaptureRefused(
                "wrong signature: not written by this user's warp-harness (planted or altered)"
            )
        if data.get("schema") != SCHEMA:
            raise CaptureRefused(f"index schema {data.get('schema')!r}, expected {SCHEMA}")
        kernel = data.get("kernel")
        if not isinstance(kernel, dict) or not isinstance(data.get("launches"), list):
            raise CaptureRefused("corrupt index (no kernel or launches)")
        return KernelIndex(file, data)

    def indexes(self) -> Iterator[KernelIndex | Refusal]:
        """Every index of the store: verified, or the refusal that says why not."""
        try:
            folder = self._folder("kernels", create=False)
        except OutsideWorkspace as exc:
            yield Refusal(f"{STATE}/captures", str(exc))
            return
        if not folder.is_dir():
            return
        for file in sorted(folder.glob("*.json")):
            rel = file.relative_to(self.workspace).as_posix()
            try:
                yield self.load_index(file)
            except CaptureRefused as exc:
                yield Refusal(rel, str(exc))

    def for_module(self, rel_path: str) -> list[KernelIndex | Refusal]:
        """The indexes of one module's kernels (and every refusal: a planted file may claim any module)."""
        out: list[KernelIndex | Refusal] = []
        for entry in self.indexes():
            if isinstance(entry, Refusal) or entry.path == rel_path:
                out.append(entry)
        return out

    # ------------------------------------------------------------------ ingest
    def ingest(self, raw: Path) -> IngestReport:
        """File the raw launches a recorder wrote into the store (newest launch wins per signature)."""
        report = IngestReport()
        current: dict[tuple[str, str], dict[str, Any]] = {}
        for entry in self.indexes():
            if isinstance(entry, KernelIndex):
                current[(entry.path, entry.name)] = entry.data
        touched: set[tuple[str, str]] = set()
        for meta_file in sorted(raw.glob("*.json"), key=_raw_order):
            try:
                meta = json.loads(meta_file.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if "reason" in meta:
                report.skipped.append(f"{meta.get('kernel')}: {meta.get('reason')}")
                continue
            npz = meta_file.with_suffix(".npz")
            try:
                launch = self._launch_from_raw(meta, npz, report)
            except (OSError, ValueError, KeyError, CaptureRefused) as exc:
                report.skipped.append(f"{meta_file.name}: unreadable raw launch ({exc})")
                continue
            k = meta["kernel"]
            key = (str(k["path"]), str(k["name"]))
            index = current.setdefault(key, {"kernel": {"path": key[0], "name": key[1]}, "launches": []})
            index["kernel"]["digest"] = str(k["digest"])
            index["launches"] = [x for x in index["launches"] if x["id"] != launch["id"]] + [launch]
            touched.add(key)
            report.launches += 1
            report.kernels.add(f"{key[0]}::{key[1]}")
        for key in touched:
            self.write_index(current[key])
        return report

    def _launch_from_raw(self, meta: dict[str, Any], npz: Path, report: IngestReport) -> dict[str, Any]:
        with np.load(npz, allow_pickle=False) as arrays:
            blobs = {name: arrays[name] for name in arrays.files}
        now = time.time()

        def store_arg(d: dict[str, Any]) -> dict[str, Any]:
            d = dict(d)
            if d["kind"] == "array":
                sha, n = self.put_blob(blobs[f"b/{d['name']}"])
                d["blob"] = sha
                report.bytes_added += n
            elif d["kind"] == "struct":
                d["fields"] = [store_arg(f) for f in d["fields"]]
            return d

        args = [store_arg(d) for d in meta["args"]]
        after: dict[str, str] = {}
        for name in meta.get("written") or []:
            sha, n = self.put_blob(blobs[f"a/{name}"])
            after[name] = sha
            report.bytes_added += n
        closure = meta.get("closure")
        return {
            **({"closure": closure} if isinstance(closure, dict) else {}),  # a factory's kernel
            "id": str(meta["signature"]),
            "device": str(meta["device"]),
            "dim": [int(d) for d in meta["dim"]],
            "block_dim": meta.get("block_dim"),
            "args": args,
            "written": list(after),
            "baseline": after,
            "baseline_from": "capture",
            "digest": str(meta["kernel"]["digest"]),
            "incomplete": list(meta.get("incomplete") or []),
            "provenance": dict(meta.get("provenance") or {}),
            "recorded_at": now,
            "used_at": now,
        }

    # ------------------------------------------------------------------ budget
    def referenced(self, indexes: list[KernelIndex]) -> dict[str, int]:
        """sha -> size of every blob the verified indexes use."""
        sizes: dict[str, int] = {}
        for index in indexes:
            for launch in index.launches:
                for sha in launch_blobs(launch):
                    if sha not in sizes:
                        try:
                            sizes[sha] = (self.root / "blobs" / f"{sha}.npy").stat().st_size
                        except OSError:
                            sizes[sha] = 0
        return sizes

    def prune(self, budget: int = DEFAULT_BUDGET_BYTES) -> tuple[int, int]:
        """Evict least-recently-used launches until the blobs fit ``budget``; delete blobs no verified
        index uses. (launches evicted, bytes freed)."""
        indexes = [e for e in self.indexes() if isinstance(e, KernelIndex)]
        evicted = 0
        while True:
            sizes = self.referenced(indexes)
            if sum(sizes.values()) <= budget:
                break
            oldest = min(
                ((i, launch) for i in indexes for launch in i.launches),
                key=lambda pair: float(pair[1].get("used_at") or 0),
                default=None,
            )
            if oldest is None:
                break
            index, launch = oldest
            index.data["launches"] = [x for x in index.launches if x is not launch]
            evicted += 1
            if index.launches:
                self.write_index(index.data)
            else:
                index.file.unlink(missing_ok=True)
                indexes.remove(index)
        keep = set(self.referenced(indexes))
        freed = 0
        folder = self.root / "blobs"
        if folder.is_dir() and _inside(folder, self.workspace):
            for blob in folder.iterdir():
                if blob.suffix == ".npy" and blob.stem not in keep:
                    try:
                        freed += blob.lstat().st_size
                        blob.unlink()
                    except OSError:
                        pass
        return evicted, freed

    def touch(self, index: KernelIndex, ids: set[str]) -> None:
        """Mark launches as used now (the LRU order of `prune`)."""
        now = time.time()
        for launch in index.launches:
            if launch["id"] in ids:
                launch["used_at"] = now
        self.write_index(index.data)


def launch_blobs(launch: dict[str, Any]) -> set[str]:
    out: set[str] = set(launch.get("baseline", {}).values())

    def walk(args: list[dict[str, Any]]) -> None:
        for d in args:
            if d.get("blob"):
                out.add(str(d["blob"]))
            walk(d.get("fields") or [])

    walk(launch.get("args") or [])
    return out


def _raw_order(path: Path) -> tuple[int, int]:
    pid, _, n = path.stem.partition("-")
    try:
        return int(pid), int(n) if n.isdigit() else -1
    except ValueError:
        return 0, 0
