"""What `host_dtypes` is certain of, checked against what NumPy and Warp really make."""

from __future__ import annotations

import ast

import numpy as np
import pytest

from warp_harness.model.host_dtypes import HostArrayType, HostDtypes, type_text
from warp_harness.model.module import build_model
from warp_harness.model.types import FLOAT32, Matrix, Scalar, Vector

HEADER = """
import numpy as np
import warp as wp
from numpy.random import rand


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


def host(data, n, mesh):
    verts = np.zeros((n, 3))
    typed = np.zeros(n, dtype=np.float32)
    twice = np.zeros(n)
    twice = twice.astype(np.float32)
    wp.launch(k, dim=n, inputs=[{expr}])
"""


def _type(expr: str) -> HostArrayType | None:
    model = build_model(HEADER.format(expr=expr))
    (site,) = model.launches
    inputs = site.argument_list("inputs")
    assert inputs is not None
    host = HostDtypes(model.tree, model.imports, model.resolver)
    return host.array_type(inputs[0], site.scope, site.local_aliases)


# (expression, interop (NumPy), scalar, exact Warp element type)
CERTAIN = [
    ("np.zeros(n)", True, "float64", None),
    ("np.ones((n, 3))", True, "float64", None),
    ("np.empty(n, dtype=np.float32)", True, "float32", None),
    ("np.zeros(n, np.float16)", True, "float16", None),
    ("np.zeros(n, dtype='f4')", True, "float32", None),
    ("np.zeros(n, dtype=float)", True, "float64", None),
    ("np.zeros(n, dtype=np.dtype('int32'))", True, "int32", None),
    ("np.full(n, 0.5)", True, "float64", None),
    ("np.linspace(0.0, 1.0, n)", True, "float64", None),
    ("np.linspace(0, 1, n)", True, "float64", None),
    ("np.arange(0.0, 1.0, 0.25)", True, "float64", None),
    ("np.array([0.0, 1.0, 2.0])", True, "float64", None),
    ("np.array([[0.0, 1, 2], [3, 4, 5]])", True, "float64", None),
    ("np.asarray([1.5, -2.0])", True, "float64", None),
    ("np.eye(3)", True, "float64", None),
    ("np.random.rand(n, 3)", True, "float64", None),
    ("rand(n)", True, "float64", None),
    ("np.random.uniform(-1.0, 1.0, size=n)", True, "float64", None),
    ("np.zeros_like(typed)", True, "float32", None),
    ("np.concatenate([verts, np.ones((1, 3))])", True, "float64", None),
    ("verts.reshape(-1)", True, "float64", None),
    ("verts.T", True, "float64", None),
    ("data.astype(np.float32)", True, "float32", None),
    ("wp.zeros(n)", False, "float32", FLOAT32),
    ("wp.zeros(n, dtype=wp.float64)", False, "float64", Scalar("float64")),
    ("wp.empty(n, wp.vec3)", False, "float32", Vector(3, FLOAT32)),
    ("wp.ones(n, dtype=wp.mat33d)", False, "float64", Matrix(3, 3, Scalar("float64"))),
    ("wp.zeros(n, dtype=int)", False, "int32", Scalar("int32")),
    ("wp.full(n, 1.0)", False, "float32", FLOAT32),
    ("wp.full(n, 1)", False, "int32", Scalar("int32")),
    ("wp.array(verts)", False, "float64", Scalar("float64")),
    ("wp.array(typed)", False, "float32", FLOAT32),
    ("wp.array([0.5, 1.5])", False, "float64", Scalar("float64")),
    ("wp.array(verts, dtype=wp.vec3)", False, "float32", Vector(3, FLOAT32)),
    ("wp.array(data, dtype=float)", False, "float32", FLOAT32),
    ("wp.from_numpy(verts)", False, "float64", None),
    ("wp.from_numpy(data, dtype=wp.vec3)", False, "float32", Vector(3, FLOAT32)),
    ("wp.zeros_like(wp.zeros(n, dtype=wp.float16))", False, "float16", Scalar("float16")),
    ("wp.clone(wp.array(verts))", False, "float64", Scalar("float64")),
    ("wp.zeros(n).numpy()", True, "float32", None),
    ("wp.zeros(n, dtype=wp.vec3).to('cpu')", False, "float32", Vector(3, FLOAT32)),
]


@pytest.mark.parametrize(("expr", "interop", "scalar", "exact"), CERTAIN, ids=[c[0] for c in CERTAIN])
def test_certain_types(expr: str, interop: bool, scalar: str, exact: object) -> None:
    found = _type(expr)
    assert found is not None
    assert (found.interop, found.scalar.name, found.dtype) == (interop, scalar, exact)


UNCERTAIN = [
    "data",  # a parameter
    "mesh.vertices",  # another object's attribute
    "twice",  # assigned twice
    "np.arange(n)",  # int32 or int64 by platform
    "np.array([1, 2, 3])",  # the same
    "np.zeros(n, dtype=int)",  # the same
    "np.full(n, 1)",  # the same
    "np.array([np.float32(1.0)])",  # NumPy scalars keep their own type
    "np.linspace(np.float32(0.0), np.float32(1.0), n)",  # float32 under NumPy 2
    "np.zeros(n) * 2.0",  # arithmetic
    "np.zeros(n, dtype=data.dtype)",
    "wp.zeros(n, dtype=np.float32)",  # Warp refuses this dtype when allocating
    "wp.array(data)",
    "wp.zeros(n, dtype=data.dtype)",
    "wp.full(n, data)",
    "np.linspace(0.0, 1.0, n, retstep=True)",  # a tuple
    "wp.zeros(n).view(wp.int32)",
]


@pytest.mark.parametrize("expr", UNCERTAIN)
def test_uncertain_types_are_none(expr: str) -> None:
    assert _type(expr) is None


def test_what_numpy_and_warp_really_make() -> None:
    """The defaults the module relies on, as the installed NumPy and Warp make them."""
    import warp as wp

    wp.config.log_level = wp.LOG_WARNING
    n = 4
    assert np.zeros(n).dtype == np.float64 and np.linspace(0, 1, n).dtype == np.float64
    assert np.array([[0.0, 1, 2]]).dtype == np.float64 and np.random.rand(n).dtype == np.float64
    assert np.full(n, 0.5).dtype == np.float64 and np.eye(3).dtype == np.float64
    assert np.arange(0.0, 1.0, 0.25).dtype == np.float64 and np.zeros(n, dtype=float).dtype == np.float64
    assert np.linspace(np.float32(0.0), np.float32(1.0), n).dtype == np.float32
    assert wp.zeros(n, device="cpu").dtype is wp.float32
    assert wp.full(n, 1.0, device="cpu").dtype is wp.float32 and wp.full(n, 1, device="cpu").dtype is wp.int32
    assert wp.array(np.zeros((n, 3)), device="cpu").dtype is wp.float64
    assert wp.array(np.zeros((n, 3), dtype=np.float32), device="cpu").dtype is wp.float32
    assert wp.array([0.5, 1.5], device="cpu").dtype is wp.float64
    from warp._src.types import types_equal

    # vectors of the trailing axis: the scalar is certain, the exact type depends on the shape
    assert types_equal(wp.from_numpy(np.zeros((n, 3)), device="cpu").dtype, wp.vec3d)
    assert wp.zeros(n, device="cpu").numpy().dtype == np.float32


CLASSES = """
import numpy as np
import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


class Base:
    def __init__(self, n):
        self.x = wp.zeros(n, dtype=wp.float64)
        self.y = wp.zeros(n, dtype=wp.float64)
        self.z = np.zeros(n)
        self.w, self.u = np.zeros(n), np.zeros(n)

    def grow(self, n):
        self.y = wp.zeros(n, dtype=wp.vec3)


class Child(Base):
    def step(self, n):
        wp.launch(k, dim=n, inputs=[self.x, self.y, self.z, self.w, self.q])

    @staticmethod
    def other(self):
        wp.launch(k, dim=1, inputs=[self.x])


class Unrelated:
    def __init__(self, n):
        self.x = wp.zeros(n, dtype=wp.vec3)
        self.q = wp.zeros(n)


class Editor:
    def clear(self, sim):
        sim.z = None
"""


def test_self_attributes() -> None:
    model = build_model(CLASSES)
    host = HostDtypes(model.tree, model.imports, model.resolver)
    step, static = model.launches
    inputs = step.argument_list("inputs")
    assert inputs is not None
    found = [host.array_type(arg, step.scope, step.local_aliases) for arg in inputs]
    # x: the base class's; y: two types; z: stored from outside; w: unpacked; q: only another class's
    assert [f.scalar.name if f else None for f in found] == ["float64", None, None, None, None]
    first = found[0]
    assert first is not None and isinstance(first.origin, ast.Call)
    assert (
        first.origin.lineno
        == CLASSES.splitlines().index("        self.x = wp.zeros(n, dtype=wp.float64)") + 1
    )
    static_inputs = static.argument_list("inputs")
    assert static_inputs is not None
    assert host.array_type(static_inputs[0], static.scope, static.local_aliases) is None


def test_type_text() -> None:
    assert [type_text(t) for t in (FLOAT32, Vector(3, FLOAT32), Matrix(3, 3, Scalar("float64")))] == [
        "float32",
        "vec3",
        "mat33d",
    ]
    assert type_text(Vector(5, FLOAT32)) == "vector(length=5, dtype=float32)"


NESTED_STORES = """
import numpy as np
import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


class Sim:
    def __init__(self, n):
        self.a = wp.zeros(n, dtype=wp.float64)
        self.b = wp.zeros(n, dtype=wp.float64)
        self.c = wp.zeros(n, dtype=wp.float64)
        self.d = wp.zeros(n, dtype=wp.float64)
        self.e = wp.zeros(n, dtype=wp.float64)

        def later(other):
            other.b = None
            self.c = np.zeros(n)

    def step(self, n):
        wp.launch(k, dim=n, inputs=[self.a, self.b, self.c, self.d, self.e])


class Other:
    def __init__(self, n):
        self.a = np.zeros(n)


def helper(sim):
    sim.a = None
    setattr(sim, "e", None)


setattr(Sim, "d", None)
"""


def test_stores_in_nested_functions_top_level_functions_and_setattr() -> None:
    model = build_model(NESTED_STORES)
    host = HostDtypes(model.tree, model.imports, model.resolver)
    (step,) = model.launches
    inputs = step.argument_list("inputs")
    assert inputs is not None
    found = [host.array_type(arg, step.scope, step.local_aliases) for arg in inputs]
    # a: stores in top-level functions and in unrelated classes do not count; b: stored on another
    # object in a nested function; c: the method's nested function stores `self.c` too (another type);
    # d: set from module-level code; e: setattr in a top-level function is not followed
    assert [f.scalar.name if f else None for f in found] == ["float64", None, None, None, "float64"]
    # the stores of a class are worked out only for the classes asked about (Other is not related)
    facts = host._facts
    assert facts is not None
    (sim, other) = [n for n in model.tree.body if isinstance(n, ast.ClassDef)]
    assert id(sim) in facts._stores and id(other) not in facts._stores


def _launch_inputs(source: str) -> list[HostArrayType | None]:
    model = build_model(source)
    host = HostDtypes(model.tree, model.imports, model.resolver, model.index)
    (site,) = model.launches
    inputs = site.argument_list("inputs")
    assert inputs is not None
    return [host.array_type(arg, site.scope, site.local_aliases) for arg in inputs]


TWICE_IN_ONE_METHOD = """
import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


class Sim:
    def __init__(self, n, flag):
        if flag:
            self.x = wp.zeros(n, dtype=wp.float64)
        self.x = wp.zeros(2 * n, dtype=wp.float64)

    def step(self, n):
        wp.launch(k, dim=n, inputs=[self.x])
"""


def test_the_origin_of_an_attribute_assigned_twice_is_the_first_in_walk_order() -> None:
    # `ast.walk` is breadth first: the assignment directly in the body comes before the one in the `if`
    (found,) = _launch_inputs(TWICE_IN_ONE_METHOD)
    assert found is not None and found.scalar.name == "float64"
    assert isinstance(found.origin, ast.Call)
    assert (
        found.origin.lineno
        == TWICE_IN_ONE_METHOD.splitlines().index("        self.x = wp.zeros(2 * n, dtype=wp.float64)") + 1
    )


NESTED_SCOPES = """
import numpy as np
import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


class Sim:
    def __init__(self, n):
        data = np.zeros(n)
        twice = np.zeros(n)
        twice = np.zeros(n, dtype=np.float32)

        def later():
            data = None
            return data

        squares = [data for data in range(3)]
        self.a = wp.array(data)
        self.b = wp.array(twice)
        self.c = squares

    def step(self, n):
        wp.launch(k, dim=n, inputs=[self.a, self.b])
"""


def test_names_bound_in_nested_scopes_are_not_the_methods() -> None:
    # `data` is bound once in `__init__` (the nested function's and the comprehension's are their own);
    # `twice` twice
    found = _launch_inputs(NESTED_SCOPES)
    assert [f.scalar.name if f else None for f in found] == ["float64", None]


STORES_OUTSIDE_BODIES = """
import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


def helper(marks=[0 for Sim.b in range(1)]):
    pass


class Sim:
    def __init__(self, n):
        self.a = wp.zeros(n, dtype=wp.float64)
        self.b = wp.zeros(n, dtype=wp.float64)

    def reset(self, marks=[0 for self.a in range(1)]):
        pass

    def step(self, n):
        wp.launch(k, dim=n, inputs=[self.a, self.b])
"""


def test_stores_in_comprehension_targets_of_defaults() -> None:
    # a: `reset`'s default stores it (another way than `self.a = value`); b: stored in a top-level
    # function's default, not followed
    found = _launch_inputs(STORES_OUTSIDE_BODIES)
    assert [f.scalar.name if f else None for f in found] == [None, "float64"]


CLASSES_IN_A_FUNCTION = """
import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


def make(n):
    class Base:
        def __init__(self, n):
            self.x = wp.zeros(n, dtype=wp.float64)

    class Sim(Base):
        def step(self, n):
            wp.launch(k, dim=n, inputs=[self.x, self.y])

    if n:
        class Other(Sim):
            def grow(self, n):
                self.y = wp.zeros(n, dtype=wp.float16)

    return Sim(n)
"""


def test_classes_below_the_top_level_and_their_bases() -> None:
    found = _launch_inputs(CLASSES_IN_A_FUNCTION)
    assert [f.scalar.name if f else None for f in found] == ["float64", "float16"]


def test_a_class_s_stores_do_not_walk_the_whole_file(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether some comprehension may store an attribute (`_expression_stores`, a walk of the whole file)
    only spares walking the methods' signatures: a class's stores are read without asking it."""
    import warp_harness.model.host_dtypes as host_dtypes

    source = """
import warp as wp


class Sim:
    def __init__(self, n: int = 4):
        self.x = wp.zeros(n, dtype=wp.float64)
"""
    model = build_model(source)
    (cls,) = [s for s in model.tree.body if isinstance(s, ast.ClassDef)]

    def refused(index):  # type: ignore[no-untyped-def]
        raise AssertionError("the whole file walked")

    monkeypatch.setattr(host_dtypes, "_expression_stores", refused)
    values, opaque = host_dtypes._class_facts(model.tree, model.index).stores(cls)
    assert set(values) == {"x"} and not opaque
