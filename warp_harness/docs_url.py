"""Where the rules' documentation is, for records, SARIF and editor links: ``$WARP_HARNESS_DOCS_URL`` (a
project that hosts the docs somewhere), else the file URI of the installed ``docs/rules.md`` (shipped in
the package as ``warp_harness/docs``; in a source checkout, the repository's ``docs/``). A link then works
offline and never names a made-up site; ``warp-harness rule ID`` prints the same text."""

from __future__ import annotations

import os
from pathlib import Path

DOCS_ENV = "WARP_HARNESS_DOCS_URL"


def rules_doc_url() -> str:
    """The rules page's URL, without an anchor (a rule's is ``#<id in lower case>``)."""
    override = os.environ.get(DOCS_ENV, "").strip()
    if override:
        return override.rstrip("#")
    package = Path(__file__).resolve().parent
    for candidate in (package / "docs" / "rules.md", package.parent / "docs" / "rules.md"):
        if candidate.is_file():
            return candidate.as_uri()
    return (package / "docs" / "rules.md").as_uri()
