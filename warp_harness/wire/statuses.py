"""The statuses that cross the daemon socket, as enums whose values are their wire strings.

Each member is a ``str`` (``Status.OK == "ok"``, ``json.dumps`` and msgpack write ``"ok"``, an
f-string shows ``ok``), so every message, JSON, SARIF and JUnit output stays byte-identical to
the strings these replace, and a reader of an older result compares it as before.
"""

from __future__ import annotations

from enum import Enum
from typing import TypeVar

_E = TypeVar("_E", bound="WireEnum")


class WireEnum(str, Enum):
    """A closed set of wire strings. ``str()`` and ``format()`` give the value on every Python
    (a plain ``(str, Enum)`` formats as ``Class.MEMBER`` from 3.12 on)."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def parse(cls: type[_E], value: object) -> _E | None:
        """The member whose wire string is ``value``; None for anything else."""
        if isinstance(value, cls):
            return value
        if not isinstance(value, str):
            return None
        try:
            return cls(value)
        except ValueError:
            return None


class Status(WireEnum):
    """A file's (a ``result``'s ``status``) or a worker job's status."""

    OK = "ok"  # the job ran to its end and no kernel failed
    PASS = "pass"  # a re-run case (``replay``) passed
    FAIL = "fail"  # a kernel's outputs were wrong
    ERROR = "error"  # a kernel did not build, or the harness failed
    CRASH = "crash"
    TIMEOUT = "timeout"
    MEMORY = "memory"  # the memory limit was hit
    IMPORT_ERROR = "import-error"
    UNTRUSTED = "untrusted"  # the workspace is not trusted: the static tier only
    STALE = "stale"  # the file changed while it was checked
    INFRASTRUCTURE = "infrastructure"  # a remote job was lost with its machine


class Verdict(WireEnum):
    """A kernel's validation on one device (``kernels[name].validate[device]``)."""

    PASS = "pass"
    FAIL = "fail"
    ERROR = "error"
    CRASH = "crash"
    TIMEOUT = "timeout"
    MEMORY = "memory"


class Build(WireEnum):
    """A kernel's build on one device (``kernels[name].compile[device]``)."""

    COMPILED = "compiled"
    CACHED = "cached"  # found in the kernel cache
    ERROR = "error"


class Codegen(WireEnum):
    """Warp's code generation for a kernel (``kernels[name].codegen``)."""

    PENDING = "pending"
    OK = "ok"
    ERROR = "error"
    GENERIC = "generic"  # types come from each launch's overload


class JobState(WireEnum):
    """A file's job (the ``state`` push)."""

    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"


class Activity(WireEnum):
    """What the daemon is doing while a pipeline step runs (the language server's status)."""

    COMPILING = "compiling"
    VALIDATING = "validating"
    BENCHMARKING = "benchmarking"


# what a ``progress`` push's ``stage`` (a pipeline step, daemon/pipeline.py) shows the user; every
# step has its entry (tests/daemon test_pipeline... checks the table against the steps)
STEP_ACTIVITY: dict[str, Activity] = {
    "import": Activity.COMPILING,
    "codegen": Activity.COMPILING,
    "compile": Activity.COMPILING,
    "validate": Activity.VALIDATING,
    "shrink": Activity.VALIDATING,
    "debug": Activity.VALIDATING,
    "bench": Activity.BENCHMARKING,
}


class Tier(WireEnum):
    """Which tier found a reported record."""

    STATIC = "static"  # the constraint layer, which the language server computes itself
    DYNAMIC = "dynamic"  # the daemon's findings


class RecordSet(WireEnum):
    """Which records a client wants in its ``result`` messages (``hello.records``)."""

    ALL = "all"
    DYNAMIC = "dynamic"  # the language server: it has the static records already
