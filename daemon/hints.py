"""The hint of a failed validation, chosen from the evidence the validator collected.

The validator (steps/validate.py) hands over one ``evidence`` dict per failure (it is also
in the failure's entry of ``job.failures``)::

    {"rule": "WHD020", "output": "out", "shape": [1000], "n_total": 1000, "n_bad": 2,
     "n_unwritten": 0, "n_nonfinite": 0, "max_rel": 0.93, "first_bad": [998],
     "got": 0.41, "expected": 1.2, "boundary": False, "edge_run": 2, "edge": "end",
     "integral": False, "whole_units": False, "grows": False, "varies": False,
     "passes_on": ["cpu"]}

``boundary``: every bad element sits on the first or last index of an axis; ``edge_run``:
the bad elements are one run of that many indices touching the start or the end (``edge``)
of an axis; ``integral``: every finite reference value is a whole number; ``whole_units``:
every bad result is a whole number, off by at least one; ``varies``: re-running the same
case (same seed, same inputs) gave other results; ``passes_on``: devices where the same
kernel matched its reference.

What the evidence says, strongest first: a run of bad elements at an end, with wrong or
wild values, is a read past the end (a stencil ``x[i + k]``); results that change between
identical runs, integer data off by whole units, or a kernel right on one device and wrong
on another are a race; NaN/Inf or huge values where the reference is finite may be either
an overflow or a read out of bounds; only small relative errors that grow with the size
are precision. Whenever the failure could be a bounds error, ``bounds_suspect`` is true and
the supervisor re-runs the smallest case in debug mode with the bounds probe.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MISMATCH, UNWRITTEN, NONFINITE = "WHD020", "WHD021", "WHD022"
MAX_STENCIL = 16  # a run of bad elements at an end no longer than this can be a stencil's reach
SMALL_REL = 1e-2  # relative errors below this are rounding, not wrong values
WILD_REL = 1e3  # ... and above this, garbage rather than a wrong formula


@dataclass(frozen=True)
class Hint:
    kind: str  # boundary | bounds | race | nonfinite | precision | unwritten | arithmetic
    text: str
    bounds_suspect: bool  # re-run the case in debug mode to place an out-of-bounds access


def _wild(ev: Mapping[str, Any]) -> bool:
    return int(ev.get("n_nonfinite") or 0) > 0 or float(ev.get("max_rel") or 0.0) >= WILD_REL


def _edge_read(ev: Mapping[str, Any]) -> Hint | None:
    run = ev.get("edge_run")
    if not run or int(run) > MAX_STENCIL or int(ev.get("n_bad") or 0) >= int(ev.get("n_total") or 0):
        return None
    if not (_wild(ev) or float(ev.get("max_rel") or 0.0) > SMALL_REL):
        return None  # rounding errors that happen to sit at the end
    k = int(run)
    end = ev.get("edge") != "start"
    which = f"the {'last' if end else 'first'} {k} element{'s' if k > 1 else ''}"
    access = f"x[i + {k}]" if end else f"x[i - {k}]"
    values = "NaN/Inf or wild values" if _wild(ev) else "wrong values"
    return Hint(
        "bounds",
        f"{values} in {which} of `{ev.get('output')}` only: a read past the "
        f"{'end' if end else 'start'} of an input (a stencil such as `{access}` without a guard); "
        "the case is re-run in debug mode to find the access",
        True,
    )


def _race(ev: Mapping[str, Any]) -> Hint | None:
    reasons = []
    if ev.get("varies"):
        reasons.append("the same inputs gave different results when run again")
    if ev.get("integral") and ev.get("whole_units"):
        # no figures here: the evidence is the case as first seen, the message quotes the
        # shrunk one (a size-1000 "got 3, expected 2489" beside a size-2 "got 1, expected 2")
        reasons.append("integer-valued results are off by whole units")
    passes = [str(d) for d in ev.get("passes_on") or ()]
    if passes and float(ev.get("max_rel") or 0.0) > SMALL_REL:
        reasons.append(f"the kernel is right on {', '.join(passes)}")
    if not reasons:
        return None
    return Hint(
        "race",
        "; ".join(reasons) + ": threads race on a read-modify-write of the same element (lost updates); "
        "use wp.atomic_add/atomic_min/atomic_max (or `a[j] += v`, which Warp makes atomic), "
        "or give each thread an output element of its own",
        False,
    )


def choose_hint(ev: Mapping[str, Any]) -> Hint:
    """The hint for one failing output, from its evidence (see the module docstring)."""
    rule = ev.get("rule")
    if ev.get("boundary"):
        return Hint(
            "boundary",
            "the first bad index is at the boundary: check the bounds handling "
            "(an off-by-one index or guard)",
            True,
        )
    if rule == UNWRITTEN:
        return Hint(
            "unwritten",
            "make sure every output element is written: the launch dim must cover the output "
            "and no early `return` may skip elements",
            True,
        )
    found = _edge_read(ev) or _race(ev)
    if found is not None:
        return found
    if rule == NONFINITE or _wild(ev):
        return Hint(
            "nonfinite",
            "NaN, Inf or huge values where the reference is finite: an overflow or an unhandled edge case "
            "(for exp/softmax subtract the maximum first; guard divisions by zero), or a read outside an "
            "array; the case is re-run in debug mode to check the accesses",
            True,
        )
    max_rel = float(ev.get("max_rel") or 0.0)
    if ev.get("grows") and max_rel <= SMALL_REL:
        return Hint(
            "precision",
            f"only small relative errors (max {max_rel:.3g}) that grow with the size: "
            "accumulation order or precision (accumulate in float64, or use a pairwise/tree reduction)",
            False,
        )
    return Hint(
        "arithmetic", "compare the kernel's arithmetic with the reference at the first bad index", False
    )
