"""Every record of the static tier over a fixed corpus, as sorted JSON: refactorings must not change it.

The corpus: warp-lang's examples and tests trees (as installed), our examples/, the tests' data files,
the generated benchmark module; fresh analyses of each file under the default settings (and the files
with kernels under ``sm_90`` and ``cpu``), and the `IncrementalAnalyser` over deterministic edit
sequences (the snippets and edit kinds of tests/engine/test_incremental.py, the typing sequences of
its generated-module test and of bench_static, and a kernel-factory module), where each step's
records are also compared with a fresh analysis of the same text.

    python benchmarks/record_identity.py dump -o /tmp/baseline.json
    python benchmarks/record_identity.py compare /tmp/baseline.json     # exit 1 on any difference
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import random
import re
import sys
import textwrap
from importlib.util import find_spec
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from corpus import QUOTING, QUOTING_REST, generated_module, line_edits

from warp_harness.builtins import BuiltinTable, load_table
from warp_harness.config import Settings
from warp_harness.engine import analyse_source
from warp_harness.incremental import IncrementalAnalyser
from warp_harness.record import Record, Severity
from warp_harness.rules import rule_classes

_ROOT = Path(__file__).resolve().parents[1]

_SNIPPETS = [
    "x",
    "1",
    " ",
    "(",
    ")",
    "[",
    "]",
    ":",
    ",",
    ".",
    "#",
    '"',
    '"""',
    "\\",
    "\n",
    "\n    ",
    "\t",
    "é",
    "wp.tid()",
    "1.0",
    "wp.float16(1.0)",
    "x[i, j]",
    "    y = x[i] * 2.0\n",
    "    return 1\n",
    "wp.launch(k, dim=1, inputs=[])",
    "import math\n",
    "TILE_M = 32\n",
    "@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[0] = 1.0\n",
    "@wp.func\ndef helper_0(a: float) -> float:\n    return a\n",
    "def plain():\n    pass\n",
    "max_unroll",
    "# wh: ignore\n",
    "wp.t = 1\n",
    "{'block_dim': 64}",
    "lambda: 0",
]
_SETTINGS = [
    Settings(),
    Settings(target="sm_90"),
    Settings(target="cpu"),
    Settings(select=("WH01",)),
    Settings(ignore=("WH003", "WH004")),
    Settings(severity={"WH012": Severity.INFO, "WH003": Severity.WARNING}),
]

FACTORY = """import warp as wp

TILE = wp.constant(16)


def make_scale(dtype):
    @wp.kernel
    def scale(x: wp.array(dtype=dtype), s: dtype):
        i = wp.tid()
        x[i] = x[i] * s

    return scale


def make_sum():
    @wp.func
    def twice(a: float) -> float:
        return a * 2.0

    @wp.kernel
    def total(x: wp.array(dtype=float), out: wp.array(dtype=float)):
        i = wp.tid()
        out[0] += twice(x[i])

    return total


@wp.kernel
def plain(x: wp.array(dtype=float), y: wp.array(dtype=wp.float16)):
    i = wp.tid()
    t = wp.min(x[i], 1.0)
    y[i] = y[i] * 0.5


class Holder:
    @wp.kernel
    def inner(x: wp.array(dtype=float)):
        x[0] = 1.0


def run(n: int):
    x = wp.zeros(n, dtype=float)
    wp.launch(plain, dim=n, inputs=[x])
    k = make_sum()
    wp.launch(k, dim=n, inputs=[x, x])
"""


def _warp_root() -> Path:
    spec = find_spec("warp")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent


def corpus() -> dict[str, str]:
    """Display path -> text."""
    warp = _warp_root()
    files: dict[str, Path] = {}
    for folder in ("examples", "tests"):
        for p in sorted((warp / folder).rglob("*.py")):
            files[f"warp/{p.relative_to(warp)}"] = p
    for folder in ("examples", "tests"):
        for p in sorted((_ROOT / folder).rglob("*.py")):
            rel = p.relative_to(_ROOT)
            if folder == "tests" and "data" not in rel.parts:
                continue
            files[str(rel)] = p
    texts = {name: p.read_text(encoding="utf-8", errors="replace") for name, p in files.items()}
    texts["generated.py"] = generated_module()
    texts["factory.py"] = FACTORY
    texts["quoting.py"] = QUOTING
    texts.update(_test_snippets())
    return texts


def _test_snippets() -> dict[str, str]:
    """The kernels the tests write inline: every string constant in tests/ that defines a function
    and mentions Warp (dedented), and the code blocks of each rule's documentation."""
    out: dict[str, str] = {}
    for p in sorted((_ROOT / "tests").rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                value = node.value
                if "def " in value and "wp." in value:
                    text = textwrap.dedent(value)  # keyed by content: editing a test file moves its lines
                    digest = hashlib.sha1(text.encode()).hexdigest()[:12]
                    out[f"{p.relative_to(_ROOT)}:{digest}"] = text
    for cls in rule_classes():
        blocks = re.findall(r"```python\n(.*?)```", cls.doc(), re.S)
        for number, block in enumerate(blocks):
            out[f"doc/{cls.id}/{number}.py"] = "import warp as wp\n\n" + block
    return out


def _record(record: Record) -> dict[str, Any]:
    data = record.to_dict()
    data["priority"] = record.priority
    return data


def _records(records: list[Record]) -> list[str]:
    return sorted(json.dumps(_record(r), sort_keys=True, default=repr) for r in records)


def _apply(text: str, edit: tuple[str, float, int, str]) -> str:
    kind, where, near_def, snippet = edit
    position = int(where * len(text))
    if near_def >= 0:
        defs = [i for i in range(len(text)) if text.startswith("def ", i)]
        if defs:
            position = min(defs[int(where * (len(defs) - 1))] + near_def, len(text))
    if kind == "insert":
        return text[:position] + snippet + text[position:]
    if kind == "delete":
        return text[:position] + text[position + 1 + len(snippet) % 4 :]
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    end = len(text) if end < 0 else end + 1
    if kind == "delete_line":
        return text[:start] + text[end:]
    return text[:end] + text[start:end] + text[end:]


def _random_edits(name: str, count: int) -> list[tuple[str, float, int, str]]:
    rng = random.Random(name)
    kinds = ["insert", "insert", "delete", "delete_line", "duplicate_line"]
    return [
        (rng.choice(kinds), rng.random(), rng.randint(-1, 400), rng.choice(_SNIPPETS)) for _ in range(count)
    ]


def _typing(text: str, where: str, before: str, typed: str) -> list[str]:
    position = text.index(before, text.index(where))
    texts = []
    for i, char in enumerate(typed):
        text = text[: position + i] + char + text[position + i :]
        texts.append(text)
    return texts


def sequences(texts: dict[str, str]) -> dict[str, tuple[str, list[tuple[str, Settings]]]]:
    """Name -> (path, [(text, settings) per step]): the first step is the unedited text."""
    out: dict[str, tuple[str, list[tuple[str, Settings]]]] = {}
    with_kernels = [n for n in sorted(texts) if "@wp.kernel" in texts[n]]
    ours = [n for n in with_kernels if not n.startswith("warp/")]
    chosen = [*ours, *[n for n in with_kernels if n.startswith("warp/examples")][::9]]
    # Warp's tests define most kernels inside functions (the kernel-factory pattern)
    chosen += [n for n in with_kernels if n.startswith("warp/tests")][::25]
    for name in chosen:
        text = texts[name]
        for run in range(2):
            steps = [(text, _SETTINGS[run])]
            edited = text
            for number, edit in enumerate(_random_edits(f"{name}:{run}", 6)):
                edited = _apply(edited, edit)
                steps.append((edited, _SETTINGS[(run * 3 + number) % len(_SETTINGS)]))
            out[f"{name}#random{run}"] = (name, steps)
    generated = texts["generated.py"]
    for where, before in [
        ("def kernel_7(", "    t = wp.min(s, c)\n"),
        ("def run_3(", "    wp.launch(kernel_3,"),
        ("def helper_5(", "    return wp.sqrt"),
        ("TILE_K = ", "BLOCK = 64"),
    ]:
        steps = [(generated, Settings())]
        steps += [(t, Settings()) for t in _typing(generated, where, before, "    w2 = t * 2.0\n")]
        out[f"generated#{where}"] = ("g.py", steps)
    factory = texts["factory.py"]
    for where, before in [
        ("def make_scale(", "        x[i] = x[i] * s"),
        ("def make_sum(", "        out[0] +="),
        ("def plain(", "    y[i] = "),
    ]:
        steps = [(factory, Settings())]
        steps += [(t, Settings()) for t in _typing(factory, where, before, "        w2 = x[i] * 2.0\n")]
        out[f"factory#{where}"] = ("factory.py", steps)
    # lines added and deleted above, between and below records quoting line numbers, and in their kernels
    quoting = texts["quoting.py"]
    for kernel in ("top", "ranked", "middle", "shadowed", "gemm", "bottom"):
        for config in (Settings(target="sm_86"), Settings()):
            steps = [(quoting, config)] + [(t, config) for t in line_edits(quoting, kernel)]
            out[f"quoting#{kernel}@{config.target}"] = ("quoting.py", steps)
    quoting = generated_module(kernels=12, target_lines=0)
    quoting = quoting.replace(
        "dim=n, inputs=[x, y, v, m, out, 2.0]", "dim=(n, 2), inputs=[x, y, v, m, out, 2.0]"
    )
    quoting = quoting.replace(
        "    for k in range(4):\n        s += m[i, k] * a\n",
        "    for i in range(4):\n        s += m[i, i] * a\n",
    )
    steps = [(quoting, Settings())]
    for kernel in ("kernel_1", "tile_kernel_3", "kernel_4", "kernel_5"):
        steps += [(t, Settings()) for t in line_edits(quoting, kernel)]
    out["generated-quoting#line edits"] = ("gq.py", steps)
    at = QUOTING_REST.index("\n", QUOTING_REST.index("    a[i] = 1.0"))
    pasted = QUOTING_REST[:at] + "".join(f"\n    p{n} = {n}.0" for n in range(8)) + QUOTING_REST[at:]
    steps = [(QUOTING_REST, Settings()), (pasted, Settings())] + [
        (t, Settings()) for t in line_edits(pasted, "second")
    ]
    out["quoting-rest#line edits"] = ("quoting_rest.py", steps)
    return out


def dump(table: BuiltinTable) -> tuple[dict[str, Any], int]:
    texts = corpus()
    fresh: dict[str, Any] = {}
    for name, text in texts.items():
        fresh[name] = _records(analyse_source(text, name, Settings(), builtins=table).records)
        if "@wp.kernel" in text or "wp.launch" in text:
            for target in ("sm_90", "cpu"):
                records = analyse_source(text, name, Settings(target=target), builtins=table).records
                fresh[f"{name}@{target}"] = _records(records)
    incremental: dict[str, Any] = {}
    mismatches = 0
    for label, (path, steps) in sequences(texts).items():
        analyser = IncrementalAnalyser(table)
        results = []
        for text, config in steps:
            got = _records(analyser.analyse(text, path, config).records)
            if got != _records(analyse_source(text, path, config, builtins=table).records):
                mismatches += 1
                print(f"incremental differs from fresh: {label} step {len(results)}", file=sys.stderr)
            results.append(got)
        incremental[label] = results
    return {"fresh": fresh, "incremental": incremental}, mismatches


def _count(data: dict[str, Any]) -> tuple[int, int, int, int]:
    fresh = data["fresh"]
    steps = [s for seq in data["incremental"].values() for s in seq]
    return len(fresh), sum(map(len, fresh.values())), len(steps), sum(map(len, steps))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("-o", "--output", type=Path, required=True)
    c = sub.add_parser("compare")
    c.add_argument("baseline", type=Path)
    args = parser.parse_args()
    data, mismatches = dump(load_table())
    analyses, records, steps, step_records = _count(data)
    summary = (
        f"{analyses} fresh analyses ({records} records), {len(data['incremental'])} edit sequences "
        f"({steps} steps, {step_records} records); incremental != fresh at {mismatches} steps"
    )
    if args.command == "dump":
        args.output.write_text(json.dumps(data, sort_keys=True, indent=0))
        print(summary)
        sys.exit(1 if mismatches else 0)
    baseline = json.loads(args.baseline.read_text())
    differences = added = 0
    for part in ("fresh", "incremental"):
        old, new = baseline[part], data[part]
        for key in sorted(set(old) | set(new)):
            if key not in old:
                added += 1  # a file or test snippet written since: nothing to compare with
            elif old.get(key) != new.get(key):
                differences += 1
                if differences <= 20:
                    print(f"differs: {part} {key}")
    print(summary)
    print(f"{differences} differences from {args.baseline} ({added} entries new since)")
    sys.exit(1 if differences or mismatches else 0)


if __name__ == "__main__":
    main()
