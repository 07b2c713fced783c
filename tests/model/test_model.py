from __future__ import annotations

import ast

from warp_harness.model.launch_dims import dim_rank
from warp_harness.model.module import build_model
from warp_harness.model.types import FLOAT32, INT32, UNKNOWN, Array, Matrix, Scalar, Struct, Tile, Vector

SOURCE = """
import warp
import warp as wp
from warp import kernel, func

TILE = wp.constant(8)
WIDE = TILE * 4
vec5 = wp.types.vector(length=5, dtype=float)
TWICE = 1
TWICE = 2

@wp.struct
class Particle:
    pos: wp.vec3
    mass: float

@kernel
def k(a: wp.array(dtype=float), b: wp.array(dtype=wp.vec3, ndim=2), c: wp.array2d(dtype=wp.float16),
      d: wp.array3d[wp.mat33d], e: warp.array(dtype=vec5), p: wp.array(dtype=Particle), s: int,
      h: wp.float16):
    i, j = wp.tid()
    x = a[i]
    v = b[i, j]
    row = b[i]
    m = d[i, j, 0]
    q = p[i].mass
    t = wp.tile_load(a, shape=(WIDE,))
    z = wp.tile_zeros(shape=(TILE, WIDE), dtype=wp.float64)
    f = float(s)
    w = v.y * 2.0
    for n in range(4):
        g = n

@func
def helper(x: float) -> float:
    return x
"""


def test_kernels_params_and_every_annotation_spelling() -> None:
    model = build_model(SOURCE, "m.py")
    assert [(k.name, k.kind) for k in model.kernels] == [("k", "kernel"), ("helper", "func")]
    types = {p.name: p.type for p in model.kernels[0].params}
    assert types["a"] == Array(FLOAT32, 1)
    assert types["b"] == Array(Vector(3, FLOAT32), 2)
    assert types["c"] == Array(Scalar("float16"), 2)
    assert types["d"] == Array(Matrix(3, 3, Scalar("float64")), 3)
    assert types["e"] == Array(Vector(5, FLOAT32), 1)
    assert types["p"] == Array(Struct("Particle"), 1)
    assert types["s"] == INT32 and types["h"] == Scalar("float16")


def test_rank_in_the_subscript_form() -> None:
    source = (
        "from typing import Literal\nimport warp as wp\n\n@wp.kernel\n"
        "def k(a: wp.array[float, Literal[2]], b: wp.array[wp.vec3, 3], c: wp.array[float, Literal[n]]):\n"
        "    pass\n"
    )
    types = {p.name: p.type for p in build_model(source, "m.py").kernels[0].params}
    assert types["a"] == Array(FLOAT32, 2) and types["b"] == Array(Vector(3, FLOAT32), 3)
    assert types["c"] == UNKNOWN


def test_constants_are_folded_and_reassigned_names_dropped() -> None:
    model = build_model(SOURCE, "m.py")
    assert model.constants.values["TILE"] == 8 and model.constants.values["WIDE"] == 32
    assert "TILE" in model.constants.warp_constants
    assert "TWICE" not in model.constants.values


def test_constants_rebound_in_a_block_or_by_a_function_are_dropped() -> None:
    """Warp reads a global's value when it compiles: a name some block or `global` statement may rebind has no
    value the checker can trust (it would pick the wrong branch of `if wp.static(FLAG):`)."""
    source = """
import os
import warp as wp

FIXED = wp.constant(3)
USE_TILES = True
if os.environ.get("NO_TILES"):
    USE_TILES = False
DEBUG = False
FALLBACK = 1
try:
    import scipy
except ImportError:
    FALLBACK = 2


def enable_debug():
    global DEBUG
    DEBUG = True
"""
    assert build_model(source, "m.py").constants.values == {"FIXED": 3}


def test_inference_over_the_body() -> None:
    model = build_model(SOURCE, "m.py")
    variables = model.types(model.kernels[0]).variables
    assert variables["i"] == INT32 and variables["j"] == INT32
    assert variables["x"] == FLOAT32
    assert variables["v"] == Vector(3, FLOAT32)
    assert variables["row"] == Array(Vector(3, FLOAT32), 1)
    assert variables["m"] == Matrix(3, 3, Scalar("float64"))
    assert variables["q"] == FLOAT32
    assert variables["t"] == Tile(FLOAT32, (32,))
    assert variables["z"] == Tile(Scalar("float64"), (8, 32))
    assert variables["f"] == FLOAT32 and variables["w"] == FLOAT32 and variables["g"] == INT32
    assert model.types(model.kernels[0]).tid_vars == {"i": 0, "j": 1}


def test_launch_sites() -> None:
    source = (
        SOURCE
        + """
def run(n):
    a = wp.zeros(n, dtype=float)
    shape = (4, 8)
    wp.launch(k, dim=n + 1, inputs=[a, None], outputs=[])
    wp.launch(kernel=k, dim=shape, inputs=args)
    warp.launch_tiled(k, [2, 3], [a], block_dim=64)
"""
    )
    model = build_model(source, "m.py")
    first, second, third = model.launches
    assert first.kernel_name == "k" and ast.unparse(first.dim) == "n + 1"
    assert dim_rank(first, model.constants.values, model.imports) == 1
    assert len(first.argument_list("inputs") or []) == 2 and first.argument_list("outputs") == []
    assert "a" in first.host_arrays and ast.unparse(first.host_arrays["a"].extent) == "n"
    assert dim_rank(second, model.constants.values, model.imports) == 2
    assert second.argument_list("inputs") is None
    assert third.tiled and third.fold(third.block_dim, model.constants.values, model.imports) == 64


def test_module_without_warp_has_no_kernels() -> None:
    model = build_model("def kernel(x):\n    return x\n@kernel\ndef f(): pass\n", "plain.py")
    assert model.kernels == [] and model.launches == []


def test_launches_expected_to_fail_are_left_out() -> None:
    source = (
        SOURCE
        + """
def test_errors(self, n):
    with self.assertRaisesRegex(RuntimeError, "passed 1 arguments"):
        wp.launch(k, dim=n, inputs=[None])
    with pytest.raises(ValueError):
        wp.launch(k, dim=n, inputs=[None])
    wp.launch(k, dim=n, inputs=[None])
"""
    )
    model = build_model(source, "m.py")
    lines = source.splitlines()
    last = len(lines) - lines[::-1].index("    wp.launch(k, dim=n, inputs=[None])")
    assert [site.node.lineno for site in model.launches] == [last]


LOOKUPS = """
import warp as wp


@wp.func
def f(x: float) -> float:
    return x


@wp.kernel
def k(a: wp.array(dtype=float)):
    a[0] = f(a[0])


@wp.kernel
def twice(a: wp.array(dtype=float)):
    pass


@wp.kernel
def twice(a: wp.array(dtype=float)):
    pass


def run(a):
    wp.launch(k, dim=1, inputs=[a])
    wp.launch(twice, dim=1, inputs=[a])
    wp.launch(k, dim=2, inputs=[a])
"""


def test_lookups_by_name_see_the_whole_file_also_from_a_restricted_model() -> None:
    model = build_model(LOOKUPS)
    k = model.kernel_named("k")
    assert k is not None and model.kernel_named("twice") is None and model.kernel_named("nothing") is None
    assert list(model.funcs) == ["f"]
    assert [s.node.lineno for s in model.launches_of(k)] == [26, 28]
    model.launches_of(k).clear()  # a caller's copy: the model's answer does not change
    assert len(model.launches_of(k)) == 2
    restricted = model.restricted([k], [])
    assert restricted.kernel_named("k") is k and list(restricted.funcs) == ["f"]
    assert [s.node.lineno for s in restricted.launches_of(k)] == [26, 28]


SCOPES = """
import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    pass


def run():
    n = 4
    if n:
        p = n + 1
    b = c = wp.zeros(n, dtype=float)
    wp.launch(k, dim=(n, p), inputs=[b])


def nested():
    x = 5

    def inner():
        y = 2

    y = x + 1
    wp.launch(k, dim=y, inputs=[x])
"""


def test_scope_facts_of_a_function_with_and_without_nested_scopes() -> None:
    first, second = build_model(SCOPES).launches
    # single assignments, the last statement first (the order their values are folded in)
    assert list(first.local_aliases) == ["b", "c", "p", "n"]
    assert first.local_values == {"n": 4} and set(first.host_arrays) == {"b", "c"}
    # `y` of the nested function is not this scope's
    assert list(second.local_aliases) == ["y", "x"] and second.local_values == {"x": 5}


def test_launches_are_found_under_any_spelling_of_launch() -> None:
    """`build_model` looks for launches only in a text that may spell ``launch``: an alias spells it where
    it is imported, and a name in other letters (NFKC-normalised by Python) is still looked for."""
    body = "@wp.kernel\ndef k(a: wp.array(dtype=float)):\n    a[0] = 1.0\n\n"
    aliased = "import warp as wp\nfrom warp import launch as go\n\n" + body + "go(k, dim=1, inputs=[None])\n"
    assert [site.kernel_name for site in build_model(aliased).launches] == ["k"]
    other_letters = "import warp as wp\n\n" + body + "wp.\uff4caunch(k, dim=1, inputs=[None])\n"
    assert "launch" not in other_letters
    assert [site.kernel_name for site in build_model(other_letters).launches] == ["k"]
    assert build_model("import warp as wp\n\n" + body).launches == []


def test_equal_annotations_resolve_to_one_shared_type() -> None:
    """A large module repeats a few parameter types: each spelling resolved is shared, not one object per
    parameter (newton's steel solver held 2,400 equal arrays and as many equal scalars through its check)."""
    model = build_model(
        "import warp as wp\n\n"
        "@wp.func\ndef f(a: wp.array(dtype=float), x: float, b: wp.array[float]):\n    return x\n\n"
        "@wp.func\ndef g(a: wp.array(dtype=float), x: float, b: wp.array[float]):\n    return x\n"
    )
    f, g = model.kernels
    assert [p.type for p in f.params] == [Array(FLOAT32), FLOAT32, Array(FLOAT32)]
    for one, other in zip(f.params, g.params, strict=True):
        assert one.type is other.type
    assert f.params[0].type is f.params[2].type


def test_a_warp_name_is_remembered_under_its_node() -> None:
    """`ImportMap.warp_name`'s answers are kept under the node itself (an id and a pair per node were 0.9
    MiB of a large check's peak), None among them."""
    model = build_model("import warp as wp\nimport math\n\nx = wp.float32\ny = math.pi\n")
    first, second = (stmt.value for stmt in model.tree.body[2:])  # type: ignore[attr-defined]
    imports = model.imports
    assert imports.warp_name(first) == "float32"
    assert imports.warp_name(second) is None
    assert imports._warp_names == {first: "float32", second: None}
    assert imports.warp_name(first) == "float32"
