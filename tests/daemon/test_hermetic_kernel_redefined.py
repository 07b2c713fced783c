"""A kernel whose name has several defs (issue #31): warp-lang's own tests
(https://github.com/NVIDIA/warp/blob/main/warp/tests/test_codegen_instancing.py) redefine
`global_kernel` after `global_kernel_1 = global_kernel`, and `create_kernel_cond` defines a `def k` in
each branch of an `if`; each launch ran the def its kernel object was made from. The capture records
which (``identity.definition_in``: the ``i``-th of the ``n`` defs of the name, from the kernel's first
line) and the build makes that one from the saved text (``hermetic_build._chosen_definition``,
``hermetic_factory._kernel_def``); where the saved text no longer has ``n`` defs, or the record is not
two such ints, it is refused with the reason (the replay imports the module, WHD069), and an import
of the module, which gives the last def, replays none of another def's launches.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from daemon_helpers import recorded_closure

from warp_harness.capture.identity import kernel_sources
from warp_harness.daemon import hermetic_build
from warp_harness.daemon.captured.worker_side import not_the_imported_definition

REDEFINED = """
import warp as wp

with open({marks!r}, "a", encoding="utf-8") as f:
    f.write("top level\\n")


@wp.kernel
def global_kernel(a: wp.array(dtype=int)):
    a[0] = 17


global_kernel_1 = global_kernel


@wp.kernel
def global_kernel(a: wp.array(dtype=int)):
    a[0] = 42


global_kernel_2 = global_kernel


def create_kernel_cond(cond):
    if cond:

        @wp.kernel
        def k(a: wp.array(dtype=int)):
            a[0] = 17

    else:

        @wp.kernel
        def k(a: wp.array(dtype=int)):
            a[0] = 42

    return k
"""


def _text(ws: Path) -> str:
    return REDEFINED.format(marks=str(ws / "marks.log"))


def _records(ws: Path) -> dict[str, dict[str, Any]]:
    """The records the capture takes of each kernel object (the module run here, as under ``capture``)."""
    makers = {
        "global_kernel_1": lambda m: m.global_kernel_1,
        "global_kernel_2": lambda m: m.global_kernel_2,
        "cond_true": lambda m: m.create_kernel_cond(True),
        "cond_false": lambda m: m.create_kernel_cond(False),
    }
    text = _text(ws)
    return {
        key: recorded_closure(ws, "redefined.py", text, f"redefined_{key}_{abs(hash(ws))}", make)
        for key, make in makers.items()
    }


def _run(kernel: Any) -> int:
    import warp as wp

    out = wp.zeros(1, dtype=int, device="cpu")
    wp.launch(kernel, dim=1, inputs=[out], device="cpu")
    return int(out.numpy()[0])


@pytest.mark.slow
def test_each_launch_builds_the_def_it_ran(tmp_path: Path) -> None:
    records = _records(tmp_path)
    assert records["global_kernel_1"] == {
        "qualname": "global_kernel",
        "path": "redefined.py",
        "cells": {},
        "definition": [0, 2],
    }
    assert records["global_kernel_2"]["definition"] == [1, 2]
    assert records["cond_true"]["definition"] == [0, 2]
    assert records["cond_false"]["definition"] == [1, 2]
    # each def's body edited (a save): each launch's build is its own def, edited; no top level ran
    edited = _text(tmp_path).replace("a[0] = 17", "a[0] = 18").replace("a[0] = 42", "a[0] = 43")
    path = tmp_path / "redefined.py"
    path.write_text(edited, encoding="utf-8")
    (tmp_path / "marks.log").unlink()
    got = {}
    for key, record in records.items():
        name = "global_kernel" if key.startswith("global") else "k"
        assert hermetic_build.kernel_texts(edited, str(path), name, tmp_path, record)[0] is None, key
        got[key] = _run(hermetic_build.build(edited, str(path), name, tmp_path, None, record).kernel)
    assert got == {"global_kernel_1": 18, "global_kernel_2": 43, "cond_true": 18, "cond_false": 43}
    assert not (tmp_path / "marks.log").exists()
    # without a record, the module-level name is refused as before (which def ran is not in the text)
    why = hermetic_build.kernel_texts(edited, str(path), "global_kernel", tmp_path, None)[0]
    assert why is not None and "bound more than once" in why


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "name", "key", "reason"),
    [
        # a third def of the name: which one the launch ran is no longer known
        (
            (
                "global_kernel_2 = global_kernel\n",
                "global_kernel_2 = global_kernel\n\n\n@wp.kernel\ndef "
                "global_kernel(a: wp.array(dtype=int)):\n    a[0] = 1\n",
            ),
            "global_kernel",
            "global_kernel_1",
            "defined 3 times at the top of the module, 2 when captured",
        ),
        (
            (
                "    return k\n",
                "    if not cond:\n\n        @wp.kernel\n        def k(a: wp.array(dtype=int)):\n"
                "            a[0] = 1\n\n    return k\n",
            ),
            "k",
            "cond_true",
            "3 `def k` in create_kernel_cond, 2 when captured",
        ),
        # the name rebound otherwise too: the def chosen is not what the name holds
        (
            ("global_kernel_2 = global_kernel\n", "global_kernel_2 = global_kernel\nglobal_kernel = 1\n"),
            "global_kernel",
            "global_kernel_2",
            "`global_kernel` is not a module-level `@wp.kernel` def",
        ),
    ],
)
def test_a_text_that_no_longer_says_which_def_is_refused(
    tmp_path: Path, edit: tuple[str, str], name: str, key: str, reason: str
) -> None:
    records = _records(tmp_path)
    text = _text(tmp_path)
    assert text.replace(*edit) != text
    text = text.replace(*edit)
    path = tmp_path / "redefined.py"
    path.write_text(text, encoding="utf-8")
    why = hermetic_build.kernel_texts(text, str(path), name, tmp_path, records[key])[0]
    assert why is not None and reason in why, why


@pytest.mark.parametrize("forged", [[5, 2], ["0", 2], [0, 1], [0.0, 2], [0, 2, 1], "0", None])
def test_a_forged_definition_is_no_definition(tmp_path: Path, forged: Any) -> None:
    """A record's definition is two ints, ``0 <= i < n``: anything else names no def (never an index
    the build trusts, never evaluated)."""
    text = _text(tmp_path)
    path = tmp_path / "redefined.py"
    path.write_text(text, encoding="utf-8")
    module_level = {"qualname": "global_kernel", "path": "redefined.py", "cells": {}, "definition": forged}
    why = hermetic_build.kernel_texts(text, str(path), "global_kernel", tmp_path, module_level)[0]
    assert why is not None and "names no definition" in why, why
    nested = {"qualname": "create_kernel_cond.<locals>.k", "path": "redefined.py", "cells": {}}
    why = hermetic_build.kernel_texts(text, str(path), "k", tmp_path, {**nested, "definition": forged})[0]
    assert why is not None and "2 `def k` in create_kernel_cond" in why, why
    assert not (tmp_path / "marks.log").exists()


def test_the_digest_of_a_redefined_name_covers_every_def() -> None:
    """An edit of either def changes the name's digest (a save replays its launches); an array one
    def reads is never poisoned as only written."""
    text = REDEFINED.format(marks="m")
    base = kernel_sources(text)["global_kernel"]
    first = kernel_sources(text.replace("a[0] = 17", "a[0] = 18", 1))["global_kernel"]
    last = kernel_sources(text.replace("a[0] = 42", "a[0] = 43", 1))["global_kernel"]
    assert len({base.digest, first.digest, last.digest}) == 3
    assert base.write_only == frozenset({"a"})
    reads = text.replace("    a[0] = 17", "    a[0] = a[0] + 17", 1)
    assert kernel_sources(reads)["global_kernel"].write_only == frozenset()


def test_an_import_replays_only_the_last_def() -> None:
    """The fallback (the module imported) gives the name's last def: another def's launches are not
    replayed on it (a wrong kernel's outputs would be a false alarm)."""
    module_level = {"qualname": "global_kernel", "path": "r.py", "cells": {}}
    assert not_the_imported_definition({**module_level, "definition": [0, 2]})
    assert not not_the_imported_definition({**module_level, "definition": [1, 2]})
    assert not not_the_imported_definition(None)
    assert not not_the_imported_definition({**module_level, "qualname": "f.<locals>.k", "definition": [0, 2]})
