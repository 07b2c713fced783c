"""The workspace model's per-process caches of other modules' models and parses: bounded by count and by
source size (a large module does not keep the others' trees alive), the newest always kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.model import project
from warp_harness.model.project import ProjectIndex

KERNEL = """import warp as wp


@wp.kernel
def k(a: wp.array(dtype=float)):
    i = wp.tid()
    a[i] = 1.0
"""


def _index(root: Path, sizes: dict[str, int]) -> ProjectIndex:
    pkg = root / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name, padding in sizes.items():
        (pkg / f"{name}.py").write_text(KERNEL + "#" * padding + "\n")
    return ProjectIndex.for_paths([pkg])


def test_models_within_the_budget_are_kept(tmp_path: Path) -> None:
    index = _index(tmp_path, {"a": 0, "b": 0})
    a = index.model("pkg.a")
    assert index.model("pkg.b") is not None
    assert index.model("pkg.a") is a


def test_a_large_model_pushes_the_older_ones_out_and_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project, "MODEL_CACHE_BYTES", 1000)
    monkeypatch.setattr(project, "LOADED_CACHE_BYTES", 1000)
    index = _index(tmp_path, {"a": 0, "b": 0, "big": 5000})
    a = index.model("pkg.a")
    assert index.model("pkg.b") is not None
    assert index.model("pkg.a") is a  # two small ones fit
    index.view("<another analysis>")  # what the last analysis used is no longer held
    big = index.model("pkg.big")
    assert big is not None and [k.name for k in big.kernels] == ["k"]
    assert index.model("pkg.big") is big  # the newest stays, over the budget alone
    again = index.model("pkg.a")  # pushed out: built again, the same kernels
    assert again is not a
    assert again is not None and [k.name for k in again.kernels] == ["k"]


def test_the_count_bounds_the_models(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(project, "MODEL_CACHE_SIZE", 2)
    index = _index(tmp_path, {"a": 0, "b": 0, "c": 0})
    a = index.model("pkg.a")
    index.view("<another analysis>")
    index.model("pkg.b")
    index.model("pkg.c")
    assert index.model("pkg.a") is not a


def test_one_analysis_keeps_the_models_it_uses_over_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The launches of one file go round its targets (a, b, c, a, b, c): an LRU smaller than them would
    build every one again at every turn. Within one analysis (one `view`) they all stay; the next one
    trims them to the budget."""
    monkeypatch.setattr(project, "MODEL_CACHE_BYTES", 2500)
    monkeypatch.setattr(project, "LOADED_CACHE_BYTES", 2500)
    index = _index(tmp_path, {"a": 1000, "b": 1000, "c": 1000})
    parses = 0
    real_parse = project.parse_in_pieces

    def counting_parse(text: str) -> project.ParsedSource:
        nonlocal parses
        parses += 1
        return real_parse(text)

    monkeypatch.setattr(project, "parse_in_pieces", counting_parse)
    index.view("<one analysis>")
    first = {name: index.model(f"pkg.{name}") for name in "abc"}
    for _ in range(3):
        for name in "abc":
            assert index.model(f"pkg.{name}") is first[name]
    assert parses == 3
    index.view("<the next analysis>")
    index.model("pkg.c")
    assert sum(index.model(f"pkg.{name}") is first[name] for name in "ab") < 2  # trimmed to the budget


def test_a_checked_module_is_kept_only_when_it_defines_a_kernel(tmp_path: Path) -> None:
    """`keep` serves launches resolving into the checked module: one without a kernel (nothing can
    resolve into it) is not kept, so its tree is freed with its check."""
    from warp_harness.builtins import load_table
    from warp_harness.engine import check_bytes

    index = _index(tmp_path, {"kernels": 0})
    plain = tmp_path / "pkg" / "plain.py"
    plain.write_text("import warp as wp\n\n\ndef run(a, n):\n    wp.launch(k, dim=n, inputs=[a])\n")
    index.add_file(plain)
    table = load_table()
    for path in (tmp_path / "pkg" / "kernels.py", plain):
        data = path.read_bytes()
        check_bytes(data, str(path), builtins=table, project=index.view(str(path)))
    kernels = tmp_path / "pkg" / "kernels.py"
    kept = index.checked(str(kernels), kernels.read_bytes())
    assert kept is not None and kept[1] is not None
    assert [k.name for k in kept[1].kernels] == ["k"]
    assert index.model("pkg.kernels") is kept[1]  # a launch into it reuses the check's model
    assert index.checked(str(plain), plain.read_bytes()) is None


def test_a_large_file_s_view_makes_room_for_its_own_tree(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before a file is analysed, the other modules' models and parses are trimmed to the budgets less its
    size (its tree and model do not come on top of full caches), the oldest first; its own stay."""
    monkeypatch.setattr(project, "MODEL_CACHE_BYTES", 10_000)
    index = _index(tmp_path, {"a": 0, "b": 0, "big": 700})
    a, b, big = index.model("pkg.a"), index.model("pkg.b"), index.model("pkg.big")
    assert a is not None and b is not None and big is not None
    size = len(big.source.text)
    monkeypatch.setattr(project, "MODEL_CACHE_BYTES", size + len(b.source.text))
    index.view(str(tmp_path / "pkg" / "big.py"))
    assert index.model("pkg.big") is big
    assert index.model("pkg.b") is b
    assert index.model("pkg.a") is not a  # the oldest: dropped
