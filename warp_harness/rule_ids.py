"""Every rule id a selector (`select`, `ignore`, `extend-select`) may name: the static rules, the dynamic
tier's, and the two ids the engine itself reports (unreadable file, internal error)."""

from __future__ import annotations

from pathlib import Path


def known_rule_ids() -> list[str]:
    """The ids, imported on demand (this imports every rule module)."""
    from warp_harness.daemon.findings import DYNAMIC_RULES
    from warp_harness.engine import INTERNAL_RULE, UNREADABLE_RULE
    from warp_harness.rules import rule_classes

    return [c.id for c in rule_classes()] + [r.id for r in DYNAMIC_RULES] + [UNREADABLE_RULE, INTERNAL_RULE]


def unknown_codes(codes: tuple[str, ...] | list[str]) -> list[str]:
    """The codes that are neither a rule id, the prefix of one, nor ``ALL``."""
    ids = known_rule_ids()
    return [c for c in codes if c != "ALL" and not any(i.startswith(c) for i in ids)]


def rule_url(rule_id: str) -> str | None:
    """The documentation URL of a static or dynamic rule (as `check --output-format json` gives it),
    None for an id that has none."""
    from warp_harness.daemon.findings import BY_ID
    from warp_harness.rules import rule_by_id

    static = rule_by_id(rule_id)
    if static is not None and static.id == rule_id:
        return static.url()
    dynamic = BY_ID.get(rule_id)
    return dynamic.url if dynamic is not None else None


def warn_unknown_configured_codes(paths: list[Path]) -> None:
    """Say once per configuration file which of its `select`/`ignore` codes name no rule (the command line
    refuses unknown codes outright; a pyproject's are ignored, but never without a word). Called by the
    commands, not by `config` (which the rules themselves import)."""
    from warp_harness.config import ConfigError, _warn_once, find_pyproject, load_settings

    seen: set[Path] = set()
    for path in paths:
        pyproject = find_pyproject(path)
        if pyproject is None or pyproject in seen:
            continue
        seen.add(pyproject)
        try:
            settings = load_settings(path)
        except ConfigError:
            continue  # the command reports it
        for key, codes in (("select", settings.select), ("ignore", settings.ignore)):
            bad = unknown_codes(list(codes)) if codes else []
            if bad:
                listed = ", ".join(bad)
                _warn_once(
                    f"{pyproject}: `{key}` names no rule for {listed} (`warp-harness rules` lists them)"
                )
