"""warp_harness/digests.py: the same digests as hashlib's, without loading OpenSSL into a check."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

from warp_harness.digests import blake2b, sha256

KERNEL_AND_LAUNCH = """\
import warp as wp


@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s


def run(a):
    wp.launch(scale, dim=a.shape[0], inputs=[a, 2.0])
"""


def test_digests_are_hashlibs() -> None:
    data = KERNEL_AND_LAUNCH.encode() * 1000
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert blake2b(data, digest_size=20).hexdigest() == hashlib.blake2b(data, digest_size=20).hexdigest()


def test_a_check_with_its_result_cache_never_loads_openssl(tmp_path: Path) -> None:
    # a cold check (the table's file verified, the cache keyed and written) and a warm one, in-process
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "kernels.py").write_text(KERNEL_AND_LAUNCH)
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from warp_harness.batch import check_files\n"
        "from warp_harness.check_cache import CheckCache\n"
        f"root = Path({str(tmp_path)!r})\n"
        "for _ in range(2):\n"
        "    results = check_files([root / 'pkg'], jobs=1, cache=CheckCache(root / 'cache'))\n"
        "    assert [r.path for r in results], results\n"
        "print(sorted(m for m in sys.modules if m in ('hashlib', '_hashlib')))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
