"""The static tier's score on the mined real-bug corpus (tests/corpus/real_bugs/), by bug class.

Each case is a folder with ``bad.py`` (the code as the user wrote it, reduced) and ``good.py`` (their fix);
the header of ``bad.py`` names its class, Warp's verdict and the public source. A case is *caught* when
`check` reports an error or a warning on ``bad.py``; a *false alarm* is any error or warning on
``good.py``. "before" is the rules that predate the mined corpus (ids below WH040), "after" all rules;
the last column counts Warp's verdicts on the CPU (see tests/corpus/test_real_bugs.py).

    python benchmarks/real_bugs_score.py [--json]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from warp_harness.engine import analyse_source
from warp_harness.record import Severity
from warp_harness.rules import rule_classes

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "corpus" / "real_bugs"
VERDICTS = ("rejects", "silent", "trap", "gpu-only", "ub")
_HEADER = re.compile(
    r"\A# real-bug: class=(?P<cls>[a-z-]+) warp=(?P<warp>[a-z-]+)\n"
    r"# source: (?P<source>https://github\.com/\S+)\n"
    r"# why: (?P<why>.+)\n"
)
# the rules the corpus was mined to measure: "before" leaves them out
FIRST_NEW_RULE = "WH040"


@dataclass(frozen=True)
class Case:
    name: str
    folder: Path
    cls: str
    warp: str
    source: str
    why: str

    @property
    def bad(self) -> Path:
        return self.folder / "bad.py"

    @property
    def good(self) -> Path:
        return self.folder / "good.py"


def cases() -> list[Case]:
    found = []
    for folder in sorted(p for p in CORPUS.iterdir() if (p / "bad.py").is_file()):
        match = _HEADER.match((folder / "bad.py").read_text(encoding="utf-8"))
        if match is None:
            raise ValueError(f"{folder.name}/bad.py: no `# real-bug: class=... warp=...`, source, why header")
        found.append(Case(folder.name, folder, match["cls"], match["warp"], match["source"], match["why"]))
    return found


def findings(path: Path, ignore: tuple[str, ...] = ()) -> list[str]:
    """``RULE line`` for each error and warning the static tier reports on ``path``."""
    overrides = {"ignore": list(ignore)} if ignore else None
    records = analyse_source(path.read_text(encoding="utf-8"), str(path), overrides=overrides).records
    return [
        f"{r.rule}:{r.location.line}" for r in records if r.severity in (Severity.ERROR, Severity.WARNING)
    ]


def new_rules() -> tuple[str, ...]:
    return tuple(c.id for c in rule_classes() if c.id >= FIRST_NEW_RULE)


def score() -> dict[str, dict[str, object]]:
    newer = new_rules()
    by_class: dict[str, dict[str, object]] = defaultdict(
        lambda: {"cases": 0, "before": 0, "after": 0, "false_alarms": 0, "verdicts": {}, "missed": []}
    )
    for case in cases():
        row = by_class[case.cls]
        row["cases"] = int(row["cases"]) + 1  # type: ignore[call-overload]
        verdicts: dict[str, int] = row["verdicts"]  # type: ignore[assignment]
        verdicts[case.warp] = verdicts.get(case.warp, 0) + 1
        if findings(case.bad, newer):
            row["before"] = int(row["before"]) + 1  # type: ignore[call-overload]
        if findings(case.bad):
            row["after"] = int(row["after"]) + 1  # type: ignore[call-overload]
        else:
            row["missed"].append(case.name)  # type: ignore[attr-defined]
        if findings(case.good):
            row["false_alarms"] = int(row["false_alarms"]) + 1  # type: ignore[call-overload]
    return dict(sorted(by_class.items()))


def _verdicts(counts: dict[str, int]) -> str:
    return ", ".join(f"{verdict} {counts[verdict]}" for verdict in VERDICTS if verdict in counts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    table = score()
    if args.json:
        print(json.dumps(table, indent=2))
        return 0
    total = {"cases": 0, "before": 0, "after": 0, "false_alarms": 0}
    all_verdicts: dict[str, int] = {}
    print(f"{'class':<18}{'cases':>6}{'before':>8}{'after':>7}{'false alarms':>14}  Warp's verdicts")
    for cls, row in table.items():
        verdicts: dict[str, int] = row["verdicts"]  # type: ignore[assignment]
        print(
            f"{cls:<18}{row['cases']:>6}{row['before']:>8}{row['after']:>7}{row['false_alarms']:>14}"
            f"  {_verdicts(verdicts)}"
        )
        for key in total:
            total[key] += int(row[key])  # type: ignore[call-overload]
        for verdict, count in verdicts.items():
            all_verdicts[verdict] = all_verdicts.get(verdict, 0) + count
    print(
        f"{'total':<18}{total['cases']:>6}{total['before']:>8}{total['after']:>7}{total['false_alarms']:>14}"
        f"  {_verdicts(all_verdicts)}"
    )
    missed = [name for row in table.values() for name in row["missed"]]  # type: ignore[attr-defined]
    if missed:
        print("missed: " + ", ".join(missed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
