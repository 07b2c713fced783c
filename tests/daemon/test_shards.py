"""``ci --shard K/N`` and ``merge-reports``: a partition in which every file lands in exactly one
shard, the same on every machine; shards whose merged reports equal the full run's, byte for byte
(the dynamic tier's JSON modulo its timings, see ``_normalised``); and every way a set of shard
reports can be wrong refused with exit 2 and nothing written."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from warp_harness.cli import main
from warp_harness.daemon.shards import assign, parse_shard, plan, workspace_key
from warp_harness.engine import iter_python_files

REPO = Path(__file__).resolve().parents[2]
OUTPUTS = ("text", "json", "sarif", "junit")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "warp_harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
    )


def _report_flags(out: Path, stem: str) -> list[str]:
    """Every output this test compares, from one invocation: text as the main report, the rest
    as the --json/--sarif/--junit copies."""
    return [
        "--format",
        "text",
        "-o",
        str(out / f"{stem}.text"),
        *(a for fmt in OUTPUTS[1:] for a in (f"--{fmt}", str(out / f"{stem}.{fmt}"))),
    ]


def _outputs(out: Path, stem: str) -> dict[str, bytes]:
    return {fmt: (out / f"{stem}.{fmt}").read_bytes() for fmt in OUTPUTS}


def _last_line(stderr: str) -> str:
    return stderr.strip().splitlines()[-1]


def _full_and_merged(cwd: Path, out: Path, args: list[str], n: int) -> tuple[Any, Any, list[dict[str, Any]]]:
    """(full run, merge of n shards, the shards' `shard` objects): each a (exit code, outputs,
    summary line)."""
    full = _cli("ci", *args, *_report_flags(out, "full"), cwd=cwd)
    shard_files = []
    for k in range(1, n + 1):
        part = out / f"shard{k}.json"
        run = _cli("ci", *args, "--shard", f"{k}/{n}", "--format", "json", "-o", str(part), cwd=cwd)
        assert run.returncode in (0, 1), run.stderr
        assert f"(shard {k}/{n})" in _last_line(run.stderr)
        shard_files.append(str(part))
    merged = _cli("merge-reports", *shard_files, *_report_flags(out, "merged"), cwd=cwd)
    shards = [json.loads(Path(f).read_text(encoding="utf-8"))["shard"] for f in shard_files]
    return (
        (full.returncode, _outputs(out, "full"), _last_line(full.stderr)),
        (merged.returncode, _outputs(out, "merged"), _last_line(merged.stderr)),
        shards,
    )


def _assert_partitioned(shards: list[dict[str, Any]], full_json: bytes, n: int) -> None:
    """Every file of the full run in exactly one shard; the shards agree on the partition."""
    every = Counter(f for s in shards for f in s["files"])
    full_files = [e["path"] for e in json.loads(full_json)["files"]]
    assert sorted(every) == sorted(full_files) and set(every.values()) == {1}
    assert [s["index"] for s in shards] == list(range(1, n + 1))
    assert len({s["partition"] for s in shards}) == 1
    assert {s["total_files"] for s in shards} == {len(full_files)}


# --- the partition ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "shard"), [("1/1", (1, 1)), ("2/3", (2, 3)), (" 3 / 3 ", (3, 3)), ("4096/4096", (4096, 4096))]
)
def test_parse_shard_takes_k_of_n(text: str, shard: tuple[int, int]) -> None:
    parsed = parse_shard(text)
    assert (parsed.index, parsed.count) == shard


@pytest.mark.parametrize("text", ["0/3", "4/3", "3/0", "1/4097", "1", "a/b", "-1/2", "1/2/3", "", "1.0/2"])
def test_parse_shard_refuses_what_is_not_k_of_n(text: str) -> None:
    with pytest.raises(ValueError, match="--shard"):
        parse_shard(text)


@pytest.mark.parametrize("spec", ["0/3", "4/3", "x/2", "2"])
def test_ci_refuses_a_bad_shard_with_a_usage_error(spec: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["ci", ".", "--static-only", "--shard", spec])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "--shard" in err, err


_KEYS = st.text(alphabet="abcdefghij/_.", min_size=1, max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    weights=st.dictionaries(_KEYS, st.integers(min_value=1, max_value=5000), max_size=60),
    expensive_share=st.floats(min_value=0.0, max_value=1.0),
    count=st.integers(min_value=1, max_value=9),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_every_file_lands_in_exactly_one_shard_balanced(
    weights: dict[str, int], expensive_share: float, count: int, seed: int
) -> None:
    keys = sorted(weights)
    expensive = set(keys[: int(len(keys) * expensive_share)])
    out = assign(weights, expensive, count)
    assert sorted(out) == keys  # each file once: a dict has one shard per key, and no key is lost
    assert all(1 <= shard <= count for shard in out.values())
    # the same whatever order the files were found in
    shuffled = list(weights.items())
    random.Random(seed).shuffle(shuffled)
    assert assign(dict(shuffled), set(expensive), count) == out
    # greedy balance, each group on its own: no shard is behind another by more than one file
    for group in (expensive, set(keys) - expensive):
        if not group:
            continue
        loads = Counter({k: 0 for k in range(1, count + 1)})
        for key in group:
            loads[out[key]] += weights[key]
        assert max(loads.values()) - min(loads.values()) <= max(weights[k] for k in group)


def test_dynamic_modules_are_spread_before_static_files() -> None:
    """Two heavy contracts and two light ones over two shards: one heavy and one light each, even
    though the static-only files outweigh them all."""
    weights = {"c1.py": 100, "c2.py": 90, "c3.py": 10, "c4.py": 5, "big_static.py": 10_000, "s.py": 50}
    out = assign(weights, {"c1.py", "c2.py", "c3.py", "c4.py"}, 2)
    assert {out["c1.py"], out["c2.py"]} == {1, 2}
    assert {out["c3.py"], out["c4.py"]} == {1, 2}
    assert {out["big_static.py"], out["s.py"]} == {1, 2}


@pytest.fixture(scope="module")
def examples_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shards")
    shutil.copytree(REPO / "examples", root / "examples", ignore=shutil.ignore_patterns("__pycache__"))
    return root


_DIGEST = """
import sys
from pathlib import Path
from warp_harness.daemon import discovery
from warp_harness.daemon.shards import Shard, plan
from warp_harness.engine import iter_python_files
root = Path(sys.argv[1])
files = list(iter_python_files([root]))
print(plan(Shard(1, 3), root, files, list(discovery.walk([root])), dynamic_tier=True).digest)
"""


def test_the_partition_is_the_same_in_every_process_and_checkout(examples_copy: Path, tmp_path: Path) -> None:
    """No salted hash(), no absolute path: two Python processes with different hash seeds, and a
    checkout at another place with CRLF line endings, compute the same partition."""
    crlf = tmp_path / "elsewhere" / "examples"
    shutil.copytree(examples_copy / "examples", crlf)
    for p in crlf.rglob("*.py"):
        p.write_bytes(p.read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n"))
    digests = set()
    for hash_seed, folder in (
        ("1", examples_copy / "examples"),
        ("2", examples_copy / "examples"),
        ("3", crlf),
    ):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        run = subprocess.run(
            [sys.executable, "-c", _DIGEST, str(folder)], env=env, capture_output=True, text=True, timeout=120
        )
        assert run.returncode == 0, run.stderr
        digests.add(run.stdout.strip())
    assert len(digests) == 1, digests


def test_a_plan_covers_both_tiers_and_owns_each_file_once(examples_copy: Path) -> None:
    from warp_harness.daemon import discovery
    from warp_harness.daemon.shards import Shard

    root = (examples_copy / "examples").resolve()
    files = list(iter_python_files([root]))
    targets = list(discovery.walk([root]))
    assert targets  # the walk finds the contract modules
    owners = Counter()
    for k in (1, 2, 3):
        p = plan(Shard(k, 3), root, files, targets, dynamic_tier=True)
        for f in {*files, *targets}:
            owners[workspace_key(f, root)] += p.owns(f)
    assert set(owners.values()) == {1}
    assert set(owners) == {workspace_key(f, root) for f in (*files, *targets)}


# --- merged reports equal the full run's -------------------------------------------------------


@pytest.mark.slow  # N + 2 command-line runs over the examples (static tier only)
@pytest.mark.parametrize("n", [1, 2, 3])
def test_merged_static_reports_equal_the_full_runs(examples_copy: Path, tmp_path: Path, n: int) -> None:
    full, merged, shards = _full_and_merged(examples_copy, tmp_path, ["examples", "--static-only"], n)
    assert full[0] == 1  # the examples have errors
    assert merged[0] == full[0]
    assert merged[2] == full[2]  # the summary line
    for fmt in OUTPUTS:
        assert merged[1][fmt] == full[1][fmt], fmt
    _assert_partitioned(shards, full[1]["json"], n)


@pytest.mark.slow  # four command-line runs
def test_merged_exit_code_is_0_without_errors(examples_copy: Path, tmp_path: Path) -> None:
    args = ["examples/buggy", "--static-only", "--ignore", "WH"]
    full, merged, _ = _full_and_merged(examples_copy, tmp_path, args, 2)
    assert full[0] == merged[0] == 0
    assert merged[1] == full[1]


@pytest.mark.slow  # eight command-line runs
def test_more_shards_than_files_leaves_empty_shards_that_still_merge(
    examples_copy: Path, tmp_path: Path
) -> None:
    full, merged, shards = _full_and_merged(examples_copy, tmp_path, ["examples/buggy", "--static-only"], 6)
    assert sum(1 for s in shards if not s["files"]) == 2  # 4 files, 6 shards
    assert merged == full


def test_a_shards_sarif_names_its_shard(examples_copy: Path, tmp_path: Path) -> None:
    """Code scanning keeps one SARIF upload per category: each shard's is its own."""
    sarif = tmp_path / "s.sarif"
    run = _cli(
        "ci",
        "examples/buggy",
        "--static-only",
        "--shard",
        "2/3",
        "--format",
        "sarif",
        "-o",
        str(sarif),
        cwd=examples_copy,
    )
    assert run.returncode in (0, 1), run.stderr
    runs = json.loads(sarif.read_text(encoding="utf-8"))["runs"]
    assert [r["automationDetails"]["id"] for r in runs] == ["warp-harness-ci/shard-2-of-3/"]


CONTRACTS = ("saxpy.py", "scale.py", "scale_contract.py", "boundary_bug.py")


def _normalised(report: bytes) -> Any:
    """The dynamic tier's JSON without what differs between any two runs: the per-file timings
    and elapsed time, and each kernel's compile status (``compiled`` in the run that filled the
    project's kernel cache, ``cached`` in later ones)."""
    document = json.loads(report)
    for entry in document["files"]:
        entry.pop("timings", None)
        entry.pop("elapsed_ms", None)
        for kernel in entry.get("kernels", {}).values():
            kernel["compile"] = {device: "built" for device in kernel.get("compile", {})}
    return document


@pytest.mark.slow  # runs four contract modules 7 times (full run + shards of 1, 2, 3)
def test_merged_reports_with_the_dynamic_tier_equal_the_full_runs(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    for name in CONTRACTS:
        shutil.copy(REPO / "examples" / "contracts" / name, ws / name)
    shutil.copy(REPO / "examples" / "saxpy.py", ws / "plain.py")
    # a fixed seed: the generated inputs, and so the failing case stored, are the same in every run;
    # no benchmark: its records quote measured times; no verdict worker (references computed in the
    # kernel's own worker, in all seven runs alike): what is compared is the merge, and a second worker
    # per module took a third of each run (12.2 s against 7.9 s)
    args = [".", "--trust", "--seed", "7", "--no-bench", "--no-verdict-worker"]
    full = _cli("ci", *args, *_report_flags(tmp_path, "full"), cwd=ws)
    assert full.returncode == 1, full.stderr  # boundary_bug.py fails validation
    full_out = _outputs(tmp_path, "full")
    summary = json.loads(full_out["json"])["summary"]
    assert len(summary["dynamic_files"]) == 4 and len(summary["repros"]) == 1
    for n in (1, 2, 3):
        out = tmp_path / f"n{n}"
        out.mkdir()
        parts = []
        for k in range(1, n + 1):
            part = out / f"shard{k}.json"
            run = _cli("ci", *args, "--shard", f"{k}/{n}", "--format", "json", "-o", str(part), cwd=ws)
            assert run.returncode in (0, 1), run.stderr
            parts.append(str(part))
        merged = _cli("merge-reports", *parts, *_report_flags(out, "merged"), cwd=ws)
        assert merged.returncode == full.returncode, merged.stderr
        assert _last_line(merged.stderr) == _last_line(full.stderr)
        got = _outputs(out, "merged")
        for fmt in ("text", "sarif", "junit"):
            assert got[fmt] == full_out[fmt], (n, fmt)
        assert _normalised(got["json"]) == _normalised(full_out["json"]), n
        shards = [json.loads(Path(p).read_text(encoding="utf-8"))["shard"] for p in parts]
        _assert_partitioned(shards, full_out["json"], n)
        if n == 2:  # the four modules are balanced: two each
            assert sorted(len(s["dynamic"]) for s in shards) == [2, 2]


# --- refused merges ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shard_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real shard reports of a small workspace: 1/2, 2/2, 1/3, 2/3, 3/3, a 3/3 run with other
    options, a 3/3 run over another set of files, and the full run's report."""
    root = tmp_path_factory.mktemp("merge")
    ws = root / "ws"
    shutil.copytree(REPO / "examples" / "buggy", ws)
    other = root / "other"
    shutil.copytree(ws, other)
    (other / "extra.py").write_text("x = 1\n", encoding="utf-8")
    out: dict[str, Path] = {}
    cwd = Path.cwd()
    try:
        for name, folder, extra in (
            ("1/2", ws, []),
            ("2/2", ws, []),
            ("1/3", ws, []),
            ("2/3", ws, []),
            ("3/3", ws, []),
            ("3/3 ignore", ws, ["--ignore", "WH003"]),
            ("3/3 other", other, []),
            ("full", ws, []),
        ):
            target = root / (name.replace("/", "of").replace(" ", "-") + ".json")
            os.chdir(folder)
            shard = [] if name == "full" else ["--shard", name.split()[0]]
            code = main(["ci", ".", "--static-only", *extra, *shard, "--format", "json", "-o", str(target)])
            assert code in (0, 1)
            out[name] = target
    finally:
        os.chdir(cwd)
    return out


def _merge_fails(
    reports: list[Path], expect: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "merged.sarif"
    capsys.readouterr()
    code = main(["merge-reports", *map(str, reports), "--format", "sarif", "-o", str(target)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "merge-reports:" in err and expect in err, err
    assert not target.exists()


def test_the_real_shards_merge(shard_reports: dict[str, Path], tmp_path: Path) -> None:
    target = tmp_path / "merged.json"
    parts = [shard_reports[k] for k in ("2/3", "3/3", "1/3")]  # any order
    assert main(["merge-reports", *map(str, parts), "--format", "json", "-o", str(target)]) == 1
    assert target.read_bytes() == shard_reports["full"].read_bytes()


@pytest.mark.parametrize(
    ("names", "expect"),
    [
        (["1/2", "2/3", "3/3"], "is shard 1/2 but"),
        (["1/3", "2/3"], "missing shard(s) 3 of 3"),
        (["1/3", "2/3", "3/3", "2/3"], "shard 2/3 given twice"),
        (["1/3", "2/3", "3/3 ignore"], "different options (rules"),
        (["1/3", "2/3", "3/3 other"], "partitioned different sets of files"),
        (["1/3", "2/3", "full"], "is not a shard's report"),
    ],
)
def test_merge_refuses_shards_that_are_not_one_run(
    names: list[str],
    expect: str,
    shard_reports: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _merge_fails([shard_reports[n] for n in names], expect, tmp_path, capsys)


def _tampered(source: Path, target: Path, change: Any) -> Path:
    document = json.loads(source.read_text(encoding="utf-8"))
    change(document)
    target.write_text(json.dumps(document), encoding="utf-8")
    return target


def _first_record(d: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = d["results"][0]
    return result


_TAMPERING: list[tuple[str, Any, str]] = [
    ("version", lambda d: d.update(version="0.0.1-other"), "was written by warp-harness 0.0.1-other"),
    ("index", lambda d: d["shard"].update(index="3"), "shard.index is not an integer"),
    ("index-range", lambda d: d["shard"].update(index=7), "shard 7/3 is not a shard"),
    ("count-huge", lambda d: d["shard"].update(count=10**12), "is not a shard"),
    (
        "line",
        lambda d: _first_record(d)["location"].update(line="3"),
        "results[0].location.line is not an integer",
    ),
    (
        "line-bool",
        lambda d: _first_record(d)["location"].update(line=True),
        "location.line is not an integer",
    ),
    ("stage", lambda d: _first_record(d).update(stage="os.system"), "results[0].stage is not a stage"),
    (
        "extra",
        lambda d: _first_record(d).update({"py/object": "os.system"}),
        "has fields a record does not have",
    ),
    ("fix", lambda d: _first_record(d).update(fix={"title": 1}), "results[0].fix.title is not a string"),
    ("files", lambda d: d.update(files=[1]), "files[0] is not an object"),
    ("lost-file", lambda d: d["files"].pop(), "its `files` are not the files its `shard` lists"),
    ("foreign", lambda d: _first_record(d).update(path="/etc/passwd"), "which is not among its files"),
    (
        "lines",
        lambda d: d["files"][0].update(lines=[{"line": 1, "text": 5}]),
        "lines[0].text is not a string",
    ),
    ("summary", lambda d: d["summary"].update(repros="x"), "summary.repros is not a list"),
]


@pytest.mark.parametrize(("name", "change", "expect"), _TAMPERING, ids=[t[0] for t in _TAMPERING])
def test_merge_refuses_a_tampered_report(
    name: str,
    change: Any,
    expect: str,
    shard_reports: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # shard 3/3 holds records (the failing kernels of the buggy examples)
    assert json.loads(shard_reports["3/3"].read_text(encoding="utf-8"))["results"]
    bad = _tampered(shard_reports["3/3"], tmp_path / "bad.json", change)
    _merge_fails([shard_reports["1/3"], shard_reports["2/3"], bad], expect, tmp_path, capsys)


_GARBAGE: list[tuple[str, bytes, str]] = [
    ("empty", b"", "is not JSON"),
    ("truncated", b'{"version": "0', "is not JSON"),
    ("binary", bytes(range(256)), "is not JSON"),
    ("list", b"[]", "is not a `warp-harness ci --output-format json` report"),
    ("nan", b'{"results": [], "files": [], "shard": NaN}', "NaN is not strict JSON"),
    ("deep", b"[" * 200_000 + b"]" * 200_000, "is not JSON"),
    ("huge-int", b'{"version": ' + b"9" * 100_000 + b"}", "is not JSON"),
]


@pytest.mark.parametrize(("name", "data", "expect"), _GARBAGE, ids=[g[0] for g in _GARBAGE])
def test_merge_refuses_what_is_not_a_report(
    name: str,
    data: bytes,
    expect: str,
    shard_reports: dict[str, Path],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(data)
    _merge_fails([shard_reports["1/3"], shard_reports["2/3"], bad], expect, tmp_path, capsys)


def test_merge_refuses_unreadable_files_without_blocking_or_reading_them(
    shard_reports: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # opening it for reading would block forever
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(300 * 1024 * 1024)  # sparse: nothing is written, nothing must be read
    ok = [shard_reports["1/3"], shard_reports["2/3"]]
    _merge_fails([*ok, fifo], "cannot read", tmp_path, capsys)
    _merge_fails([*ok, huge], "cannot read", tmp_path, capsys)
    _merge_fails([*ok, tmp_path / "absent.json"], "cannot read", tmp_path, capsys)


def test_a_shard_with_no_changed_files_still_writes_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ci --changed-files` with nothing changed writes no report, except as a shard: the merge
    step expects one report per shard."""
    (tmp_path / "k.py").write_text("x = 1\n", encoding="utf-8")
    git = ["git", "-c", "user.email=t@example.com", "-c", "user.name=t"]
    for command in (["init", "-q"], ["add", "k.py"], ["commit", "-qm", "k"]):
        subprocess.run([*git, *command], cwd=tmp_path, check=True, capture_output=True)
    monkeypatch.chdir(tmp_path)
    parts = [str(tmp_path / f"s{k}.json") for k in (1, 2)]
    for k, part in enumerate(parts, start=1):
        assert main(["ci", ".", "--changed-files", "--shard", f"{k}/2", "--format", "json", "-o", part]) == 0
    merged = tmp_path / "merged.json"
    assert main(["merge-reports", *parts, "--format", "json", "-o", str(merged)]) == 0
    assert json.loads(merged.read_text(encoding="utf-8"))["summary"]["files"] == 0
    assert not (tmp_path / "unsharded.json").exists()
    assert (
        main(["ci", ".", "--changed-files", "--format", "json", "-o", str(tmp_path / "unsharded.json")]) == 0
    )
    assert not (tmp_path / "unsharded.json").exists()
