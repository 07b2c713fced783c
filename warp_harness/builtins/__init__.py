"""Warp's builtin signature table, for a checker that never imports Warp.

>>> from warp_harness.builtins import load_table
>>> from warp_harness.model.types import FLOAT32, INT32
>>> table = load_table()
>>> table.check_call("sqrt", [FLOAT32], {}).status
<CallStatus.OK: 'ok'>
>>> table.check_call("sqrt", [INT32], {}).status
<CallStatus.BAD_TYPES: 'bad_types'>
"""

from __future__ import annotations

from .loader import (
    CACHE_ENV,
    ExtractionError,
    cache_dir,
    cache_path,
    clear_memo,
    installed_warp_version,
    load_table,
)
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
