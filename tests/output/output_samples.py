"""Sample findings shared by the renderer tests (imported by conftest.py and the tests)."""

from __future__ import annotations

from warp_harness.output.model import FileResult, RuleInfo
from warp_harness.record import Fix, Location, Record, Related, Severity, Stage, TextEdit
from warp_harness.rules.base import DOCS_URL

KERNEL_SOURCE = (
    "import warp as wp",
    "TILE_K = 64",
    "@wp.kernel",
    "def gemm(a: wp.array2d(dtype=float), n: int):",
    "\tx = a[0, 0]",
    "    wp.tile_load(a, shape=(TILE_K, 16))",
)

DOC_URL = DOCS_URL + "#"


def make_rules() -> dict[str, RuleInfo]:
    return {
        "WH003": RuleInfo(
            id="WH003",
            name="array-annotation",
            summary="Kernel array parameters need a dtype",
            severity=Severity.WARNING,
            doc=(
                "Why: Warp needs the element type at compile time.\n\n"
                "Bad: `a: wp.array`\n\nGood: `a: wp.array(dtype=float)`"
            ),
            url=DOC_URL + "wh003",
        ),
        "WH007": RuleInfo(
            id="WH007",
            name="tile-shared-memory",
            summary="Tiles must fit in the shared memory of one block",
            severity=Severity.ERROR,
            doc="Why: the launch fails on the device.",
            url=DOC_URL + "wh007",
        ),
        "WH010": RuleInfo(
            id="WH010",
            name="int-loop-bound",
            summary="Loop bounds are better as ints",
            severity=Severity.INFO,
            doc="",
            url="",
        ),
        "WH001": RuleInfo(
            id="WH001",
            name="unused-rule",
            summary="Not fired in these samples",
            severity=Severity.ERROR,
            doc="Some doc.",
            url=DOC_URL + "wh001",
        ),
    }


SHARED_MEMORY = Record(
    stage=Stage.CONSTRAINT,
    rule="WH007",
    severity=Severity.ERROR,
    location=Location("k.py", 2, 0, 2, 6, kernel="gemm"),
    message="tiles need 96 KiB of shared memory; sm_86 allows 48 KiB per block",
    expected=49152,
    actual=98304,
    hint="lower TILE_K from 64 to 32",
    fix=Fix("Set TILE_K = 32", (TextEdit(2, 9, 2, 11, "32"),)),
    related=(Related(Location("launch.py", 10, 4, 10, 30), "launched here with block_dim=256"),),
)
ANNOTATION = Record(
    stage=Stage.CONSTRAINT,
    rule="WH003",
    severity=Severity.WARNING,
    location=Location("k.py", 4, 9, 4, 35, kernel="gemm"),
    message="parameter 'a' has no dtype",
    hint="write wp.array2d(dtype=wp.float32)",
)
COMPILE = Record(
    stage=Stage.COMPILE,
    rule="compile-error",
    severity=Severity.ERROR,
    location=Location("k.py", 5, 0),
    message="Warp codegen failed:\nCouldn't find function overload for 'add'",
)
LOOP_INFO = Record(
    stage=Stage.CONSTRAINT,
    rule="WH010",
    severity=Severity.INFO,
    location=Location("k.py", 6, 4, 6, 16),
    message="loop bound is a float",
    fix=Fix("Use int(n)", (TextEdit(6, 4, 6, 16, "int(n)"),), safe=False),
)
PERFORMANCE = Record(
    stage=Stage.PERFORMANCE,
    rule="performance-target",
    severity=Severity.WARNING,
    location=Location("perf.py", 3, 0, 3, 10, kernel="saxpy"),
    message="bandwidth utilisation 42% is below the target 80%",
    expected=0.8,
    actual=0.42,
)


def make_results() -> list[FileResult]:
    return [
        FileResult("k.py", (SHARED_MEMORY, ANNOTATION, COMPILE, LOOP_INFO), KERNEL_SOURCE),
        FileResult("ok.py", ()),
        FileResult("perf.py", (PERFORMANCE,)),
    ]
