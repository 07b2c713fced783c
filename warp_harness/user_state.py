"""The harness's own state, kept where a workspace cannot write it: the user's private cache folder.

A workspace is untrusted (docs/reliability.md, threat model): a repository can ship anything under its
``.warp-harness/`` folder, so a build, a verdict or a baseline found there is the workspace's, not the
harness's. What the harness must be able to trust later lives here instead, or carries a tag only this
user can make:

- `user_cache_root`: ``$WARP_HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/warp-harness``, else
  ``~/.cache/warp-harness``; created 0700 and used only while it is a real folder we own that nobody
  else can write (`private_dir`).
- `workspace_state_dir(workspace, kind)`: a private folder per workspace (keyed by the digest of its
  resolved path) and kind (``kernels``, ``results``, ...).
- `sign` / `verify`: a keyed BLAKE2b tag with a per-user secret (32 random bytes, 0600, in the root), for
  data that must stay in the workspace (captures, accepted baselines) but count only when this user wrote it.
  `tagged_json` / `verify_json`: the same for a JSON object, its tag kept under ``"tag"``.
"""

from __future__ import annotations

import hmac
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from warp_harness.digests import blake2b

CACHE_ENV = "WARP_HARNESS_CACHE_DIR"
SECRET_NAME = "secret.key"
SECRET_BYTES = 32
# the purposes of the tags workspace data carries (each tag counts for its own kind of data only)
TUNE_RESULT = "wh-tune"


class StateUnusable(Exception):
    """The private folder or the secret cannot be trusted or created; ``str()`` says why (one line)."""


def user_cache_root() -> Path:
    """The user's private cache folder (not created here; see `private_dir`)."""
    override = os.environ.get(CACHE_ENV, "")
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".cache"
    return base / "warp-harness"


def check_private(path: Path) -> None:
    """Raise StateUnusable unless ``path`` is a folder (not a link) we own that no one else can write."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        raise StateUnusable(f"folder {path}: {exc.strerror or exc}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise StateUnusable(f"{path} is not a folder (a link or a file)")
    if st.st_uid != os.getuid():
        raise StateUnusable(f"folder {path} belongs to another user (uid {st.st_uid})")
    if st.st_mode & 0o022:
        raise StateUnusable(f"folder {path} is writable by other users")


def private_dir(path: Path) -> Path:
    """Create ``path`` (0700, parents too) if missing and check it (`check_private`); returns it."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StateUnusable(f"folder {path}: {exc.strerror or exc}") from None
    check_private(path)
    return path


def workspace_key(workspace: Path) -> str:
    """A stable name for a workspace: the digest of its resolved path."""
    real = os.path.realpath(workspace)
    return blake2b(real.encode("utf-8", "surrogateescape"), digest_size=12).hexdigest()


def workspace_state_dir(workspace: Path, kind: str) -> Path:
    """``<root>/workspaces/<workspace_key>/<kind>``, private (every level checked)."""
    if not kind or "/" in kind or kind.startswith("."):
        raise ValueError(f"bad state kind {kind!r}")
    root = private_dir(user_cache_root())
    spaces = private_dir(root / "workspaces")
    space = private_dir(spaces / workspace_key(workspace))
    return private_dir(space / kind)


def _read_secret(path: Path) -> bytes:
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise StateUnusable(f"secret {path} is not a private file of this user")
        data = os.read(fd, SECRET_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) != SECRET_BYTES:
        raise StateUnusable(f"secret {path} has the wrong size")
    return data


def user_secret() -> bytes:
    """The per-user secret (created once, 0600, O_EXCL: a racing creator's file is read instead)."""
    root = private_dir(user_cache_root())
    path = root / SECRET_NAME
    try:
        return _read_secret(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StateUnusable(f"secret {path}: {exc.strerror or exc}") from None
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    except FileExistsError:
        return _read_secret(path)
    except OSError as exc:
        raise StateUnusable(f"secret {path}: {exc.strerror or exc}") from None
    try:
        os.write(fd, os.urandom(SECRET_BYTES))
    finally:
        os.close(fd)
    return _read_secret(path)


def sign(data: bytes, *, purpose: str) -> str:
    """A tag over ``data`` that only this user's harness can make; ``purpose`` separates uses."""
    return blake2b(data, key=user_secret(), person=purpose.encode()[:16], digest_size=32).hexdigest()


def verify(data: bytes, tag: str, *, purpose: str) -> bool:
    """Whether ``tag`` is `sign(data, purpose=purpose)`; False (never an error) when it is not."""
    try:
        expected = sign(data, purpose=purpose)
    except StateUnusable:
        return False
    return hmac.compare_digest(expected, tag)


def _canonical_json(obj: Mapping[str, Any]) -> bytes:
    body = {k: v for k, v in obj.items() if k != "tag"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


def tagged_json(obj: Mapping[str, Any], *, purpose: str) -> dict[str, Any]:
    """``obj`` as it reads back from JSON, with ``"tag"``: `sign` over its canonical JSON (its
    values turned into JSON's first, with ``default=str``, so the reader sees what was signed)."""
    plain: dict[str, Any] = json.loads(json.dumps(dict(obj), default=str))
    plain.pop("tag", None)
    return {**plain, "tag": sign(_canonical_json(plain), purpose=purpose)}


def verify_json(obj: Mapping[str, Any], *, purpose: str) -> bool:
    """Whether ``obj`` (read from JSON) carries the tag `tagged_json` gives it; False, never an error."""
    tag = obj.get("tag")
    if not isinstance(tag, str):
        return False
    try:
        data = _canonical_json(obj)
    except (TypeError, ValueError, RecursionError):
        return False
    return verify(data, tag, purpose=purpose)
