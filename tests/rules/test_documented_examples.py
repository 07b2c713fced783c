"""Every rule's documented examples, in one pass: the Bad example fires the rule and the Good one does
not; where the documentation says Warp rejects the Bad code, the real Warp (on the CPU) rejects it and
accepts the Good one.

A documented example is a fragment (``warp`` is imported, host names such as ``n`` are defined by the
reader); `_examples` completes it the same way for every rule, and `_RUNNABLE` gives the host code a
launch-time check needs.
"""

from __future__ import annotations

import re

import pytest
from warp_oracle import warp_error

from warp_harness.engine import analyse_source
from warp_harness.rules import rule_classes
from warp_harness.rules.base import Rule

_RULES = {cls.id: cls for cls in rule_classes()}
_PRELUDE = "import warp as wp\n\n"

# records the Bad example gets (one otherwise)
_COUNT = {"WH002": 2, "WH003": 2, "WH004": 2, "WH006": 2, "WH022": 3, "WH060": 3}
# the target a rule's example is about (the default profile otherwise)
_TARGET = {"WH013": "sm_86", "WH015": "sm_86"}
# Warp refuses the Bad example when it builds the module (import or code generation)
_REJECTED_AT_BUILD = {
    "WH000",
    "WH001",
    "WH002",
    "WH003",
    "WH004",
    "WH005",
    "WH009",
    "WH014",
    "WH019",
    "WH022",
    "WH040",
    "WH041",
    "WH042",
}
# Warp refuses the Bad example when the launch runs (on the CPU), given the host code below
_REJECTED_AT_LAUNCH = {"WH006", "WH008", "WH020", "WH021", "WH043"}
# Warp builds both examples: what the rule reports is a race, an out-of-bounds write, a slow pattern
# or a launch error Warp reports only on a GPU (WH007, WH010-WH013); WH015's example aborts the process
# on the CPU, and its shared memory is measured against Warp's codegen in test_wh015_tile_shared_memory;
# WH016's examples differ only by a comment
_ACCEPTED_BY_WARP = {"WH013", "WH016", "WH023", "WH024", "WH025", "WH026"}  # WH023-WH026: silent bugs
# WH044-WH048: lost writes, uninitialised reads, undone atomics, GPU-only redundant work, swapped arguments
# (their tests and tests/corpus/test_real_bugs.py show the wrong results)
_ACCEPTED_BY_WARP |= {"WH044", "WH045", "WH046", "WH047", "WH048"}
# WH050, WH054: out-of-bounds reads Warp builds (their tests show debug mode's bounds trap); WH051-WH053's
# examples launch out of bounds at import (their tests run them in debug mode, in a child process)
_ACCEPTED_BY_WARP |= {"WH050", "WH054"}
_OUT_OF_BOUNDS_AT_IMPORT = {"WH051", "WH052", "WH053"}
# WH055-WH059: indices of the wrong space, GPU races along a launch axis, tile offsets (their tests show
# the wrong results on the CPU, and the race on a GPU)
_ACCEPTED_BY_WARP |= {"WH055", "WH056", "WH057", "WH058", "WH059"}
# WH060-WH062: outputs that never arrive, a sentinel index, arguments out of order (their tests show the
# wrong results on the CPU)
_ACCEPTED_BY_WARP |= {"WH060", "WH061", "WH062"}


def _blocks(cls: type[Rule]) -> tuple[str, str]:
    doc = cls.doc()
    bad = re.search(r"### Bad\n```python\n(.*?)```", doc, re.S)
    good = re.search(r"### Good\n```python\n(.*?)```", doc, re.S)
    assert bad is not None and good is not None, f"{cls.id}: documentation without a Bad and a Good example"
    return bad.group(1), good.group(1)


def _examples(rule_id: str) -> tuple[str, str]:
    """(bad, good) as complete modules: the Good example replaces what it rewrites of the Bad one."""
    bad, good = _blocks(_RULES[rule_id])
    if rule_id == "WH009":  # Good is the kernel only: the constants stay
        good = bad.split("@wp.kernel")[0] + good
    elif rule_id == "WH015":  # Good is the one line that changes
        good = bad.replace("TILE = wp.constant(128)", good.strip())
    elif rule_id == "WH006":  # Good is the launch only: the kernel stays
        good = bad.split("wp.launch")[0] + good
    return _PRELUDE + bad, _PRELUDE + good


_RUNNABLE = {
    # the kernel of the example, and host arrays for its launches, inside `run()`
    "WH020": ("", "    a = wp.zeros(8, dtype=float)\n"),
    "WH021": ("", ""),
    "WH043": ("", "    u = wp.zeros(4, dtype=float)\n"),
    "WH006": (
        "",
        "    n = 4\n    x = wp.zeros(n, dtype=float)\n    y = wp.zeros(n, dtype=float)\n",
    ),
    "WH008": (
        "@wp.kernel\ndef reduce(x: wp.array(dtype=float), out: wp.array(dtype=float)):\n"
        "    i = wp.tid()\n    wp.atomic_add(out, 0, x[i])\n\n\n",
        "    n = 4\n    x = wp.zeros(n, dtype=float)\n    out = wp.zeros(1, dtype=float)\n",
    ),
}


def _runnable(rule_id: str, example: str) -> str:
    """The example with its launches moved into `run()` (which `warp_error(..., launch=True)` calls)."""
    kernels, host = _RUNNABLE[rule_id]
    lines = example.removeprefix(_PRELUDE).splitlines()
    launches = [line for line in lines if line.startswith("wp.launch")]
    rest = "\n".join(line for line in lines if not line.startswith("wp.launch"))
    body = "".join(f"    {line}\n" for line in launches)
    return f'{_PRELUDE}wp.set_device("cpu")\n\n{kernels}{rest}\n\n\ndef run():\n{host}{body}'


@pytest.mark.parametrize("rule_id", sorted(_RULES))
def test_the_bad_example_fires_and_the_good_one_does_not(rule_id: str) -> None:
    bad, good = _examples(rule_id)
    overrides = {"select": [rule_id], **({"target": _TARGET[rule_id]} if rule_id in _TARGET else {})}
    fired = analyse_source(bad, "bad.py", overrides=overrides).records
    assert [r.rule for r in fired] == [rule_id] * _COUNT.get(rule_id, 1), fired
    assert analyse_source(good, "good.py", overrides=overrides).records == []


def test_every_rule_is_judged_against_warp_or_says_why_not() -> None:
    judged = _REJECTED_AT_BUILD | _REJECTED_AT_LAUNCH | _ACCEPTED_BY_WARP
    explained = {"WH007", "WH010", "WH011", "WH012", "WH015"}  # see the comment on _ACCEPTED_BY_WARP
    explained |= _OUT_OF_BOUNDS_AT_IMPORT
    assert judged | explained == set(_RULES)


@pytest.mark.parametrize("rule_id", sorted(_REJECTED_AT_BUILD | _ACCEPTED_BY_WARP))
def test_warp_agrees_when_it_builds_the_module(rule_id: str) -> None:
    bad, good = _examples(rule_id)
    if rule_id in _REJECTED_AT_BUILD:
        assert warp_error(bad) is not None
    else:
        assert warp_error(bad) is None
    assert warp_error(good) is None


@pytest.mark.slow
@pytest.mark.parametrize("rule_id", sorted(_REJECTED_AT_LAUNCH))
def test_warp_agrees_when_the_launch_runs_on_the_cpu(rule_id: str) -> None:
    bad, good = (_runnable(rule_id, example) for example in _examples(rule_id))
    error = warp_error(bad, launch=True)
    assert error is not None and "NameError" not in error, error
    assert warp_error(good, launch=True) is None
