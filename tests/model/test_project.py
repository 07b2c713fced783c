"""The workspace model: launches resolved to kernels of other modules, factories, attributes; and the launch
rules firing across modules (records at the launch site, `Related` pointing into the kernel's file)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from warp_harness.engine import check_paths
from warp_harness.model.project import (
    KernelRef,
    ProjectIndex,
    launch_statistics,
    module_name,
    resolve_relative,
)

KERNELS = """
import functools
import warp as wp


@wp.kernel
def scale(a: wp.array(dtype=float), s: float):
    i = wp.tid()
    a[i] = a[i] * s


@wp.kernel
def fill2d(a: wp.array2d(dtype=float)):
    i, j = wp.tid()
    a[i, j] = 1.0


@functools.cache
def make_add(dtype):
    @wp.kernel
    def add(a: wp.array(dtype=dtype), b: wp.array(dtype=dtype)):
        i = wp.tid()
        a[i] = a[i] + b[i]

    return add


@functools.lru_cache(maxsize=None)
def make_lru(n: int):
    @wp.kernel(enable_backward=False)
    def lru_kernel(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = float(n)

    return lru_kernel


_CACHE = {}


def cache_kernel(fn):
    def wrapper(*args):
        if args not in _CACHE:
            _CACHE[args] = fn(*args)
        return _CACHE[args]

    return wrapper


@cache_kernel
def make_custom(flag: int):
    @wp.kernel
    def custom(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = float(flag)

    return custom


_BY_KEY = {}


def make_manual(key):
    found = _BY_KEY.get(key)
    if found is not None:
        return found

    @wp.kernel
    def manual(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = 0.0

    _BY_KEY[key] = manual
    return manual


def make_either(flag):
    @wp.kernel
    def one(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = 1.0

    @wp.kernel
    def two(a: wp.array(dtype=float)):
        i = wp.tid()
        a[i] = 2.0

    if flag:
        return one
    return two


add_float = make_add(float)
alias = scale
"""

INIT = """
from .kernels import scale as exported_scale, fill2d
from . import kernels
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def _resolved(root: Path, module: str) -> dict[int, tuple[KernelRef, bool] | None]:
    """Launch line -> (kernel, through a factory) for every launch of ``module``."""
    index = ProjectIndex.for_paths([root])
    model = index.model(module)
    assert model is not None
    view = index.view(str(index.path_of(module))).attach(model)
    return {site.node.lineno: view.resolve(site) for site in model.launches}


def _name(found: tuple[KernelRef, bool] | None) -> str | None:
    return (
        None if found is None else f"{found[0].module}:{found[0].name}" + (" (factory)" if found[1] else "")
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    _write(tmp_path, {"pkg/__init__.py": INIT, "pkg/kernels.py": KERNELS})
    return tmp_path


def _launching(project: Path, body: str, name: str = "pkg/sim.py") -> dict[int, str | None]:
    _write(project, {name: body})
    module = name.removesuffix(".py").replace("/", ".")
    return {line: _name(found) for line, found in _resolved(project / "pkg", module).items()}


def test_every_import_spelling_resolves(project: Path) -> None:
    found = _launching(
        project,
        """
        import warp as wp
        import pkg.kernels
        import pkg.kernels as PK
        from pkg import kernels as K
        from . import kernels
        from .kernels import scale
        from .kernels import scale as renamed
        from pkg import exported_scale
        from . import fill2d


        def run(a):
            wp.launch(scale, dim=4, inputs=[a, 2.0])
            wp.launch(renamed, dim=4, inputs=[a, 2.0])
            wp.launch(K.scale, dim=4, inputs=[a, 2.0])
            wp.launch(PK.scale, dim=4, inputs=[a, 2.0])
            wp.launch(kernels.scale, dim=4, inputs=[a, 2.0])
            wp.launch(pkg.kernels.scale, dim=4, inputs=[a, 2.0])
            wp.launch(exported_scale, dim=4, inputs=[a, 2.0])
            wp.launch(fill2d, dim=(2, 2), inputs=[a])
            wp.launch(K.alias, dim=4, inputs=[a, 2.0])
        """,
    )
    assert list(found.values()) == [
        *["pkg.kernels:scale"] * 7,
        "pkg.kernels:fill2d",
        "pkg.kernels:scale",
    ]


def test_imports_inside_the_launching_function(project: Path) -> None:
    found = _launching(
        project,
        """
        import warp as wp


        def run(a):
            from .kernels import fill2d
            from . import kernels as K

            wp.launch(fill2d, dim=(2, 2), inputs=[a])
            wp.launch(K.scale, dim=4, inputs=[a, 1.0])
        """,
    )
    assert list(found.values()) == ["pkg.kernels:fill2d", "pkg.kernels:scale"]


def test_factories_with_and_without_caching_decorators(project: Path) -> None:
    found = _launching(
        project,
        """
        import warp as wp
        from . import kernels as K
        from .kernels import add_float, make_add, make_custom, make_lru, make_manual


        def run(a):
            wp.launch(make_add(float), dim=4, inputs=[a, a])
            k = make_lru(3)
            wp.launch(k, dim=4, inputs=[a])
            wp.launch(make_custom(1), dim=4, inputs=[a])
            wp.launch(make_manual("x"), dim=4, inputs=[a])
            wp.launch(K.make_add(wp.float32), dim=4, inputs=[a, a])
            wp.launch(add_float, dim=4, inputs=[a, a])
        """,
    )
    assert list(found.values()) == [
        "pkg.kernels:add (factory)",
        "pkg.kernels:lru_kernel (factory)",
        "pkg.kernels:custom (factory)",
        "pkg.kernels:manual (factory)",
        "pkg.kernels:add (factory)",
        "pkg.kernels:add (factory)",
    ]


def test_self_attributes_and_base_classes_in_other_modules(project: Path) -> None:
    _write(
        project,
        {
            "pkg/base.py": """
            import warp as wp

            from .kernels import fill2d, make_add


            class SolverBase:
                def __init__(self):
                    self.fill_kernel = fill2d
                    self.add_kernel = None

                def build(self):
                    self.add_kernel = make_add(float)

                def make_scale(self):
                    @wp.kernel
                    def method_made(a: wp.array(dtype=float)):
                        i = wp.tid()
                        a[i] = 3.0

                    return method_made
            """
        },
    )
    found = _launching(
        project,
        """
        import warp as wp
        from .base import SolverBase
        from .kernels import scale


        class Solver(SolverBase):
            kernel_in_body = scale

            def __init__(self):
                super().__init__()
                self.k = scale

            def step(self, a):
                wp.launch(self.k, dim=4, inputs=[a, 1.0])
                wp.launch(self.fill_kernel, dim=(2, 2), inputs=[a])
                wp.launch(self.add_kernel, dim=4, inputs=[a, a])
                wp.launch(self.kernel_in_body, dim=4, inputs=[a, 1.0])
                wp.launch(self.make_scale(), dim=4, inputs=[a])
        """,
    )
    assert list(found.values()) == [
        "pkg.kernels:scale",
        "pkg.kernels:fill2d",
        "pkg.kernels:add (factory)",
        "pkg.kernels:scale",
        "pkg.base:method_made (factory)",
    ]


def test_unresolvable_launches_give_none(project: Path) -> None:
    found = _launching(
        project,
        """
        import warp as wp
        from .kernels import fill2d, make_either, scale

        KERNELS = {"a": scale}


        class Holder:
            def __init__(self, kernel):
                self.k = kernel
                self.twice = scale

            def reset(self):
                self.twice = fill2d

            def step(self, a, kernel):
                wp.launch(kernel, dim=4, inputs=[a])
                wp.launch(self.k, dim=4, inputs=[a])
                wp.launch(self.twice, dim=4, inputs=[a])
                wp.launch(make_either(True), dim=4, inputs=[a])
                wp.launch(KERNELS["a"], dim=4, inputs=[a])
                for k in (scale, fill2d):
                    wp.launch(k, dim=4, inputs=[a])
                wp.launch(missing_name, dim=4, inputs=[a])
                other = scale
                other = fill2d
                wp.launch(other, dim=4, inputs=[a])
        """,
    )
    assert list(found.values()) == [None] * 8


def test_kernel_in_the_same_file_through_a_factory_or_attribute(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "solo.py": """
            import warp as wp


            def make(n):
                @wp.kernel
                def inner(a: wp.array(dtype=float)):
                    i = wp.tid()
                    a[i] = float(n)

                return inner


            @wp.kernel
            def plain(a: wp.array(dtype=float)):
                i = wp.tid()


            class Runner:
                def __init__(self):
                    self.kernel = plain

                def run(self, a):
                    wp.launch(make(2), dim=4, inputs=[a])
                    wp.launch(self.kernel, dim=4, inputs=[a])
            """
        },
    )
    found = {line: _name(f) for line, f in _resolved(tmp_path, "solo").items()}
    assert list(found.values()) == ["solo:inner (factory)", "solo:plain"]


def test_module_names_and_relative_imports(tmp_path: Path) -> None:
    _write(tmp_path, {"top/__init__.py": "", "top/sub/__init__.py": "", "top/sub/m.py": "", "loose.py": ""})
    assert module_name(tmp_path / "top/sub/m.py") == "top.sub.m"
    assert module_name(tmp_path / "top/sub/__init__.py") == "top.sub"
    assert module_name(tmp_path / "loose.py") == "loose"
    assert resolve_relative("top.sub.m", False, 1, "k") == "top.sub.k"
    assert resolve_relative("top.sub.m", False, 2, None) == "top"
    assert resolve_relative("top.sub", True, 1, "k") == "top.sub.k"
    assert resolve_relative("top.sub.m", False, 4, "k") is None
    # checking one file indexes its whole enclosing package (files outside the roots, not reported)
    index = ProjectIndex.for_paths([tmp_path / "top/sub/m.py"])
    assert set(index.modules) == {"top", "top.sub", "top.sub.m"}


def test_a_namespace_folder_resolves_from_the_package_or_from_the_repository_above(tmp_path: Path) -> None:
    """newton's layout: ``newton/_src/`` has no ``__init__.py``, so its files' module names start below it,
    and imports spell them from the top package (``newton._src.solvers.k``). Either root, the package or
    the repository folder holding it (``check .`` at its top), resolves the launch."""
    _write(
        tmp_path,
        {
            "repo/newton/__init__.py": "",
            "repo/newton/_src/solvers/__init__.py": "",
            "repo/newton/_src/solvers/k.py": KERNELS,
            "repo/newton/_src/solvers/use.py": """
            import warp as wp
            from newton._src.solvers.k import scale

            def run(a):
                wp.launch(scale, dim=4, inputs=[a, 1.0])
            """,
        },
    )
    for root in (tmp_path / "repo" / "newton", tmp_path / "repo"):
        found = {line: _name(hit) for line, hit in _resolved(root, "solvers.use").items()}
        assert found == {5: "solvers.k:scale"}, root


def test_statistics_count_forms_and_resolutions(project: Path) -> None:
    _write(
        project,
        {
            "pkg/sim.py": """
            import warp as wp
            from . import kernels as K
            from .kernels import make_add, scale


            def run(a, kernel):
                wp.launch(scale, dim=4, inputs=[a, 1.0])
                wp.launch(K.fill2d, dim=(2, 2), inputs=[a])
                wp.launch(make_add(float), dim=4, inputs=[a, a])
                wp.launch(kernel, dim=4, inputs=[a])
                wp.launch(K.fill2d if a else K.scale, dim=4, inputs=[a])
                wp.launch(K.scale, dim=4, inputs=[a, 1.0])
            """
        },
    )
    stats = launch_statistics([project / "pkg"])
    assert stats.as_dict()["by_form"] == {
        "attribute": {"other-module": 2},
        "factory-call": {"factory": 1},
        "name": {"other-module": 1, "unresolved": 1},
        "other": {"unresolved": 1},
    }
    assert stats.resolvable_rate() == pytest.approx(4 / 5)


# --- the rules across modules --------------------------------------------------------------------


def _records(root: Path) -> list[tuple[str, int, str]]:
    return sorted(
        (Path(r.location.path).name, r.location.line, r.rule)
        for result in check_paths([root])
        for r in result.records
        if r.rule in ("WH006", "WH007", "WH008", "WH011")
    )


def test_wh007_on_a_1d_kernel_of_another_module_launched_2d(project: Path) -> None:
    _write(
        project,
        {
            "pkg/sim.py": """
            import warp as wp
            from .kernels import scale


            def step(a, n, m):
                wp.launch(scale, dim=(n, m), inputs=[a, 2.0])
            """
        },
    )
    results = check_paths([project / "pkg"])
    records = [r for x in results for r in x.records if r.rule == "WH007"]
    assert len(records) == 1
    record = records[0]
    # at the launch in the launching file, pointing at the tid() line of the kernel's file
    assert Path(record.location.path).name == "sim.py" and record.location.line == 6
    (related,) = record.related
    assert Path(related.location.path).name == "kernels.py" and related.location.line == 7


def test_wh006_wrong_argument_count_across_modules(project: Path) -> None:
    _write(
        project,
        {
            "pkg/sim.py": """
            import warp as wp
            from . import kernels as K


            class Sim:
                def __init__(self):
                    self.adder = K.make_add(float)

                def step(self, a):
                    wp.launch(K.scale, dim=4, inputs=[a])
                    wp.launch(self.adder, dim=4, inputs=[a, a])
                    wp.launch(self.adder, dim=4, inputs=[a])
            """
        },
    )
    results = check_paths([project / "pkg"])
    records = [r for x in results for r in x.records if r.rule == "WH006"]
    assert [(Path(r.location.path).name, r.location.line) for r in records] == [
        ("sim.py", 10),
        ("sim.py", 12),
    ]
    definition = records[0].related[0].location
    assert Path(definition.path).name == "kernels.py" and definition.line == 6


def test_correct_launches_across_modules_stay_silent(project: Path) -> None:
    _write(
        project,
        {
            "pkg/sim.py": """
            import warp as wp
            from . import kernels as K
            from .kernels import fill2d


            def step(a, b, n, m):
                wp.launch(K.scale, dim=n, inputs=[a, 2.0])
                wp.launch(fill2d, dim=(n, m), inputs=[b])
                wp.launch(K.make_add(float), dim=n, inputs=[a, a])
            """
        },
    )
    assert _records(project / "pkg") == []


def test_without_the_package_the_launch_is_not_judged(tmp_path: Path) -> None:
    """A kernel whose module is not in the workspace resolves to nothing: no guess, no record."""
    _write(
        tmp_path,
        {
            "sim.py": """
            import warp as wp
            from elsewhere.kernels import scale


            def step(a, n, m):
                wp.launch(scale, dim=(n, m), inputs=[a])
            """
        },
    )
    assert _records(tmp_path) == []


@pytest.mark.slow
def test_warp_rejects_the_wrong_count_across_modules(project: Path) -> None:
    """What WH006 reports across modules is what Warp raises at the launch."""
    import importlib
    import sys

    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    sys.path.insert(0, str(project))
    try:
        kernels = importlib.import_module("pkg.kernels")
        a = wp.zeros(4, dtype=float, device="cpu")
        with pytest.raises(RuntimeError, match="passed 1 arguments but kernel requires 2"):
            wp.launch(kernels.scale, dim=4, inputs=[a], device="cpu")
    finally:
        sys.path.remove(str(project))
        for name in [n for n in sys.modules if n == "pkg" or n.startswith("pkg.")]:
            del sys.modules[name]


def test_wh015_launch_side_block_dim_of_a_launch_in_another_module(tmp_path: Path) -> None:
    """99,200 bytes of shared tiles fit sm_86's 101,376 less 4 bytes per thread at 128 threads, not at 1024:
    only the launch with block_dim=1024, in the other module, is reported, at that launch."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/tiles.py": """
            import warp as wp


            @wp.kernel
            def stage(a: wp.array(dtype=float)):
                t = wp.tile_load(a, shape=24800, storage="shared")
                wp.tile_store(a, t)
            """,
            "pkg/run.py": """
            import warp as wp
            from . import tiles


            def run(a):
                wp.launch_tiled(tiles.stage, dim=1, inputs=[a], block_dim=128)
                wp.launch_tiled(tiles.stage, dim=1, inputs=[a], block_dim=1024)
            """,
        },
    )
    records = [r for x in check_paths([tmp_path / "pkg"]) for r in x.records if r.rule == "WH015"]
    assert [(Path(r.location.path).name, r.location.line) for r in records] == [("run.py", 7)]
    assert records[0].fix is None
    assert Path(records[0].related[0].location.path).name == "tiles.py"


def test_the_incremental_analyser_with_the_workspace_model_matches_a_full_analysis(project: Path) -> None:
    """The language server's analyser: same records as `analyse_source` with the same view, and after the
    kernel's module changes (an unsaved edit) and the document is forgotten, the new verdict."""
    from warp_harness.config import Settings
    from warp_harness.engine import analyse_source
    from warp_harness.incremental import IncrementalAnalyser

    sim = project / "pkg" / "sim.py"
    text = textwrap.dedent(
        """
        import warp as wp
        from .kernels import scale


        @wp.kernel
        def local(a: wp.array(dtype=float)):
            i, j = wp.tid()
            a[i] = float(j)


        def step(a, n, m):
            wp.launch(scale, dim=(n, m), inputs=[a, 2.0])
            wp.launch(local, dim=4, inputs=[a])
        """
    ).lstrip()
    sim.write_text(text)
    index = ProjectIndex.for_paths([project / "pkg"])
    analyser = IncrementalAnalyser()
    settings = Settings()

    def rules(records: list[object]) -> list[tuple[str, int]]:
        return sorted((r.rule, r.location.line) for r in records)  # type: ignore[attr-defined]

    full = analyse_source(text, str(sim), settings, project=index.view(str(sim)))
    incremental = analyser.analyse(text, str(sim), settings, index.view(str(sim)))
    assert rules(incremental.records) == rules(full.records) == [("WH007", 7), ("WH007", 12)]
    kernels = project / "pkg" / "kernels.py"
    index.set_text(
        kernels,
        KERNELS.replace("    i = wp.tid()\n    a[i] = a[i] * s", "    i, j = wp.tid()\n    a[i] = a[i] * s"),
    )
    analyser.forget(str(sim))
    again = analyser.analyse(text, str(sim), settings, index.view(str(sim)))
    assert rules(again.records) == [("WH007", 7)]
