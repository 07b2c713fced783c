"""The dataclasses created on the server's way to its first diagnostics (issue 15: start-up to first
diagnostics within 100 ms of an empty pygls server's). On Python 3.11 each generated method is an
``exec`` of its own, and a dataclass without a docstring also has ``inspect.signature`` build one: what
these classes generate is start-up time."""

from __future__ import annotations

import pytest
from first_analysis import first_analysis

# classes of modules still being reworked; the list may only shrink
UNDOCUMENTED_FOR_NOW = {
    "warp_harness.model.imports.ImportMap",
    "warp_harness.model.kernel.KernelDef",
    "warp_harness.model.kernel.Param",
    "warp_harness.model.kernel.StructDef",
    "warp_harness.model.launches.LaunchSite",
    "warp_harness.model.source.ParsedSource",
    "warp_harness.model.source.SyntaxIssue",
}

# server state: never compared by value nor shown, so no __eq__ and no __repr__ to generate
IDENTITY_ONLY = {
    "warp_harness.server.documents.StaticState",
    "warp_harness.server.documents.DynamicState",
    "warp_harness.server.notebooks.CellResult",
    "warp_harness.server.notebooks.NotebookState",
    "warp_harness.server.pull.Kept",
    "warp_harness.server.pull.PullState",
}

_RECORD_CLASSES = """
import dataclasses

made = []
process = dataclasses._process_class

def recorded(cls, *args, **kwargs):
    made.append((f"{cls.__module__}.{cls.__qualname__}", cls.__dict__.get("__doc__") is not None))
    return process(cls, *args, **kwargs)

dataclasses._process_class = recorded
"""

_CLASS_PARAMETERS = """
params = {}
for name, _ in made:
    module, _, qualname = name.rpartition(".")
    cls = sys.modules[module]
    for part in qualname.split("."):
        cls = getattr(cls, part)
    params[name] = {"eq": cls.__dataclass_params__.eq, "repr": cls.__dataclass_params__.repr}
found.update(made=made, params=params)
"""


@pytest.fixture(scope="module")
def first_diagnostics(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """The dataclasses a fresh server creates up to its first analysis, and their parameters."""
    return first_analysis(tmp_path_factory.mktemp("start-up-classes"), _RECORD_CLASSES, _CLASS_PARAMETERS)


def test_the_dataclasses_on_the_way_to_the_first_diagnostics_have_docstrings(
    first_diagnostics: dict[str, object],
) -> None:
    made = first_diagnostics["made"]
    assert isinstance(made, list)
    undocumented = {name for name, documented in made if name.startswith("warp_harness.") and not documented}
    assert undocumented <= UNDOCUMENTED_FOR_NOW


def test_the_server_state_classes_generate_no_eq_or_repr(first_diagnostics: dict[str, object]) -> None:
    params = first_diagnostics["params"]
    assert isinstance(params, dict)
    assert IDENTITY_ONLY <= set(params)  # all of them are on the way, or this test guards nothing
    assert {name: params[name] for name in IDENTITY_ONLY} == {
        name: {"eq": False, "repr": False} for name in IDENTITY_ONLY
    }


def test_the_workspace_scan_is_imported_at_the_first_workspace_pull(
    first_diagnostics: dict[str, object],
) -> None:
    modules = first_diagnostics["modules"]
    assert isinstance(modules, list) and "warp_harness.server.pull" in modules
    assert "warp_harness.server.pull_workspace" not in modules


def test_the_workspace_scan_classes_generate_no_eq_or_repr() -> None:
    from warp_harness.server.pull_workspace import FileReport, WorkspaceFiles

    for cls in (FileReport, WorkspaceFiles):
        assert (cls.__dataclass_params__.eq, cls.__dataclass_params__.repr) == (False, False)  # type: ignore[attr-defined]
