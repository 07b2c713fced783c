"""The daemon's pipeline as data: the steps a worker runs on a saved module, in order.

One table, used by the worker (what to run, in which order), the supervisor (what a crash in
a step means), the result cache (which requested steps make up a verdict's key), the options
(the switch that turns a step off), the daemon (the steps a save runs) and the language server
(through ``wire.statuses.STEP_ACTIVITY``: what a ``progress`` push shows). To add a step: add a
member here and its entry in ``STEP_ACTIVITY``, a module under
``daemon/steps/`` with a ``run(ctx, ...)`` function returning a ``StepOutcome``, its inputs in
``worker.run_step``, and (when it
can be turned off) a boolean option of the same name in ``daemon/options.py``.

"Step" is the pipeline's word; a record's ``stage`` (``record.Stage``: constraint, compile,
crash, numeric, performance) is what kind of finding a record is, a different thing. On the
wire the steps keep their old spelling: a ``progress`` push's ``stage`` field holds a step's
value (docs/protocol.md), and so does the worker's progress pipe.
"""

from __future__ import annotations

from enum import Enum

from warp_harness.wire.statuses import STEP_ACTIVITY, Activity


class Step(str, Enum):
    """A pipeline step; the value is its name on the wire (``progress``'s ``stage`` field)."""

    # value, top-level (the worker runs it; else a part of another step that only
    # shows in progress), optional (a request may leave it out; an option of the same name turns
    # it off), builds (a crash in it fails the whole module and may be the machine's fault),
    # runs cases (a crash in it names one kernel, size and seed: a failing case to store)
    IMPORT = ("import", True, False, True, False)
    CODEGEN = ("codegen", True, False, False, False)
    COMPILE = ("compile", True, False, True, False)
    VALIDATE = ("validate", True, True, False, True)
    SHRINK = ("shrink", False, False, False, False)
    DEBUG = ("debug", False, False, False, False)
    BENCH = ("bench", True, True, False, True)

    top_level: bool
    optional: bool
    builds: bool
    runs_cases: bool

    def __new__(cls, value: str, top_level: bool, optional: bool, builds: bool, runs_cases: bool) -> Step:
        member = str.__new__(cls, value)
        member._value_ = value
        member.top_level = top_level
        member.optional = optional
        member.builds = builds
        member.runs_cases = runs_cases
        return member

    def __str__(self) -> str:  # the wire value, in f-strings and messages alike
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @property
    def job_state(self) -> Activity:
        """What the editor shows while this step runs (``wire.statuses.STEP_ACTIVITY``)."""
        return STEP_ACTIVITY[self.value]

    @property
    def done(self) -> str:
        """The progress value sent when this step finished for one kernel on one device."""
        return f"{self.value}-done"

    @classmethod
    def parse(cls, value: object) -> Step | None:
        """The step a wire value names; None for anything else (``validate-done``, garbage)."""
        return _BY_VALUE.get(value) if isinstance(value, str) else None


_BY_VALUE: dict[str, Step] = {step.value: step for step in Step}
# the steps the worker runs, in order
PIPELINE: tuple[Step, ...] = tuple(s for s in Step if s.top_level)
# the steps a request may select; a save runs all of them
OPTIONAL: tuple[Step, ...] = tuple(s for s in Step if s.optional)
DEFAULT_STEPS: tuple[Step, ...] = OPTIONAL


def steps_from_wire(values: object) -> tuple[Step, ...]:
    """The optional steps a worker message asks for (all of them when it names none)."""
    if not isinstance(values, list | tuple) or not values:
        return DEFAULT_STEPS
    parsed = (Step.parse(v) for v in values)
    return tuple(s for s in parsed if s is not None and s.optional)


def job_state(value: object) -> Activity | None:
    """The job state a ``progress`` push's ``stage`` shows; None: keep the current one."""
    return STEP_ACTIVITY.get(value) if isinstance(value, str) else None
