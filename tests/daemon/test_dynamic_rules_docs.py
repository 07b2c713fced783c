"""The dynamic tier's rules (WHD###) are documented like the static ones: `rules` lists
them, `rule WHD020` prints the documentation, docs/rules.md has them and the records of a
`ci` run link to it."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from warp_harness.daemon import findings as F

REPO = Path(__file__).resolve().parents[2]


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-I", "-m", "warp_harness", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _used_ids() -> set[str]:
    """Every WHD id the code reports: the constants of daemon/findings.py and literals elsewhere."""
    ids = {
        v for k, v in vars(F).items() if k.isupper() and isinstance(v, str) and re.fullmatch(r"WHD\d{3}", v)
    }
    for folder in ("daemon", "server"):
        for path in (REPO / folder).rglob("*.py"):
            ids |= set(re.findall(r"[\"'](WHD\d{3})[\"']", path.read_text(encoding="utf-8")))
    return ids


def test_every_dynamic_id_has_documentation() -> None:
    documented = {r.id for r in F.DYNAMIC_RULES}
    assert _used_ids() <= documented
    for rule in F.DYNAMIC_RULES:
        doc = rule.doc()
        assert (
            doc.startswith(f"## {rule.id} {rule.name}")
            and "### Why it matters" in doc
            and "### What to do" in doc
        )


def test_rules_lists_the_dynamic_ids() -> None:
    p = _cli("rules")
    assert p.returncode == 0, p.stderr
    listed = {line.split()[0] for line in p.stdout.splitlines() if line.startswith("WHD")}
    assert listed == {r.id for r in F.DYNAMIC_RULES}
    assert re.search(r"^WHD020\s+error\s+numeric\s+mismatch\s", p.stdout, re.M), p.stdout
    entries = json.loads(_cli("rules", "--output-format", "json").stdout)
    tiers = {e["id"]: e["tier"] for e in entries}
    assert tiers["WH003"] == "static" and tiers["WHD020"] == "dynamic"


def test_rule_prints_a_dynamic_rule() -> None:
    p = _cli("rule", "WHD020")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("## WHD020 mismatch") and "### What to do" in p.stdout
    assert "atomic" not in p.stdout or "race" in p.stdout
    by_name = _cli("rule", "mismatch")
    assert by_name.returncode == 0 and by_name.stdout == p.stdout
    data = json.loads(_cli("rule", "whd011", "--output-format", "json").stdout)
    assert (
        data["id"] == "WHD011" and data["url"].endswith("docs/rules.md#whd011") and data["tier"] == "dynamic"
    )
    assert _cli("rule", "WHD999").returncode == 2


def test_docs_rules_md_has_the_dynamic_rules() -> None:
    text = (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    for rule in F.DYNAMIC_RULES:
        assert f'<a id="{rule.id.lower()}"></a>' in text and f"## {rule.id} {rule.name}" in text


def test_dynamic_records_of_ci_carry_a_url(tmp_path: Path) -> None:
    # an import error: the dynamic tier reports it without compiling anything
    (tmp_path / "boom.py").write_text(
        "import warp as wp\n\n\n@wp.kernel\ndef k(x: wp.array(dtype=float)):\n    x[wp.tid()] = 1.0\n\n\n"
        "raise RuntimeError('boom at import')\n"
    )
    p = _cli("ci", ".", "--trust", "--format", "json", cwd=tmp_path)
    results = json.loads(p.stdout)["results"]
    (record,) = [r for r in results if r["rule"] == "WHD001"]
    # the docs the ci process finds (an installed copy, or a checkout's docs/): the same page and anchor
    assert record["url"].rsplit("/docs/", 1)[1] == F.BY_ID["WHD001"].url.rsplit("/docs/", 1)[1]
    assert record["url"].endswith("docs/rules.md#whd001")
    sarif = json.loads(_cli("ci", ".", "--trust", "--format", "sarif", cwd=tmp_path).stdout)
    rules = {r["id"]: r for r in sarif["runs"][0]["tool"]["driver"]["rules"]}
    assert rules["WHD001"].get("helpUri", "").endswith("#whd001")
