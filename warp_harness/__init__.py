"""warp-harness: a harness around writing NVIDIA Warp kernels (see README.md and docs/)."""

from pathlib import Path as _Path

__version__ = "0.1.0"

# Installed, `rules/`, `server/` and `daemon/` sit inside this package. Imported straight from a
# source checkout (the repository root on sys.path, as `python -m pytest` there puts it), they are
# the checkout's fixed top-level folders beside this one; pyproject's package-dir maps them the same
# way, so both layouts give one `warp_harness` namespace.
_here = _Path(__file__).resolve().parent
_checkout = _here.parent
if not (_here / "rules").is_dir() and all(
    (_checkout / sub / "__init__.py").is_file() for sub in ("rules", "server", "daemon")
):
    __path__.append(str(_checkout))
del _Path, _here, _checkout
