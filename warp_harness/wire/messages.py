"""The daemon socket's messages, typed: one class per request, reply and push (docs/protocol.md).

Both ends build a message as one of these and turn it into the map a frame carries with
``to_wire()``; a received map becomes one with ``parse_request`` (the daemon) or
``parse_daemon_message`` (a client), which check every field they read. A field of the wrong
type is a ``MalformedMessage`` (a ``ProtocolError``: the daemon answers ``bad_request``, a
client drops that one message), never an exception from deep inside a handler. Unknown
fields are ignored and an unknown push type is an ``Unknown`` message, as protocol version 1
promises (additive changes keep ``v = 1``).

A ``result`` carries a ``Report``: the engine's typed answer for one file (static and dynamic
records, each a ``ReportedRecord`` with its tier and streak). The daemon converts it to a map
once per result; the language server, which has the static records already, asks (``hello``
``records: "dynamic"``) for the dynamic ones only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypedDict, TypeVar

from warp_harness.record import Record
from warp_harness.wire.framing import E_BAD_REQUEST, E_MALFORMED, ProtocolError, message
from warp_harness.wire.statuses import STEP_ACTIVITY, Activity, JobState, RecordSet, Status, Tier, WireEnum

_E = TypeVar("_E", bound=WireEnum)
_MISSING: Any = object()


class MalformedMessage(ProtocolError):
    """A message whose fields do not follow the protocol: which field, and what it holds."""

    def __init__(self, text: str, *, code: str = E_BAD_REQUEST) -> None:
        super().__init__(code, text)


class _Fields:
    """Typed reads of a message's fields; a missing required field or a wrong type raises."""

    def __init__(self, data: Mapping[str, Any], code: str) -> None:
        self.data = data
        self.code = code
        self.what = f"`{data.get('type')}`"

    def _bad(self, key: str, expected: str) -> MalformedMessage:
        got = self.data.get(key, _MISSING)
        held = "nothing" if got is _MISSING else type(got).__name__
        return MalformedMessage(f"{self.what}: `{key}` must be {expected}, got {held}", code=self.code)

    def text(self, key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key, default)
        if type(value) is str or (value is default and default is not _MISSING):
            return value
        raise self._bad(key, "a string")

    def opt_text(self, key: str) -> str | None:
        value: str | None = self.text(key, None)
        return value

    def flag(self, key: str, default: bool) -> bool:
        value = self.data.get(key, default)
        if type(value) is bool:
            return value
        raise self._bad(key, "true or false")

    def opt_int(self, key: str) -> int | None:
        value = self.data.get(key)
        if value is None or type(value) is int:
            return value
        raise self._bad(key, "an integer")

    def opt_float(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None or type(value) in (int, float):
            return None if value is None else float(value)
        raise self._bad(key, "a number")

    def enum(self, cls: type[_E], key: str, default: Any = _MISSING) -> Any:
        value = self.data.get(key, default)
        if value is default and default is not _MISSING:
            return value
        parsed = cls.parse(value)
        if parsed is None:
            raise self._bad(key, " | ".join(m.value for m in cls))
        return parsed

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.data.get(key)
        if value is None:
            return {}
        if isinstance(value, dict) and all(type(k) is str for k in value):
            return value
        raise self._bad(key, "a map with string keys")

    def texts(self, key: str) -> list[str]:
        value = self.data.get(key)
        if value is None:
            return []
        if isinstance(value, list) and all(type(v) is str for v in value):
            return value
        raise self._bad(key, "a list of strings")

    def items(self, key: str) -> list[Any]:
        value = self.data.get(key)
        if value is None:
            return []
        if isinstance(value, list):
            return value
        raise self._bad(key, "a list")


# --------------------------------------------------------------------------- the result payload


class KernelSummary(TypedDict, total=False):
    """One kernel in a ``result``'s ``kernels``: its line and each step's verdicts (the values of
    ``statuses.Codegen``, ``Build`` per device, ``Verdict`` per device), its benchmark per device,
    the label of its contract."""

    line: int
    codegen: str
    compile: dict[str, str]
    validate: dict[str, str]
    bench: dict[str, dict[str, Any]]
    contract: str | None


def _kernels(fields: _Fields) -> dict[str, KernelSummary]:
    kernels = fields.mapping("kernels")
    for name, summary in kernels.items():
        if not isinstance(summary, dict):
            raise fields._bad("kernels", f"a map of kernel summaries ({name!r} is not a map)")
        for step in ("compile", "validate", "bench"):
            per_device = summary.get(step)
            if per_device is not None and not isinstance(per_device, dict):
                raise fields._bad("kernels", f"a map of kernel summaries ({name!r}.{step} is not a map)")
    return kernels


@dataclass
class ReportedRecord:
    """A record as the daemon reports it: which tier found it, and how many saves in a row it fired.
    ``wire``: the map it was read from (a client's: a diagnostic carries it without converting the
    record back)."""

    record: Record
    tier: Tier
    streak: int = 0
    wire: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.tier = Tier(self.tier)  # a caller's plain string, typed

    def to_dict(self) -> dict[str, Any]:
        return {**self.record.to_dict(), "streak": self.streak, "tier": self.tier}

    @classmethod
    def from_wire(cls, data: object) -> ReportedRecord | None:
        """The record a ``result`` carries; None when it is not one (a client drops that record)."""
        if not isinstance(data, dict):
            return None
        tier = Tier.parse(data.get("tier", "dynamic"))
        streak = data.get("streak", 0)
        if tier is None or type(streak) is not int:
            return None
        try:
            record = Record.from_dict(data)
        except (KeyError, ValueError, TypeError, AttributeError):
            return None
        return cls(record, tier, streak, data)


@dataclass
class Report:
    """The engine's answer for one file (``Engine.check``), what a ``result`` message carries."""

    path: str
    trusted: bool
    status: Status | None = None
    cached: bool = False
    records: list[ReportedRecord] = field(default_factory=list)
    kernels: dict[str, KernelSummary] = field(default_factory=dict)
    repros: list[str] = field(default_factory=list)
    timings: dict[str, float | None] = field(default_factory=dict)
    seed: int | None = None
    module_hash: str | None = None
    devices: list[str] = field(default_factory=list)
    source_sha256: str | None = None
    elapsed_ms: float | None = None
    # records a client could not read (``from_wire``), left out
    unreadable: int = field(default=0, compare=False)

    def __post_init__(self) -> None:
        if self.status is not None:
            self.status = Status(self.status)  # a caller's plain string, typed

    def dynamic(self) -> list[Record]:
        return [r.record for r in self.records if r.tier == Tier.DYNAMIC]

    def to_dict(self, records: RecordSet = RecordSet.ALL) -> dict[str, Any]:
        """The ``result`` payload; ``records``: all of them, or the dynamic tier's only."""
        wanted = self.records
        if records == RecordSet.DYNAMIC:
            wanted = [r for r in wanted if r.tier == Tier.DYNAMIC]
        out: dict[str, Any] = {
            "path": self.path,
            "trusted": self.trusted,
            "cached": self.cached,
            "repros": list(self.repros),
            "status": self.status,
            "kernels": self.kernels,
            "timings": self.timings,
            "records": [r.to_dict() for r in wanted],
            "elapsed_ms": self.elapsed_ms,
        }
        if self.trusted:  # what only the dynamic tier knows
            out.update(
                seed=self.seed,
                module_hash=self.module_hash,
                devices=list(self.devices),
                source_sha256=self.source_sha256,
            )
        return out

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Report:
        """A ``result`` payload (a push, a reply, an item of ``results``), checked; a record that
        cannot be read is left out and counted in ``unreadable``."""
        f = _Fields(data, E_MALFORMED)
        raw_records = f.items("records")
        records = [r for r in map(ReportedRecord.from_wire, raw_records) if r is not None]
        timings = f.mapping("timings")
        if not all(v is None or type(v) in (int, float) for v in timings.values()):
            raise f._bad("timings", "a map of numbers")
        return cls(
            path=f.text("path"),
            trusted=f.flag("trusted", False),
            status=f.enum(Status, "status", None),
            cached=f.flag("cached", False),
            records=records,
            kernels=_kernels(f),
            repros=f.texts("repros"),
            timings=timings,
            seed=f.opt_int("seed"),
            module_hash=f.opt_text("module_hash"),
            devices=f.texts("devices"),
            source_sha256=f.opt_text("source_sha256"),
            elapsed_ms=f.opt_float("elapsed_ms"),
            unreadable=len(raw_records) - len(records),
        )


# --------------------------------------------------------------------------- requests (client -> daemon)


@dataclass(frozen=True)
class Hello:
    """The first request of a connection; ``records``: which records its ``result`` messages carry."""

    TYPE: ClassVar[str] = "hello"
    client: str | None = None
    subscribe: bool = True
    records: RecordSet = RecordSet.ALL

    def to_wire(self) -> dict[str, Any]:
        out = message(self.TYPE, client=self.client, subscribe=self.subscribe)
        if self.records != RecordSet.ALL:
            out["records"] = self.records
        return out

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Hello:
        f = _Fields(data, E_BAD_REQUEST)
        client = data.get("client")
        return cls(
            client=None if client is None else str(client),
            subscribe=f.flag("subscribe", True),
            records=f.enum(RecordSet, "records", RecordSet.ALL),
        )


@dataclass(frozen=True)
class Ping:
    TYPE: ClassVar[str] = "ping"

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Ping:
        return cls()


@dataclass(frozen=True)
class Check:
    """Check one file; ``path`` relative to the workspace or absolute inside it."""

    TYPE: ClassVar[str] = "check"
    path: str
    force: bool = False
    wait: bool = True

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE, path=self.path, force=self.force, wait=self.wait)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Check:
        f = _Fields(data, E_BAD_REQUEST)
        force, wait = bool(data.get("force", False)), data.get("wait", True) is not False
        return cls(path=_path(f), force=force, wait=wait)


@dataclass(frozen=True)
class ResultsRequest:
    """The last result of each file, or of ``path``."""

    TYPE: ClassVar[str] = "results"
    path: str | None = None

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE) if self.path is None else message(self.TYPE, path=self.path)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> ResultsRequest:
        f = _Fields(data, E_BAD_REQUEST)
        return cls(path=None if data.get("path") is None else _path(f))


@dataclass(frozen=True)
class StatusRequest:
    TYPE: ClassVar[str] = "status"

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> StatusRequest:
        return cls()


@dataclass(frozen=True)
class Subscribe:
    TYPE: ClassVar[str] = "subscribe"
    enabled: bool = True

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE, enabled=self.enabled)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Subscribe:
        return cls(enabled=_Fields(data, E_BAD_REQUEST).flag("enabled", True))


@dataclass(frozen=True)
class Shutdown:
    TYPE: ClassVar[str] = "shutdown"

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Shutdown:
        return cls()


def _path(f: _Fields) -> str:
    path: str = f.text("path")
    if not path:
        raise MalformedMessage("`path` must be a non-empty string")
    return path


Request = Hello | Ping | Check | ResultsRequest | StatusRequest | Subscribe | Shutdown
REQUESTS: dict[str, Any] = {
    cls.TYPE: cls for cls in (Hello, Ping, Check, ResultsRequest, StatusRequest, Subscribe, Shutdown)
}


def parse_request(data: Mapping[str, Any]) -> Request | None:
    """The typed request ``data`` holds; None for a type this module does not know (a handler
    of the daemon's own may); MalformedMessage (``bad_request``) for a field of the wrong type."""
    cls = REQUESTS.get(str(data.get("type")))
    parsed: Request | None = None if cls is None else cls.from_wire(data)
    return parsed


# ------------------------------------------------------------------ replies and pushes (daemon -> client)


@dataclass(frozen=True)
class Welcome:
    TYPE: ClassVar[str] = "welcome"
    server: str
    version: str
    protocol: int
    supported: list[int]
    workspace: str
    trusted: bool
    max_frame: int
    capabilities: list[str]

    def to_wire(self) -> dict[str, Any]:
        return message(
            self.TYPE,
            server=self.server,
            version=self.version,
            protocol=self.protocol,
            supported=list(self.supported),
            workspace=self.workspace,
            trusted=self.trusted,
            max_frame=self.max_frame,
            capabilities=list(self.capabilities),
        )

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Welcome:
        f = _Fields(data, E_MALFORMED)
        supported = f.items("supported")
        if not all(type(v) is int for v in supported):
            raise f._bad("supported", "a list of integers")
        return cls(
            server=f.text("server", ""),
            version=f.text("version", ""),
            protocol=f.opt_int("protocol") or 0,
            supported=supported,
            workspace=f.text("workspace", ""),
            trusted=f.flag("trusted", False),
            max_frame=f.opt_int("max_frame") or 0,
            capabilities=f.texts("capabilities"),
        )


@dataclass(frozen=True)
class Result:
    """A file's findings: the reply to ``check`` and the push after any check."""

    TYPE: ClassVar[str] = "result"
    report: Report
    push: bool = False

    def to_wire(self, records: RecordSet = RecordSet.ALL) -> dict[str, Any]:
        fields = self.report.to_dict(records)
        return message(self.TYPE, push=True, **fields) if self.push else message(self.TYPE, **fields)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Result:
        return cls(Report.from_wire(data), push=data.get("push") is True)


@dataclass(frozen=True)
class Results:
    """The reply to ``results``: the last result of each file asked for."""

    TYPE: ClassVar[str] = "results"
    reports: list[Report]

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Results:
        items = _Fields(data, E_MALFORMED).items("results")
        if not all(isinstance(item, dict) for item in items):
            raise MalformedMessage("`results`: `results` must be a list of maps", code=E_MALFORMED)
        return cls([Report.from_wire(item) for item in items])


@dataclass(frozen=True)
class Queued:
    """The reply to ``check`` with ``wait: false``."""

    TYPE: ClassVar[str] = "queued"
    path: str

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE, path=self.path)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Queued:
        return cls(_Fields(data, E_MALFORMED).text("path"))


@dataclass(frozen=True)
class StateChange:
    """Push: a file's job changed state."""

    TYPE: ClassVar[str] = "state"
    path: str
    state: JobState

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE, push=True, path=self.path, state=self.state)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> StateChange:
        f = _Fields(data, E_MALFORMED)
        return cls(f.text("path"), f.enum(JobState, "state"))


_PROGRESS_FIELDS = ("stage", "kernel", "device", "size", "seed", "edge_case")


@dataclass(frozen=True)
class Progress:
    """Push: the worker is about to run ``stage`` (a pipeline step's wire name, or ``<step>-done``)."""

    TYPE: ClassVar[str] = "progress"
    stage: str
    kernel: str | None = None
    device: str | None = None
    size: int | None = None
    seed: int | None = None
    edge_case: str | None = None
    # the fields the worker sent, exactly (a push repeats them as they came)
    sent: frozenset[str] = field(default=frozenset(_PROGRESS_FIELDS), compare=False, repr=False)

    @property
    def activity(self) -> Activity | None:
        """What the daemon is doing now; None: ``stage`` names no step (keep the current one)."""
        return STEP_ACTIVITY.get(self.stage)

    def detail(self) -> str:
        """``stage kernel device``, as a status line shows it."""
        return " ".join(str(v) for v in (self.stage, self.kernel, self.device) if v)

    def to_wire(self) -> dict[str, Any]:
        fields = {k: getattr(self, k) for k in _PROGRESS_FIELDS if k in self.sent}
        return message(self.TYPE, push=True, **fields)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Progress:
        """A ``progress`` push, or the worker's progress message of the same fields (which it
        may send as numbers or strings: they are passed on, and typed leniently here)."""
        size, seed = data.get("size"), data.get("seed")
        return cls(
            stage=str(data.get("stage") or ""),
            kernel=None if data.get("kernel") is None else str(data["kernel"]),
            device=None if data.get("device") is None else str(data["device"]),
            size=size if type(size) is int else None,
            seed=seed if type(seed) is int else None,
            edge_case=None if data.get("edge_case") is None else str(data["edge_case"]),
            sent=frozenset(k for k in _PROGRESS_FIELDS if k in data),
        )


@dataclass(frozen=True)
class Removed:
    """Push: the file was deleted; drop its diagnostics."""

    TYPE: ClassVar[str] = "removed"
    path: str

    def to_wire(self) -> dict[str, Any]:
        return message(self.TYPE, push=True, path=self.path)

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Removed:
        return cls(_Fields(data, E_MALFORMED).text("path"))


@dataclass(frozen=True)
class Error:
    TYPE: ClassVar[str] = "error"
    code: str
    message: str
    id: Any = None
    fatal: bool = False

    @classmethod
    def from_wire(cls, data: Mapping[str, Any]) -> Error:
        f = _Fields(data, E_MALFORMED)
        return cls(str(data.get("code")), str(data.get("message")), data.get("id"), f.flag("fatal", False))


@dataclass(frozen=True)
class Unknown:
    """A message of a type this client does not know (a newer daemon's): ignored."""

    type: str
    fields: Mapping[str, Any]


# replies with nothing but their type (``pong``, ``ok``) and ``status`` (a report of many parts,
# read by people) stay maps: ``Reply``
@dataclass(frozen=True)
class Reply:
    type: str
    fields: Mapping[str, Any]


DaemonMessage = (
    Welcome | Result | Results | Queued | StateChange | Progress | Removed | Error | Reply | Unknown
)
_DAEMON_MESSAGES: dict[str, Any] = {
    cls.TYPE: cls for cls in (Welcome, Result, Results, Queued, StateChange, Progress, Removed, Error)
}


def parse_daemon_message(data: Mapping[str, Any]) -> DaemonMessage:
    """The typed message the daemon sent; MalformedMessage (``malformed``) when a field it needs
    is missing or of the wrong type."""
    kind = data.get("type")
    if not isinstance(kind, str):
        raise MalformedMessage("a message needs a string field `type`", code=E_MALFORMED)
    cls = _DAEMON_MESSAGES.get(kind)
    if cls is not None:
        parsed: DaemonMessage = cls.from_wire(data)
        return parsed
    if kind in ("pong", "ok", "status"):
        return Reply(kind, data)
    return Unknown(kind, data)
