"""Command lines that start our own Python processes (the daemon, its worker).

`python -m X` puts the current folder first on ``sys.path`` and runpy then imports modules (and
``X``'s own package) before any of our code runs: started in a workspace, a ``warp_harness/``
package or a stdlib-named module there would run. The current folder must never be on the path.
"""

from __future__ import annotations

import sys


def safe_path_flags(python: str = sys.executable) -> list[str]:
    """Interpreter flags that keep the current folder off ``sys.path``.

    ``-P`` (3.11+) does only that, so PYTHONPATH and the user site that imported us stay valid for
    the child. Python 3.10 has no ``-P``, and another interpreter's version is unknown: ``-I``
    there (it also ignores PYTHON* variables and the user site).
    """
    if python == sys.executable and sys.version_info >= (3, 11):
        return ["-P"]
    return ["-I"]


def module_command(module: str, *args: str, python: str = sys.executable) -> list[str]:
    """``python <flags> -m module args...`` that never imports from the current folder."""
    return [python, *safe_path_flags(python), "-m", module, *args]
