"""What of a Warp function Warp compiles (`warp_harness.model.static_branches`): the branch of a static ``if``
it drops, branches it may drop, abstract ``@wp.func`` bases; and that every rule reads that view
(`index.body_index`), asserted against Warp's own verdict."""

from __future__ import annotations

import ast

import pytest
from checker_helpers import Analyse, rules_of
from warp_oracle import warp_error

from warp_harness.builtins import load_table
from warp_harness.config import Settings
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.model.constants import fold_static
from warp_harness.model.imports import ImportMap
from warp_harness.model.index import body_index, full_body_index, possible_body_index
from warp_harness.model.kernel import KernelDef
from warp_harness.model.module import build_model
from warp_harness.rules.base import walk_body

# a builtin Warp 1.19 does not have (newton guards its calls of newer tile builtins by such flags)
_NEWER = "wp.tile_matmul_transpose_update(acc, a, b, alpha=-1.0)"


def _kernel(source: str, name: str) -> KernelDef:
    model = build_model(source)
    (kernel,) = [k for k in model.kernels if k.name == name]
    return kernel


def _calls(kernel: KernelDef) -> list[str]:
    return [ast.unparse(c.func) for c in body_index(kernel.node).of(ast.Call)]


CHOLESKY = f"""
import warp as wp

BLOCK = wp.constant(16)
USE_TRANSPOSE_UPDATE = False


@wp.kernel
def blocked_cholesky(a: wp.array2d(dtype=float), l: wp.array2d(dtype=float)):
    i = wp.tid()
    acc = wp.tile_load(a, shape=(BLOCK, BLOCK), offset=(0, 0))
    b = wp.tile_load(l, shape=(BLOCK, BLOCK), offset=(0, 0))
    if wp.static(USE_TRANSPOSE_UPDATE):
        {_NEWER.replace("a, b", "b, b")}
    else:
        bt = wp.tile_transpose(b)
        wp.tile_matmul(b, bt, acc, alpha=-1.0)
    wp.tile_cholesky_inplace(acc)
    wp.tile_store(l, acc, offset=(0, 0))
"""


def test_the_untaken_branch_of_a_folded_static_if_is_left_out_of_the_rules_view() -> None:
    kernel = _kernel(CHOLESKY, "blocked_cholesky")
    (branch,) = kernel.static_branches
    assert branch.taken is False
    calls = _calls(kernel)
    assert "wp.tile_matmul" in calls and "wp.tile_transpose" in calls
    assert "wp.tile_matmul_transpose_update" not in calls
    assert "wp.tile_matmul_transpose_update" not in [
        ast.unparse(n.func) for n in walk_body(kernel.node) if isinstance(n, ast.Call)
    ]
    # the whole body stays available (the module's index, the incremental analysis)
    whole = [ast.unparse(c.func) for c in full_body_index(kernel.node).of(ast.Call)]
    assert "wp.tile_matmul_transpose_update" in whole
    possible = [ast.unparse(c.func) for c in possible_body_index(kernel.node).of(ast.Call)]
    assert "wp.tile_matmul_transpose_update" not in possible and "wp.tile_matmul" in possible
    # statement walkers ask the kernel
    (static_if,) = [s for s in kernel.node.body if isinstance(s, ast.If)]
    assert kernel.live(static_if.body) == [] and kernel.live(static_if.orelse) == static_if.orelse


def test_the_taken_branch_is_kept_and_the_else_left_out() -> None:
    kernel = _kernel(
        CHOLESKY.replace("USE_TRANSPOSE_UPDATE = False", "USE_TRANSPOSE_UPDATE = True"), "blocked_cholesky"
    )
    assert [b.taken for b in kernel.static_branches] == [True]
    calls = _calls(kernel)
    assert "wp.tile_matmul_transpose_update" in calls and "wp.tile_transpose" not in calls


@pytest.mark.slow
def test_warp_compiles_only_the_taken_branch_and_the_checker_agrees(analyse: Analyse) -> None:
    """Warp accepts the kernel whose untaken branch calls a builtin it does not have; taken, it rejects it."""
    assert warp_error(CHOLESKY) is None
    assert analyse(CHOLESKY) == []
    taken = CHOLESKY.replace("USE_TRANSPOSE_UPDATE = False", "USE_TRANSPOSE_UPDATE = True")
    error = warp_error(taken)
    assert error is not None and "tile_matmul_transpose_update" in error
    assert "WH004" in rules_of(analyse(taken))


# newton's kamino factorisations: the flag is computed at import time (`_has_warp_builtin(...)`)
IMPORT_TIME_FLAG = f"""
import warp as wp
from warp._src.context import builtin_functions

HAS_TILE_MATMUL_TRANSPOSE_UPDATE = "tile_matmul_transpose_update" in builtin_functions


def make_llt_blocked_factorize_kernel(block_size: int):
    @wp.kernel
    def llt_blocked_factorize(a: wp.array2d(dtype=float), l: wp.array2d(dtype=float)):
        acc = wp.tile_load(a, shape=(block_size, block_size), offset=(0, 0))
        b = wp.tile_load(l, shape=(block_size, block_size), offset=(0, 0))
        if wp.static(HAS_TILE_MATMUL_TRANSPOSE_UPDATE):
            {_NEWER.replace("a, b", "b, b")}
        else:
            bt = wp.tile_transpose(b)
            wp.tile_matmul(b, bt, acc, alpha=-1.0)
            bad = wp.tile_matmul_left_transpose_update(acc, b, b)
        wp.tile_store(l, acc, offset=(0, 0))

    return llt_blocked_factorize


llt_blocked_factorize_16 = make_llt_blocked_factorize_kernel(16)
"""


def test_an_undecided_static_if_hides_both_branches() -> None:
    kernel = _kernel(IMPORT_TIME_FLAG, "llt_blocked_factorize")
    assert [b.taken for b in kernel.static_branches] == [None]
    calls = _calls(kernel)
    assert "wp.tile_load" in calls and "wp.tile_store" in calls
    assert not {
        "wp.tile_matmul_transpose_update",
        "wp.tile_matmul",
        "wp.tile_matmul_left_transpose_update",
    } & set(calls)
    # for rules about silent bugs and performance: either branch may run
    possible = {ast.unparse(c.func) for c in possible_body_index(kernel.node).of(ast.Call)}
    assert {
        "wp.tile_matmul_transpose_update",
        "wp.tile_matmul",
        "wp.tile_matmul_left_transpose_update",
    } <= possible


@pytest.mark.slow
def test_undecided_static_if_no_compile_time_error_in_either_branch(analyse: Analyse) -> None:
    """Warp takes the `else` under 1.19 (no such builtin), so the `if` branch is never built; the checker
    cannot know which branch is built and reports neither (both branches call a builtin 1.19 lacks, the
    second only to show the `else` is hidden as well; Warp rejects that one, which it builds)."""
    accepted = IMPORT_TIME_FLAG.replace(
        "            bad = wp.tile_matmul_left_transpose_update(acc, b, b)\n", ""
    )
    assert warp_error(accepted) is None
    assert analyse(accepted, select=["WH002", "WH003", "WH004", "WH009", "WH014"]) == []
    assert analyse(IMPORT_TIME_FLAG, select=["WH004"]) == []
    # the same code outside the static `if` is reported
    plain = accepted.replace("if wp.static(HAS_TILE_MATMUL_TRANSPOSE_UPDATE):", "if block_size > 8:")
    assert rules_of(analyse(plain, select=["WH004"])) == ["WH004"]
    error = warp_error(plain)
    assert error is not None and "tile_matmul_transpose_update" in error


FACTORY = """
import warp as wp

SUBSTEPS = 4


def make_integrator(use_damping: bool):
    order = 2
    damping_scale = 0.5 * order

    @wp.kernel
    def integrate(q: wp.array(dtype=wp.vec3), qd: wp.array(dtype=wp.vec3), dt: float):
        i = wp.tid()
        if wp.static(order > 1 and SUBSTEPS == 4):
            qd[i] = qd[i] * wp.static(damping_scale)
        if wp.static(order == 1):
            qd[i] = wp.no_such_builtin(qd[i])
        if wp.static(use_damping):
            qd[i] = qd[i] * 0.99
        q[i] = q[i] + qd[i] * dt

    return integrate
"""


def test_closure_values_of_a_kernel_factory_fold_and_its_parameters_do_not() -> None:
    kernel = _kernel(FACTORY, "integrate")
    assert [b.taken for b in kernel.static_branches] == [True, False, None]
    calls = _calls(kernel)
    assert "wp.no_such_builtin" not in calls and "wp.static" in calls


def test_a_factory_parameter_shadows_a_module_constant_of_the_same_name() -> None:
    source = """
import warp as wp

FAST = True


def make(FAST: bool):
    @wp.kernel
    def k(x: wp.array(dtype=float)):
        i = wp.tid()
        if wp.static(FAST):
            x[i] = 1.0

    return k
"""
    assert [b.taken for b in _kernel(source, "k").static_branches] == [None]


def test_a_static_expression_on_a_local_of_the_kernel_is_undecided() -> None:
    """Warp evaluates `wp.static` with the function's constant locals too (the variable of a loop it unrolls),
    which shadow a module constant of the same name."""
    source = """
import warp as wp

k = 0


@wp.kernel
def stencil(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    for k in range(wp.static(3)):
        if wp.static(k == 0):
            y[i] = x[i]
        else:
            y[i] = y[i] + x[i + k]
"""
    assert [b.taken for b in _kernel(source, "stencil").static_branches] == [None]
    assert warp_error(source) is None


SHAPES = """
import warp as wp

ENABLE_SDF = False
N_AXES = 3


@wp.kernel
def contact(x: wp.array(dtype=wp.vec3), d: wp.array(dtype=float), sdf_mode: int):
    i = wp.tid()
    p = x[i]
    use_sdf = sdf_mode > 0
    if ENABLE_SDF:
        d[i] = wp.sdf_missing(p)
    if not ENABLE_SDF:
        d[i] = wp.length(p)
    if use_sdf:
        d[i] = d[i] * 2.0
    if wp.static(ENABLE_SDF) and d[i] > 0.0:
        d[i] = 0.0
    for k in range(wp.static(N_AXES)):
        d[i] = d[i] + p[k]
    s = wp.sdf_missing(p) if wp.static(ENABLE_SDF) else wp.length(p)
"""


def test_which_conditions_warp_folds() -> None:
    """A module global or literal alone folds (Warp captures it as a constant), `not FLAG`, a local and
    `wp.static(A) and b` do not (both branches compiled); `range(wp.static(N))` is untouched."""
    kernel = _kernel(SHAPES, "contact")
    assert [(type(b.node).__name__, b.taken) for b in kernel.static_branches] == [
        ("If", False),
        ("IfExp", False),
    ]
    calls = _calls(kernel)
    assert "wp.sdf_missing" not in calls
    assert calls.count("wp.length") == 2  # `if not ENABLE_SDF:` is compiled, and the `IfExp`'s else
    fors = body_index(kernel.node).of(ast.For)
    assert len(fors) == 1 and ast.unparse(fors[0].iter) == "range(wp.static(N_AXES))"


@pytest.mark.slow
def test_warp_folds_a_bare_global_and_a_static_conditional_expression() -> None:
    assert warp_error(SHAPES.replace("    if not ENABLE_SDF:\n        d[i] = wp.length(p)\n", "")) is None
    error = warp_error(
        SHAPES.replace(
            "if not ENABLE_SDF:\n        d[i] = wp.length(p)",
            "if not ENABLE_SDF:\n        d[i] = wp.sdf_missing(p)",
        )
    )
    assert error is not None and "sdf_missing" in error


ABSTRACT = '''
from typing import Any

import warp as wp


class DofMapper:
    @wp.func
    def dof_to_value(dof: Any):
        """Convert a degree of freedom to a value."""
        raise NotImplementedError

    @wp.func
    def value_to_dof(val: Any):
        raise NotImplementedError("subclasses map values")

    @wp.func
    def norm(val: float) -> float:
        ...


class IdentityMapper(DofMapper):
    @wp.func
    def dof_to_value(dof: Any):
        return dof


@wp.kernel
def gather(dofs: wp.array(dtype=float), values: wp.array(dtype=float)):
    i = wp.tid()
    values[i] = IdentityMapper.dof_to_value(dofs[i])
'''

NOT_ABSTRACT = """

@wp.func
def clamp_positive(x: float) -> float:
    if x < 0.0:
        raise NotImplementedError
    return x


@wp.kernel
def clamp(values: wp.array(dtype=float)):
    i = wp.tid()
    values[i] = clamp_positive(values[i])
"""


def test_abstract_funcs_are_marked_and_their_body_hidden() -> None:
    model = build_model(ABSTRACT + NOT_ABSTRACT)
    flags = [(k.name, k.abstract) for k in model.kernels]
    assert flags == [
        ("dof_to_value", True),
        ("value_to_dof", True),
        ("norm", True),
        ("dof_to_value", False),
        ("gather", False),
        ("clamp_positive", False),
        ("clamp", False),
    ]
    for kernel in model.kernels:
        if kernel.abstract:
            assert body_index(kernel.node).nodes == []
            assert kernel.live(kernel.node.body) == []
        else:
            assert body_index(kernel.node).nodes


@pytest.mark.slow
def test_abstract_funcs_are_not_reported_and_warp_accepts_them(analyse: Analyse) -> None:
    assert warp_error(ABSTRACT) is None
    assert analyse(ABSTRACT) == []
    # a `raise` in a function a kernel calls is still reported, and Warp rejects it
    both = ABSTRACT + NOT_ABSTRACT
    assert rules_of(analyse(both)) == ["WH002"]
    error = warp_error(both)
    assert error is not None and "clamp_positive" in error


def test_fold_static_evaluates_what_python_would() -> None:
    imports = ImportMap.from_tree(ast.parse("import warp as wp"))
    env = {"N": 4, "FAST": True, "EPS": 1e-3}
    cases = {
        "N > 3 and not FAST": False,
        "N > 3 or missing": True,
        "missing or N > 3": None,
        "FAST and N": 4,
        "1 < N <= 4": True,
        "N in (1, 2, 4)": True,
        "N if FAST else missing": 4,
        "wp.static(N * 2)": 8,
        "EPS < 0.01": True,
        "unknown == 3": None,
    }
    for text, expected in cases.items():
        assert fold_static(ast.parse(text, mode="eval").body, env, imports) == expected, text


def test_the_view_follows_the_constant_when_the_kernel_itself_is_unchanged() -> None:
    """The incremental analysis reuses the kernel's nodes when only the flag's line is edited; the view is
    set again for each model, so the records follow the flag."""
    table = load_table()
    analyser = IncrementalAnalyser(table)
    taken = CHOLESKY.replace("USE_TRANSPOSE_UPDATE = False", "USE_TRANSPOSE_UPDATE = True")
    for text, expected in [(CHOLESKY, []), (taken, ["WH004"]), (CHOLESKY, []), (taken, ["WH004"])]:
        records = analyser.analyse(text, "chol.py", Settings()).records
        assert [r.rule for r in records if r.rule == "WH004"] == expected


def test_an_elif_chain_of_static_conditions_keeps_only_the_branch_taken() -> None:
    source = """
import warp as wp

INTEGRATOR = wp.constant(1)  # 0: explicit Euler, 1: semi-implicit, 2: a scheme of a newer Warp


@wp.kernel
def integrate(x: wp.array(dtype=wp.vec3), v: wp.array(dtype=wp.vec3), f: wp.array(dtype=wp.vec3), dt: float):
    i = wp.tid()
    if wp.static(INTEGRATOR == 0):
        x[i] = x[i] + v[i] * dt
        v[i] = v[i] + f[i] * dt
    elif wp.static(INTEGRATOR == 1):
        v[i] = v[i] + f[i] * dt
        x[i] = x[i] + v[i] * dt
    else:
        x[i] = wp.integrate_newer(x[i], v[i], f[i], dt)
"""
    kernel = _kernel(source, "integrate")
    assert [b.taken for b in kernel.static_branches] == [False, True]
    assert "wp.integrate_newer" not in _calls(kernel)
    lines = [n.lineno for n in body_index(kernel.node).of(ast.Assign)]
    assert lines == [9, 14, 15]
    assert warp_error(source) is None
