"""A factory's kernel whose decorator takes values the factory computes (issue #31): mujoco-warp
4.0.0 builds 79 of its factory kernels as

    module_options = {"enable_backward": False}
    if deterministic:
        module_options["deterministic"] = wp.DeterministicMode.RUN_TO_RUN
        module_options["deterministic_max_records"] = nM

    @wp.kernel(module="unique", module_options=module_options)
    def kernel(...): ...

(https://github.com/google-deepmind/mujoco_warp/blob/main/mujoco_warp/_src/derivative.py,
`_qderiv_actuator_passive_actuation_sparse`). The capture records what the decorator got (the
kernel's own module's options, the keywords Warp keeps) and a digest of the factory's code around
the kernel (``recorder.closure_record``, ``identity.factory_digest``); the replay spells those values
as literals in the decorator while the saved factory gives the same digest and reads nothing but its
parameters, its locals and Warp (``hermetic_factory._recorded_keywords``); else WHD069 with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from daemon_helpers import recorded_closure

from warp_harness.daemon import hermetic_build

FACTORY = """
import warp as wp


def make(n: int, deterministic: bool = False):
    module_options = {"enable_backward": False}
    if deterministic:
        module_options["deterministic"] = wp.DeterministicMode.RUN_TO_RUN
        module_options["deterministic_max_records"] = n

    @wp.kernel(module="unique", module_options=module_options, grid_stride=False)
    def kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        wp.atomic_add(y, 0, x[i] * float(n))

    return kernel
"""


def _recorded(tmp_path: Path, deterministic: bool) -> dict[str, Any]:
    """The closure record the capture takes of ``make(3, deterministic)``'s kernel (the factory run
    here, as the user's command runs it under ``capture``)."""
    return recorded_closure(
        tmp_path, "mjfactory.py", FACTORY, f"mjfactory_{deterministic}", lambda m: m.make(3, deterministic)
    )


def _why(tmp_path: Path, text: str, record: dict[str, Any]) -> str | None:
    path = tmp_path / "mjfactory.py"
    path.write_text(text, encoding="utf-8")
    return hermetic_build.kernel_texts(text, str(path), "kernel", tmp_path, record)[0]


@pytest.mark.slow
def test_the_recorded_decorator_values_build_the_kernel_warp_built(tmp_path: Path) -> None:
    import warp as wp

    record = _recorded(tmp_path, deterministic=True)
    assert record["module_options"] == {
        "enable_backward": False,
        "deterministic": {"warp": "DeterministicMode.RUN_TO_RUN"},
        "deterministic_max_records": 3,
    }
    assert record["keywords"] == {"grid_stride": False}
    # the kernel's body edited (the factory's code around it is not): still built from the record
    edited = FACTORY.replace("x[i] * float(n)", "x[i] * float(n) + 1.0")
    assert _why(tmp_path, edited, record) is None
    path = tmp_path / "mjfactory.py"
    built = hermetic_build.build(edited, str(path), "kernel", tmp_path, None, record).kernel
    assert built.module.options["deterministic"] == wp.DeterministicMode.RUN_TO_RUN
    assert built.module.options["deterministic_max_records"] == 3
    assert built.module.options["enable_backward"] is False
    assert built.options["grid_stride"] is False
    x = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    y = wp.zeros(1, dtype=float, device="cpu")
    wp.launch(built, dim=4, inputs=[x, y], device="cpu")
    assert y.numpy().tolist() == [3.0 * (0 + 1 + 2 + 3) + 4.0]
    # the other closure of the same factory: its own options, none of the deterministic ones
    other = _recorded(tmp_path, deterministic=False)
    assert other["module_options"] == {"enable_backward": False}
    built = hermetic_build.build(FACTORY, str(path), "kernel", tmp_path, None, other).kernel
    assert built.module.options["deterministic"] == wp.DeterministicMode.NOT_GUARANTEED


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "record_edit", "reason"),
    [
        # the factory's code around the kernel edited: the edited factory may compute other options
        (
            ('{"enable_backward": False}', '{"enable_backward": True}'),
            None,
            "not the text the capture ran",
        ),
        # a capture taken before such records existed
        (None, ("factory", None), "recorded no value"),
        # the factory reads a module name: an edit there changes the options, not the factory's text
        (
            (
                'module_options["deterministic_max_records"] = n',
                'module_options["deterministic_max_records"] = MAX',
            ),
            "digest",
            "reads `MAX`",
        ),
        # a record that is not a literal or a `wp.Enum.MEMBER`: never spelled as code
        (None, ("module_options", {"deterministic": {"warp": "os.system.x"}}), "not a literal"),
        (None, ("module_options", {"deterministic": {"warp": "_src.x"}}), "not a literal"),
        (None, ("module_options", {"deterministic": [1.5]}), "not a literal"),
        # a computed keyword the capture does not record
        (("grid_stride=False)", "grid_stride=False, cuda_max_registers=n)"), "digest", "does not record"),
    ],
)
def test_what_the_record_cannot_give_is_refused(
    tmp_path: Path, edit: tuple[str, str] | None, record_edit: Any, reason: str
) -> None:
    from warp_harness.capture.identity import factory_digest

    record = _recorded(tmp_path, deterministic=True)
    text = FACTORY if edit is None else FACTORY.replace(*edit)
    assert edit is None or text != FACTORY
    if record_edit == "digest":  # the record such a text's capture would take
        import ast

        record["factory"] = factory_digest(ast.parse(text), record["qualname"])
    elif record_edit is not None:
        record[record_edit[0]] = record_edit[1]
    why = _why(tmp_path, text, record)
    assert why is not None and reason in why, why


def test_a_literal_module_options_dict_is_a_literal_keyword(tmp_path: Path) -> None:
    """mujoco-warp's `@wp.kernel(module="unique", module_options={"enable_mathdx_gemm": False})` needs
    no record: a dict of literals and Warp attributes is built as written."""
    text = """
import warp as wp


@wp.kernel(module="unique", module_options={"enable_mathdx_gemm": False, "mode": "release"})
def k(x: wp.array(dtype=float)):
    x[wp.tid()] = 1.0
"""
    path = tmp_path / "lit.py"
    path.write_text(text, encoding="utf-8")
    assert hermetic_build.kernel_texts(text, str(path), "k", tmp_path)[0] is None
    computed = text.replace('"release"', "str(1)")
    assert hermetic_build.kernel_texts(computed, str(path), "k", tmp_path)[0] is not None


# newton 1.8.0's `@wp.kernel(enable_backward=False, module="unique", module_options={"block_dim":
# _TILE_BLOCK_DIM})` inside a factory (https://github.com/newton-physics/newton/blob/main/newton/_src/
# actuators/joint_space_response.py): a name of the module, which Python reads from the module inside
# the factory as well, so the build takes the keyword as written and the name from the saved text
BLOCK_FACTORY = """
import warp as wp

_TILE_BLOCK_DIM = 64


def make(scale: float):
    @wp.kernel(enable_backward=False, module="unique", module_options={"block_dim": _TILE_BLOCK_DIM})
    def kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * scale

    return kernel
"""


@pytest.mark.slow
def test_a_decorator_naming_a_module_constant_is_built_from_the_saved_text(tmp_path: Path) -> None:
    import warp as wp

    path = tmp_path / "blockfactory.py"
    record = recorded_closure(tmp_path, path.name, BLOCK_FACTORY, "blockfactory", lambda m: m.make(2.0))
    edited = BLOCK_FACTORY.replace("_TILE_BLOCK_DIM = 64", "_TILE_BLOCK_DIM = 128")
    path.write_text(edited, encoding="utf-8")
    assert hermetic_build.kernel_texts(edited, str(path), "kernel", tmp_path, record)[0] is None
    built = hermetic_build.build(edited, str(path), "kernel", tmp_path, None, record).kernel
    assert built.module.options["block_dim"] == 128  # the saved text's value, as Python would read it
    x = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(built, dim=4, inputs=[x, y], device="cpu")
    assert y.numpy().tolist() == [0.0, 2.0, 4.0, 6.0]
    # the name bound by running code: not hermetic, with the reason
    # (`int('128')` is a constant now: a cast of a string literal, builtins only, a table's key's kind)
    runtime = edited.replace(
        "_TILE_BLOCK_DIM = 128", "_TILE_BLOCK_DIM = int(open('/dev/null').read() or 128)"
    )
    path.write_text(runtime, encoding="utf-8")
    why = hermetic_build.kernel_texts(runtime, str(path), "kernel", tmp_path, record)[0]
    assert why is not None and "`_TILE_BLOCK_DIM`" in why
    # the same name bound by the factory itself: the factory's value, which only a record could give
    local = edited.replace("def make(scale: float):\n", "def make(scale: float):\n    _TILE_BLOCK_DIM = 32\n")
    path.write_text(local, encoding="utf-8")
    why = hermetic_build.kernel_texts(local, str(path), "kernel", tmp_path, record)[0]
    assert why is not None and "not the text the capture ran" in why


# newton 1.8.0's kamino factories (https://github.com/newton-physics/newton/blob/main/newton/_src/solvers/
# kamino/_src/linalg/factorize/rcm_batch.py): `module = wp.get_module(module_name)`,
# `module.options.update({"enable_backward": False, ...})`, then `@wp.kernel(module=module)`
SHARED_MODULE = """
import warp as wp


def make(scale: float, name: str):
    module = wp.get_module(name)
    module.options.update({"enable_backward": False, "block_dim": 64})

    # a computed key, too (newton's `name=f"_svd_one_sided_jacobi_kernel_{rows}x{cols}"`)
    @wp.kernel(module=module, name=f"scaled_{name}")
    def kernel(x: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = x[i] * scale

    return kernel
"""


@pytest.mark.slow
def test_a_module_the_factory_makes_is_built_as_a_module_of_its_own_with_the_recorded_options(
    tmp_path: Path,
) -> None:
    import warp as wp

    path = tmp_path / "shared.py"
    name = f"shared_{abs(hash(tmp_path))}"
    record = recorded_closure(tmp_path, path.name, SHARED_MODULE, name, lambda m: m.make(3.0, f"{name}_k"))
    assert record["module_options"] == {"enable_backward": False, "block_dim": 64}
    assert hermetic_build.kernel_texts(SHARED_MODULE, str(path), "kernel", tmp_path, record)[0] is None
    built = hermetic_build.build(SHARED_MODULE, str(path), "kernel", tmp_path, None, record).kernel
    assert built.module.options["block_dim"] == 64 and built.module.options["enable_backward"] is False
    assert built.module.name != f"{name}_k"  # its own module, never the shared one
    x = wp.array(np.arange(4, dtype=np.float32), device="cpu")
    y = wp.zeros(4, dtype=float, device="cpu")
    wp.launch(built, dim=4, inputs=[x, y], device="cpu")
    assert y.numpy().tolist() == [0.0, 3.0, 6.0, 9.0]
    # the factory's options edited: the recorded ones may not be what it sets now
    edited = SHARED_MODULE.replace('"block_dim": 64', '"block_dim": 128')
    path.write_text(edited, encoding="utf-8")
    why = hermetic_build.kernel_texts(edited, str(path), "kernel", tmp_path, record)[0]
    assert why is not None and "not the text the capture ran" in why, why
