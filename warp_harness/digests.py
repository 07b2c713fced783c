"""The digests of the checking processes, without `hashlib`: importing it loads OpenSSL's libcrypto
(3.5 MiB resident in every process that imports it, the pool workers of a `check` included, and 2 ms of
start-up) for hashes CPython also builds in.

- `sha256`: CPython's own SHA-256 (the same digests as ``hashlib.sha256``; 340 MB/s against OpenSSL's
  1,280, for what is small: the builtin table's file, result ids, fingerprints of output formats).
- `blake2b`: CPython's BLAKE2b (what ``hashlib.blake2b`` is; 940 MB/s), for what a run hashes in bulk:
  the result cache's keys over every file's bytes and the workspace model's module digests.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the modules below are hashlib's own implementations, typed there
    from hashlib import blake2b, sha256
else:
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter built without it
        from hashlib import blake2b
    try:
        from _sha2 import sha256  # Python 3.12+
    except ImportError:
        try:
            from _sha256 import sha256
        except ImportError:
            from hashlib import sha256

__all__ = ["blake2b", "sha256"]
