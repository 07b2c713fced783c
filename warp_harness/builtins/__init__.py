"""Warp's builtin signature table, for a checker that never imports Warp.

>>> from warp_harness.builtins import load_table
>>> from warp_harness.model.types import FLOAT32, INT32
>>> table = load_table()
>>> table.check_call("sqrt", [FLOAT32], {}).status
<CallStatus.OK: 'ok'>
>>> table.check_call("sqrt", [INT32], {}).status
<CallStatus.BAD_TYPES: 'bad_types'>

The names below are imported on first use: ``warp_harness.builtins.cache_files`` alone (what a
`check` answered from its result cache needs) does not import the table's code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cache_files import CACHE_ENV, cache_dir, cache_path, installed_warp_version
    from .loader import ExtractionError, clear_memo, load_table
    from .table import (
        KEYWORD_ONLY,
        POSITIONAL_OR_KEYWORD,
        VAR_KEYWORD,
        VAR_POSITIONAL,
        Builtin,
        BuiltinTable,
        CallCheck,
        CallStatus,
        Overload,
        ParamSig,
        TableFormatError,
        TypeDict,
        describe_arity,
        type_repr,
    )

_MODULE_OF = {
    **dict.fromkeys(("CACHE_ENV", "cache_dir", "cache_path", "installed_warp_version"), ".cache_files"),
    **dict.fromkeys(("ExtractionError", "clear_memo", "load_table"), ".loader"),
    **dict.fromkeys(
        (
            "KEYWORD_ONLY",
            "POSITIONAL_OR_KEYWORD",
            "VAR_KEYWORD",
            "VAR_POSITIONAL",
            "Builtin",
            "BuiltinTable",
            "CallCheck",
            "CallStatus",
            "Overload",
            "ParamSig",
            "TableFormatError",
            "TypeDict",
            "describe_arity",
            "type_repr",
        ),
        ".table",
    ),
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "CACHE_ENV",
    "KEYWORD_ONLY",
    "POSITIONAL_OR_KEYWORD",
    "VAR_KEYWORD",
    "VAR_POSITIONAL",
    "Builtin",
    "BuiltinTable",
    "CallCheck",
    "CallStatus",
    "ExtractionError",
    "Overload",
    "ParamSig",
    "TableFormatError",
    "TypeDict",
    "cache_dir",
    "cache_path",
    "clear_memo",
    "describe_arity",
    "installed_warp_version",
    "load_table",
    "type_repr",
]
