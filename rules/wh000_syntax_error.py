"""## WH000 syntax-error

The file cannot be parsed as Python (or is not text at all: binary, NUL bytes, not valid in its
declared encoding).

### Why it matters
Warp never sees a kernel it cannot import. The checker reports the first syntax error once and
still checks every other top-level statement that parses, so the diagnostics of the kernels
around a half-typed line stay on screen while you type.

### Bad
```python
@wp.kernel
def scale(x: wp.array(dtype=float):
    i = wp.tid()
```

### Good
```python
@wp.kernel
def scale(x: wp.array(dtype=float)):
    i = wp.tid()
```
"""

from __future__ import annotations

from collections.abc import Iterable

from warp_harness.record import Record, Severity, Stage
from warp_harness.rules.base import Rule, RuleContext, Scope


class SyntaxErrorRule(Rule):
    """Reported by the engine while parsing; listed here so it is documented like every rule."""

    id = "WH000"
    name = "syntax-error"
    summary = "file does not parse"
    severity = Severity.ERROR
    priority = 100
    stage = Stage.SYNTAX
    scope = Scope.MODULE

    def check_module(self, ctx: RuleContext) -> Iterable[Record]:
        return ()
