"""Every rule's URL (records' ``url``, SARIF ``helpUri``, the editor's code description) opens a real
document: the installed docs/rules.md, at the rule's own anchor; ``$WARP_HARNESS_DOCS_URL`` points them
at a project's own copy. (They used to point at a repository that does not exist.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse
from urllib.request import url2pathname

from warp_harness.daemon.findings import DYNAMIC_RULES
from warp_harness.rules import rule_classes


def test_every_rule_url_is_an_anchor_of_the_installed_docs() -> None:
    urls = [cls.url() for cls in rule_classes()] + [r.url for r in DYNAMIC_RULES]
    pages = {u.split("#", 1)[0] for u in urls}
    assert len(pages) == 1
    (page,) = pages
    parsed = urlparse(page)
    assert parsed.scheme == "file"
    text = Path(url2pathname(parsed.path)).read_text(encoding="utf-8")
    for url in urls:
        anchor = url.split("#", 1)[1]
        assert f'<a id="{anchor}"></a>' in text, url


def test_the_docs_url_setting_moves_every_link(tmp_path: Path) -> None:
    (tmp_path / "k.py").write_text(
        "import warp as wp\n\n@wp.kernel\ndef k(x: wp.array(dtype=wp.float16)):\n    x[0] = x[0] * 0.5\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [
            sys.executable,
            "-I",
            "-m",
            "warp_harness",
            "check",
            "k.py",
            "--output-format",
            "json",
            "--no-cache",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"WARP_HARNESS_DOCS_URL": "https://docs.example.org/wh/rules.html", "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    entries = json.loads(done.stdout)["results"]
    assert entries and all(e["url"].startswith("https://docs.example.org/wh/rules.html#wh") for e in entries)
