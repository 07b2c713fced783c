"""daemon/hermetic_imports.py and the import following of daemon/hermetic_build.py (issue #37 item 1,
issue #31): a kernel that calls a ``@wp.func`` (reads a ``@wp.struct``, a ``wp.constant``) imported
from another workspace module is built from the texts alone, that module's definitions in their own
fresh namespace; its top-level code never runs. What a text cannot give is refused with the reason.

Real files, real Warp on the CPU for the builds (a launch compares with numpy).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from warp_harness.daemon import hermetic_build
from warp_harness.daemon.captured import hermetic
from warp_harness.daemon.hermetic_build import NotHermetic, build

INIT = "from .utils import helper as helper\n"

UTILS = """
import warp as wp

from . import deep

open(MARKER, "w").write("utils ran")  # top-level code with a side effect
OFFSET = wp.constant(3.0)


@wp.struct
class Pair:
    a: float
    b: float


@wp.func
def helper(v: float):
    return deep.twice(v) + OFFSET
"""

DEEP = """
from typing import Any

import warp as wp

FACTOR = 2.0


@wp.func
def twice(v: Any):  # a library name imported into a workspace module (typing's, as newton's)
    return v * FACTOR
"""

KERNEL = """
import warp as wp

import pkg
import pkg.deep as pd
from pkg.utils import OFFSET

from .utils import Pair, helper

open(MARKER, "w").write("kern ran")


@wp.kernel
def k(x: wp.array(dtype=float), y: wp.array(dtype=float), p: Pair):
    i = wp.tid()
    y[i] = helper(x[i]) + pd.twice(p.a) + OFFSET + pkg.helper(p.b)
"""


def _write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture()
def ws(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(workspace, the kernel's file, the marker the modules' top-level code writes)."""
    root = tmp_path / "ws"
    marker = tmp_path / "marker"
    _write(root, "pkg/__init__.py", INIT)
    _write(root, "pkg/utils.py", UTILS.replace("MARKER", repr(str(marker))))
    _write(root, "pkg/deep.py", DEEP)
    kern = _write(root, "pkg/kern.py", KERNEL.replace("MARKER", repr(str(marker))))
    return root, kern, marker


def _decide(path: Path, kernel: str = "k", workspace: Path | None = None) -> str | None:
    return hermetic.why_not(path.read_text(encoding="utf-8"), str(path), kernel, workspace)


def test_relative_absolute_package_and_chained_imports_are_followed(ws: tuple[Path, Path, Path]) -> None:
    root, kern, marker = ws
    why, texts = hermetic.decision(kern.read_text(encoding="utf-8"), str(kern), "k", root)
    assert why is None
    # the package's __init__ (a re-export), the func's module and the module it calls into
    assert sorted(Path(p).name for p in texts) == ["__init__.py", "deep.py", "utils.py"]
    assert texts[os.path.realpath(root / "pkg/deep.py")] == DEEP
    assert not marker.exists()


@pytest.mark.slow
def test_the_imported_definitions_build_and_run_without_their_modules_code(
    ws: tuple[Path, Path, Path],
) -> None:
    import warp as wp

    root, kern, marker = ws
    built = build(kern.read_text(encoding="utf-8"), str(kern), "k", root)
    assert sorted(Path(p).name for p in built.imported) == ["__init__.py", "deep.py", "utils.py"]
    namespace = sys.modules[built.module_name]
    pair = namespace.Pair()
    pair.a, pair.b = 1.0, 2.0
    x = np.arange(6, dtype=np.float32)
    y = wp.zeros(6, dtype=float, device="cpu")
    wp.launch(built.kernel, dim=6, inputs=[wp.array(x, device="cpu"), y, pair], device="cpu")
    # helper(x) = 2x + 3; pd.twice(1) = 2; OFFSET = 3; pkg.helper(2) = 7
    np.testing.assert_allclose(y.numpy(), 2 * x + 3 + 2 + 3 + 7)
    assert not marker.exists()  # neither the kernel's module nor utils.py ran
    # each imported module is its own namespace, holding only what was reached
    utils = namespace.helper.func.__globals__
    assert utils["__file__"] == os.path.realpath(root / "pkg/utils.py")
    assert "deep" in utils and "twice" in vars(utils["deep"]) and "FACTOR" in vars(utils["deep"])


def test_the_builder_takes_the_texts_decided_on(ws: tuple[Path, Path, Path]) -> None:
    """The worker builds from the texts the supervisor decided on, not the files as they are now."""
    root, kern, _ = ws
    source = kern.read_text(encoding="utf-8")
    _, texts = hermetic.decision(source, str(kern), "k", root)
    _write(root, "pkg/deep.py", DEEP.replace("FACTOR = 2.0", "FACTOR = float(len('run at import'))"))
    assert "`FACTOR`" in (_decide(kern, workspace=root) or "")  # the file now: refused
    built = build(source, str(kern), "k", root, texts=texts)
    deep = sys.modules[built.module_name].pd
    assert deep.FACTOR == 2.0
    missing = {p: t for p, t in texts.items() if not p.endswith("deep.py")}
    with pytest.raises(NotHermetic, match="not among the texts the decision was made on"):
        build(source, str(kern), "k", root, texts=missing)


@pytest.mark.parametrize(
    ("files", "kernel_text", "reason"),
    [
        (  # the func reads what the module binds by running code
            {
                "helpers.py": "import warp as wp\nSTEP = float(len('ab'))\n@wp.func\ndef f(v: float):\n"
                "    return v + STEP\n"
            },
            "from helpers import f\n",
            "in the workspace module `helpers`: `f` reads `STEP`, which the module binds at run time",
        ),
        (  # a name made by a call
            {"helpers.py": "import warp as wp\ndef make():\n    return 1\nf = make()\n"},
            "from helpers import f\n",
            "`f` of the workspace module `helpers` is not a `@wp.func`",
        ),
        (  # neither a module of the workspace nor installed outside it
            {},
            "from wh_not_installed.special import f\n",
            "imported from `wh_not_installed.special`, which is found neither in the workspace nor installed",
        ),
        (  # an import no reached definition reads is never followed
            {"helpers.py": "import warp as wp\n"},
            "import helpers\nf = 1\n",
            None,
        ),
        (
            {
                "helpers.py": "import warp as wp\nwp.config.mode = 'debug'\n@wp.func\ndef f(v: float):\n"
                "    return v\n"
            },
            "from helpers import f\n",
            "the workspace module `helpers`: its top level sets `wp.config.mode`",
        ),
        (  # a star import cannot be followed
            {
                "helpers.py": "from deep import *\n",
                "deep.py": "import warp as wp\n@wp.func\ndef f(v: float):\n    return v\n",
            },
            "from helpers import f\n",
            "`f` of the workspace module `helpers` is not",
        ),
    ],
)
def test_what_a_text_cannot_give_is_refused(
    tmp_path: Path, files: dict[str, str], kernel_text: str, reason: str | None
) -> None:
    for rel, text in files.items():
        _write(tmp_path, rel, text)
    body = "f(x[wp.tid()])" if "f = 1" not in kernel_text else "0.0"
    kern = _write(
        tmp_path,
        "kern.py",
        "import warp as wp\n" + kernel_text + "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        f"    x[wp.tid()] = {body}\n",
    )
    why = _decide(kern, workspace=tmp_path)
    if reason is None:
        assert why is None  # an import the kernel does not reach is never followed
    else:
        assert why is not None and reason in why, why


def test_a_module_used_as_a_value_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, "helpers.py", "import warp as wp\n@wp.func\ndef f(v: float):\n    return v\n")
    kern = _write(
        tmp_path,
        "kern.py",
        "import warp as wp\nimport helpers\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        "    m = helpers\n    x[wp.tid()] = 0.0\n",
    )
    assert "uses the module `helpers` itself" in (_decide(kern, workspace=tmp_path) or "")


def test_cycles_and_long_chains(tmp_path: Path) -> None:
    """Two modules importing each other are followed once each; a re-export chain longer than the
    cap is refused, not followed forever."""
    _write(
        tmp_path,
        "a.py",
        "import warp as wp\nimport b\n@wp.func\ndef fa(v: float):\n    return b.fb(v) + 1.0\n",
    )
    _write(
        tmp_path,
        "b.py",
        "import warp as wp\nimport a\n@wp.func\ndef fb(v: float):\n    return v\n"
        "@wp.func\ndef fc(v: float):\n    return a.fa(v)\n",
    )
    kern = _write(
        tmp_path,
        "kern.py",
        "import warp as wp\nfrom b import fc\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        "    x[wp.tid()] = fc(x[wp.tid()])\n",
    )
    why, texts = hermetic.decision(kern.read_text(encoding="utf-8"), str(kern), "k", tmp_path)
    assert why is None and sorted(Path(p).name for p in texts) == ["a.py", "b.py"]

    for i in range(40):  # m0 re-exports m1's f, which re-exports m2's ...
        _write(tmp_path, f"m{i}.py", f"from m{i + 1} import f\n")
    _write(tmp_path, "m40.py", "import warp as wp\n@wp.func\ndef f(v: float):\n    return v\n")
    long = _write(
        tmp_path,
        "long.py",
        "import warp as wp\nfrom m0 import f\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        "    x[wp.tid()] = f(x[wp.tid()])\n",
    )
    assert "a chain of more than 24 imports" in (_decide(long, workspace=tmp_path) or "")


def test_a_module_linked_out_of_the_workspace_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    _write(outside, "real.py", "import warp as wp\n@wp.func\ndef f(v: float):\n    return v\n")
    root = tmp_path / "ws"
    root.mkdir()
    (root / "linked.py").symlink_to(outside / "real.py")
    (root / "linkpkg").symlink_to(outside, target_is_directory=True)
    for spelled in ("from linked import f", "from linkpkg.real import f"):
        kern = _write(
            root,
            "kern.py",
            f"import warp as wp\n{spelled}\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
            "    x[wp.tid()] = f(x[wp.tid()])\n",
        )
        why, texts = hermetic.decision(kern.read_text(encoding="utf-8"), str(kern), "k", root)
        assert why is not None and "a link out of the workspace" in why, why
        assert texts == {}


def test_the_kernel_modules_folder_bounds_the_search_without_a_workspace(tmp_path: Path) -> None:
    """With no workspace named, only files under the folder the module is imported from are
    followed: a module above it is not workspace code."""
    _write(tmp_path, "above.py", "import warp as wp\n@wp.func\ndef f(v: float):\n    return v\n")
    kern = _write(
        tmp_path,
        "inner/kern.py",
        "import warp as wp\nfrom above import f\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        "    x[wp.tid()] = f(x[wp.tid()])\n",
    )
    assert "not a module of the workspace" in (_decide(kern) or "")
    assert _decide(kern, workspace=tmp_path) is None


def test_the_contract_path_follows_the_same_imports(ws: tuple[Path, Path, Path]) -> None:
    """``hermetic_build.why_not`` (the contract path's decision, the supervisor's too) follows them."""
    root, kern, _ = ws
    text = kern.read_text(encoding="utf-8")
    sibling = [("kern_contract.py", "from pkg.kern import k\n")]
    assert hermetic_build.why_not(text, str(kern), "pkg.kern", sibling) is None
    _write(root, "pkg/deep.py", DEEP.replace("FACTOR = 2.0", "FACTOR = float(len('ab'))"))
    why = hermetic_build.why_not(text, str(kern), "pkg.kern", sibling)
    assert why is not None and "`FACTOR`" in why  # the helper changed: the cached analysis is not used


KINDS = """
import enum
from enum import IntFlag

open(MARKER, "w").write("ran")


class Kind(enum.IntEnum):
    \"\"\"newton's GeoType, JointType ... are such classes, read in kernels as `GeoType.BOX`.\"\"\"

    A = 1
    \"\"\"a member's docstring\"\"\"
    B = A + 2

    def doubled(self, by: int = 2) -> int:  # runs when called: newton's JointType.dof_count
        return self * by


class Flags(IntFlag):
    X = 1 << 0
    Y = 1 << 1
    XY = X | Y
"""

USES_KINDS = """
import warp as wp

from kinds import Flags, Kind


@wp.kernel
def k(x: wp.array(dtype=int)):
    i = wp.tid()
    if x[i] == Kind.B:
        x[i] = int(Flags.XY) * 10
"""


@pytest.mark.slow
def test_an_int_enum_of_literals_from_another_module_is_built(tmp_path: Path) -> None:
    import warp as wp

    marker = tmp_path / "marker"
    _write(tmp_path, "kinds.py", KINDS.replace("MARKER", repr(str(marker))))
    kern = _write(tmp_path, "kern.py", USES_KINDS)
    assert _decide(kern) is None
    built = build(kern.read_text(encoding="utf-8"), str(kern), "k")
    x = wp.array(np.array([3, 1, 3], dtype=np.int32), device="cpu")
    wp.launch(built.kernel, dim=3, inputs=[x], device="cpu")
    np.testing.assert_array_equal(x.numpy(), [30, 1, 30])
    assert not marker.exists()


@pytest.mark.parametrize(
    "member",
    ["B = enum.auto()", "B = len('ab')", "@enum.member\n    def b(self):\n        return 2"],
)
def test_an_enum_with_more_than_literals_is_refused(tmp_path: Path, member: str) -> None:
    _write(tmp_path, "kinds.py", f"import enum\n\n\nclass Kind(enum.IntEnum):\n    A = 1\n    {member}\n")
    kern = _write(tmp_path, "kern.py", USES_KINDS.replace("int(Flags.XY) * 10", "1").replace("Flags, ", ""))
    assert "`Kind` of the workspace module `kinds` is not" in (_decide(kern) or "")


TYPES = """
import warp as wp

open(MARKER, "w").write("ran")


class vec5f(wp.types.vector(length=5, dtype=wp.float32)):
    pass


vec5 = vec5f  # another name of it (mujoco-warp's `vec10 = vec10f`)
"""

USES_TYPES = """
import warp as wp

from mytypes import vec5


@wp.kernel
def k(x: wp.array(dtype=vec5), y: wp.array(dtype=float)):
    i = wp.tid()
    y[i] = wp.dot(x[i], vec5(1.0, 1.0, 1.0, 1.0, 1.0))
"""


@pytest.mark.slow
def test_a_vector_type_class_from_another_module_is_built(tmp_path: Path) -> None:
    """newton's `class vec6f(wp.types.vector(length=6, dtype=wp.float32)): pass`."""
    import warp as wp

    marker = tmp_path / "marker"
    _write(tmp_path, "mytypes.py", TYPES.replace("MARKER", repr(str(marker))))
    kern = _write(tmp_path, "kern.py", USES_TYPES)
    assert _decide(kern) is None
    built = build(kern.read_text(encoding="utf-8"), str(kern), "k")
    vec5 = sys.modules[built.module_name].vec5
    data = np.arange(10, dtype=np.float32).reshape(2, 5)
    y = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(built.kernel, dim=2, inputs=[wp.array(data, dtype=vec5, device="cpu"), y], device="cpu")
    np.testing.assert_allclose(y.numpy(), data.sum(axis=1))
    assert not marker.exists()
    # a base made by anything else than a Warp type constructor of literals is refused
    _write(
        tmp_path,
        "mytypes.py",
        TYPES.replace("length=5", "length=len('abcde')").replace("MARKER", "'/dev/null'"),
    )
    assert "`vec5` of the workspace module `mytypes` is not" in (_decide(kern) or "")


def test_a_module_importing_back_from_the_kernels_module(tmp_path: Path) -> None:
    """A cycle through the kernel's own module: its constant is bound in the helper's namespace."""
    _write(
        tmp_path,
        "helper.py",
        "import warp as wp\nfrom kern import SCALE\n@wp.func\ndef f(v: float):\n    return v * SCALE\n",
    )
    kern = _write(
        tmp_path,
        "kern.py",
        "import warp as wp\nfrom helper import f\nSCALE = 3.0\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n"
        "    x[wp.tid()] = f(x[wp.tid()])\n",
    )
    assert _decide(kern) is None
    built = build(kern.read_text(encoding="utf-8"), str(kern), "k")
    assert sys.modules[built.module_name].f.func.__globals__["SCALE"] == 3.0


NEWTON_CONSTANTS = """
import math

import numpy as np
import warp as wp

from kinds import Flags

open(MARKER, "w").write("ran")

# newton 1.8.0 geometry/bvh.py and geometry/inertia.py: constants of an imported enum's member and of
# numpy's float facts (both kernels were replayed from an import of their module, WHD069)
_FLAG_X = wp.constant(wp.int32(int(Flags.X)))
_FLOAT32_EPS = wp.constant(float(np.finfo(np.float32).eps))
_TWO_PI = wp.constant(2.0 * math.pi)


@wp.kernel
def k(flags: wp.array(dtype=wp.int32), y: wp.array(dtype=float)):
    i = wp.tid()
    flags[i] = flags[i] & ~_FLAG_X
    y[i] = _FLOAT32_EPS * _TWO_PI
"""


@pytest.mark.slow
def test_constants_of_an_imported_enum_member_and_of_numpy_float_facts_are_built(tmp_path: Path) -> None:
    """newton 1.8.0's `_SHAPE_FLAG_VISIBLE = wp.constant(wp.int32(int(ShapeFlags.VISIBLE)))` (bvh.py,
    `compute_enabled_shapes`) and `_FLOAT32_EPS = wp.constant(float(np.finfo(np.float32).eps))`
    (inertia.py, `validate_and_correct_inertia_kernel`): built from the texts, the enum's module not run."""
    import warp as wp

    marker = tmp_path / "marker"
    _write(tmp_path, "kinds.py", KINDS.replace("MARKER", repr(str(marker))))
    kern = _write(tmp_path, "kern.py", NEWTON_CONSTANTS.replace("MARKER", "'/dev/null'"))
    assert _decide(kern) is None
    built = build(kern.read_text(encoding="utf-8"), str(kern), "k")
    flags = wp.array(np.array([3, 1, 2], dtype=np.int32), device="cpu")
    y = wp.zeros(3, dtype=float, device="cpu")
    wp.launch(built.kernel, dim=3, inputs=[flags, y], device="cpu")
    np.testing.assert_array_equal(flags.numpy(), [2, 0, 2])
    np.testing.assert_allclose(y.numpy(), np.finfo(np.float32).eps * 2 * np.pi, rtol=1e-6)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("constant", "why"),
    [
        ("wp.constant(float(np.finfo(np.float32).eps) + len('ab'))", "`_FLOAT32_EPS`"),  # a call
        ("wp.constant(float(np.random.rand()))", "`_FLOAT32_EPS`"),  # numpy, but not a float fact
        ("wp.constant(float(np.finfo(np.float32).dtype))", "`_FLOAT32_EPS`"),  # not a number
        ("wp.constant(math.sqrt(2.0))", "`_FLOAT32_EPS`"),  # math, but a call
    ],
)
def test_constants_that_need_running_code_are_still_refused(tmp_path: Path, constant: str, why: str) -> None:
    _write(tmp_path, "kinds.py", KINDS.replace("MARKER", "'/dev/null'"))
    text = NEWTON_CONSTANTS.replace("MARKER", "'/dev/null'")
    kern = _write(tmp_path, "kern.py", text.replace("wp.constant(float(np.finfo(np.float32).eps))", constant))
    assert why in (_decide(kern) or "")


def test_a_shadowed_cast_or_a_constant_of_an_imported_non_constant_is_refused(tmp_path: Path) -> None:
    _write(tmp_path, "kinds.py", KINDS.replace("MARKER", "'/dev/null'") + "\nLIMIT = len('abc')\n")
    text = NEWTON_CONSTANTS.replace("MARKER", "'/dev/null'")
    shadowed = _write(tmp_path, "kern.py", text.replace("import math\n", "import math\nfloat = len\n"))
    assert "`_FLOAT32_EPS`" in (_decide(shadowed) or "")
    imported = text.replace("from kinds import Flags", "from kinds import Flags, LIMIT")
    imported = imported.replace("_TWO_PI = wp.constant(2.0 * math.pi)", "_TWO_PI = wp.constant(float(LIMIT))")
    kern = _write(tmp_path, "kern.py", imported)
    assert "`LIMIT` of the workspace module `kinds` is not" in (_decide(kern) or "")


STEEL_OPTIONS = """
import warp as wp

open(MARKER, "w").write("ran")

WARP_DETERMINISM_OFF = {"deterministic": wp.DeterministicMode.NOT_GUARANTEED}
wp.set_module_options(WARP_DETERMINISM_OFF)
"""

STEEL_KERNELS = """
import warp as wp

from options import WARP_DETERMINISM_OFF

# newton 1.8.0 solvers/steel/kernels.py; sleeping.py has `wp.set_module_options(WARP_DETERMINISM_OFF)`
wp.set_module_options({"enable_backward": False, **WARP_DETERMINISM_OFF})
LOCAL = {"max_unroll": 2}
wp.set_module_options(LOCAL)


@wp.kernel
def k(x: wp.array(dtype=float)):
    i = wp.tid()
    x[i] = x[i] * 2.0
"""


@pytest.mark.slow
def test_module_options_from_a_literal_dict_of_this_or_an_imported_module_are_built(tmp_path: Path) -> None:
    """newton's steel solver sets its modules' options from `WARP_DETERMINISM_OFF`, a module-level dict
    of literals and a Warp enum member, imported from another module (the kernels were replayed from an
    import of their module, WHD069): the options apply to the hermetic build's own module, the dict's
    module is built from its text, its top-level code not run."""
    import warp as wp

    marker = tmp_path / "marker"
    _write(tmp_path, "options.py", STEEL_OPTIONS.replace("MARKER", repr(str(marker))))
    kern = _write(tmp_path, "kern.py", STEEL_KERNELS)
    assert _decide(kern) is None
    built = build(kern.read_text(encoding="utf-8"), str(kern), "k")
    options = built.kernel.module.options
    assert options["enable_backward"] is False and options["max_unroll"] == 2
    assert options["deterministic"] == wp.DeterministicMode.NOT_GUARANTEED
    x = wp.array(np.array([1.0, 2.0], dtype=np.float32), device="cpu")
    wp.launch(built.kernel, dim=2, inputs=[x], device="cpu")
    np.testing.assert_array_equal(x.numpy(), [2.0, 4.0])
    assert not marker.exists()


@pytest.mark.parametrize(
    ("options_module", "kernels"),
    [
        # the imported dict is built by a call: running code
        (
            STEEL_OPTIONS.replace('{"deterministic"', 'dict(**{"deterministic"').replace(
                "GUARANTEED}", "GUARANTEED})"
            ),
            None,
        ),
        # bound twice
        (STEEL_OPTIONS + "WARP_DETERMINISM_OFF = {}\n", None),
        # a local options dict read from a function's result
        (STEEL_OPTIONS, STEEL_KERNELS.replace('{"max_unroll": 2}', '{"max_unroll": len("ab")}')),
        # options from a name that is no dict of this module
        (
            STEEL_OPTIONS,
            STEEL_KERNELS.replace("wp.set_module_options(LOCAL)", "wp.set_module_options(make())"),
        ),
    ],
)
def test_module_options_that_need_running_code_are_still_refused(
    tmp_path: Path, options_module: str, kernels: str | None
) -> None:
    _write(tmp_path, "options.py", options_module.replace("MARKER", "'/dev/null'"))
    kern = _write(tmp_path, "kern.py", kernels or STEEL_KERNELS)
    assert _decide(kern) is not None


@pytest.mark.parametrize("method", ["__int__", "__index__", "__new__", "__str__", "_missing_"])
def test_an_enum_with_a_method_python_calls_by_itself_is_refused(tmp_path: Path, method: str) -> None:
    """`int(Flags.X)` in a constant would run a member's `__int__` at the build (`__new__` runs as the
    class is made, `__str__` when a member is formatted): such an enum is not a definition."""
    body = f"    def {method}(self, *args):\n        open('/dev/null').read()\n        return 1\n"
    _write(
        tmp_path,
        "kinds.py",
        KINDS.replace("MARKER", "'/dev/null'").replace("    XY = X | Y\n", f"    XY = X | Y\n\n{body}"),
    )
    kern = _write(tmp_path, "kern.py", NEWTON_CONSTANTS.replace("MARKER", "'/dev/null'"))
    assert "`Flags` of the workspace module `kinds` is not" in (_decide(kern) or "")
