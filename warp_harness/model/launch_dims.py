"""The rank of a launch's ``dim``: the one question about a launch site that needs symbolic shapes
(`shapes.ShapeEnv`, which reads launch sites itself: kept here, so neither module imports the other)."""

from __future__ import annotations

from collections.abc import Mapping

from warp_harness.model.constants import Value
from warp_harness.model.imports import ImportMap
from warp_harness.model.launches import LaunchSite
from warp_harness.model.shapes import ShapeEnv


def dim_rank(
    site: LaunchSite,
    constants: Mapping[str, Value],
    imports: ImportMap,
    array_ranks: Mapping[str, int] | None = None,
) -> int | None:
    """Number of launch dimensions, when it is certain: literal tuples, folded values, ``len(a)``,
    ``a.shape`` / ``a.shape[0]`` / ``a.shape[:2]``, ``n * m`` of integers, locals and ``self.`` fields
    (see `warp_harness.model.shapes`). ``array_ranks``: the rank of arrays the caller knows (source text
    of the array expression -> ndim, e.g. from the kernel parameters they are passed to)."""
    rank = ShapeEnv(site, constants, imports, array_ranks or {}).dim_rank()
    return rank if rank is not None else site.plain_dim_rank(constants, imports)
