"""Rule ids of the dynamic tier and small helpers to build their records.

The static tier owns ``WH###``; findings of the daemon use ``WHD###`` so that
``select``/``ignore`` of static rules never hide a crash or a wrong result.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from warp_harness.record import Location, Record, Related, Severity, Stage
from warp_harness.rules.base import DOCS_URL  # one docs/rules.md for both tiers

IMPORT_ERROR = "WHD001"
CODEGEN_ERROR = "WHD002"
COMPILE_ERROR = "WHD003"
DEVICE_SKIPPED = "WHD004"
CRASH = "WHD010"
BOUNDS = "WHD011"
TIMEOUT = "WHD012"
MEMORY = "WHD013"
MISMATCH = "WHD020"
UNWRITTEN = "WHD021"
NONFINITE = "WHD022"
INPUT_MUTATED = "WHD023"
CONTRACT_ERROR = "WHD024"
VALIDATED = "WHD025"
TARGET_MISSED = "WHD030"
MEASURED = "WHD031"
IMPLAUSIBLE = "WHD032"
TARGET_UNCHECKED = "WHD033"
UNTRUSTED = "WHD050"
EVALUATOR_PATCHED = "WHD060"
WRONG_AFTER_TIMING = "WHD061"
SEED_INDEPENDENT = "WHD062"
CLOCK_DISAGREES = "WHD063"
PERSISTING_L2 = "WHD064"
VERDICT_DISAGREES = "WHD065"
CONTRACT_TAMPERED = "WHD066"
VERDICT_UNCONFIRMED = "WHD067"  # issue #37: the supervisor judges, failing closed
VACUOUS_CHECK = "WHD068"
NOT_HERMETIC = "WHD069"  # issue #37 item 1: the launching worker imported the kernel module
INFRASTRUCTURE = "WHD070"
INTERNAL = "WHD000"

TUNED = "WHD034"
# captured launches replayed (daemon/captured/)
REPLAY_BOUNDS = "WHD080"
REPLAY_UNWRITTEN = "WHD081"
BEHAVIOUR_CHANGED = "WHD082"
REPLAY_NONFINITE = "WHD083"
CAPTURE_REFUSED = "WHD084"
REPLAY_FAILED = "WHD085"
REPLAYED = "WHD086"
REPLAY_RACE = "WHD087"  # the CUDA oracles: CPU vs CUDA, CUDA twice
# captured launches timed against their baseline (daemon/captured/benchmark.py)
CAPTURED_SLOWER = "WHD090"
CAPTURED_FASTER = "WHD091"


@dataclass(frozen=True)
class DynamicRule:
    """One rule of the dynamic tier: what `warp-harness rule WHD020` prints."""

    id: str
    name: str
    stage: Stage
    severity: Severity  # the usual severity; a few ids are reported at more than one
    summary: str
    why: str
    todo: str

    @property
    def url(self) -> str:
        return f"{DOCS_URL}#{self.id.lower()}"

    def doc(self) -> str:
        return (
            f"## {self.id} {self.name}\n\n{self.summary[:1].upper()}{self.summary[1:]} "
            f"(dynamic tier, stage `{self.stage.value}`).\n\n"
            f"### Why it matters\n{self.why}\n\n### What to do\n{self.todo}"
        )


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO
DYNAMIC_RULES: tuple[DynamicRule, ...] = (
    DynamicRule(
        INTERNAL,
        "internal-error",
        Stage.INTERNAL,
        _E,
        "an internal error of warp-harness",
        "The harness itself failed; the kernel was not judged.",
        "Re-run with the same seed; if it repeats, report it with the record's message.",
    ),
    DynamicRule(
        IMPORT_ERROR,
        "import-error",
        Stage.COMPILE,
        _E,
        "the module raised while being imported (syntax error, missing annotation, ...)",
        "Nothing in a module that does not import can be compiled, validated or timed.",
        "Run the file with `python FILE`; fix the exception the record quotes (its line is the one shown).",
    ),
    DynamicRule(
        CODEGEN_ERROR,
        "codegen-error",
        Stage.COMPILE,
        _E,
        "Warp's code generator rejected the kernel",
        "Warp builds a kernel's C++/CUDA from its Python; a construct it cannot translate "
        "(a kernel returning a value, an unsupported call, a type mismatch) stops the whole module. "
        "In `ci --trust`, when a static rule (WH###) already reported an error in the kernel, the "
        "static record gets a related note `confirmed by Warp codegen (WHD002)` instead of a second record.",
        "Read Warp's message in the record; it points at the line the code generator was on.",
    ),
    DynamicRule(
        COMPILE_ERROR,
        "compile-error",
        Stage.COMPILE,
        _E,
        "the generated C++/CUDA did not compile or load",
        "Warp's generated code failed in the C++/CUDA compiler or the loader: usually a Warp bug, "
        "a broken toolchain or cache, or an option (fast_math, arch) the device does not take.",
        "Read the compiler output in the record; clear the kernel cache and retry; "
        "report it to Warp if it repeats on a clean cache.",
    ),
    DynamicRule(
        DEVICE_SKIPPED,
        "device-skipped",
        Stage.COMPILE,
        _I,
        "a configured device is not present; its steps were skipped",
        "A device listed in `devices` (e.g. cuda:0 on a CPU-only machine) cannot run anything: "
        "results hold for the other devices only.",
        "Drop the device from `[tool.warp-harness.runtime] devices`, or run where it exists.",
    ),
    DynamicRule(
        CRASH,
        "crash",
        Stage.CRASH,
        _E,
        "the worker process died while running the kernel (segfault, abort, illegal instruction)",
        "A crash usually means an out-of-bounds access or a bad pointer; only the sandboxed worker "
        "died, and it was restarted.",
        "Look at the indices the kernel reads and writes; a debug re-run (`localize`) places bounds "
        "errors on the line (WHD011).",
    ),
    DynamicRule(
        BOUNDS,
        "out-of-bounds",
        Stage.CRASH,
        _E,
        "a debug build asserted an out-of-bounds array access",
        "An access outside an array reads garbage or corrupts memory in a release build: wrong "
        "numbers, NaN, or a crash, differing from run to run.",
        "Guard the access (`if i + k < x.shape[0]`) or shrink the launch dim to the valid range.",
    ),
    DynamicRule(
        TIMEOUT,
        "timeout",
        Stage.TIMEOUT,
        _E,
        "a launch or job ran past its time limit; the worker was killed",
        "An endless loop or a launch far larger than intended never finishes.",
        "Check loop bounds and the launch dim; raise `timeout_s`/`launch_timeout_s` only if the "
        "work really is that long.",
    ),
    DynamicRule(
        MEMORY,
        "memory-limit",
        Stage.CRASH,
        _E,
        "the job ran past its memory limit",
        "The contract's inputs, the reference or the launch needed more memory than the worker may use.",
        "Lower the contract's sizes or raise `memory_mb` in `[tool.warp-harness.runtime]`.",
    ),
    DynamicRule(
        MISMATCH,
        "mismatch",
        Stage.NUMERIC,
        _E,
        "outputs differ from the reference beyond the tolerance",
        "The kernel computes something other than its reference on fresh random inputs "
        "(the seed is in the message; the smallest failing case is stored for `replay`).",
        "Follow the hint, chosen from the evidence: a race (integer data off by whole units, "
        "results that change between runs), an out-of-bounds read (wild values away from the "
        "end), or precision (small relative errors that grow with the size).",
    ),
    DynamicRule(
        UNWRITTEN,
        "unwritten-output",
        Stage.NUMERIC,
        _E,
        "output elements still hold the NaN poison: the kernel never wrote them",
        "Outputs are filled with a marked NaN before each run; elements that keep it were skipped.",
        "Make the launch dim cover the output; check early `return`s and guards (off by one at the end?).",
    ),
    DynamicRule(
        NONFINITE,
        "non-finite-output",
        Stage.NUMERIC,
        _E,
        "NaN or Inf in the output where the reference is finite",
        "An overflow, a division by zero, or a read of uninitialised or out-of-bounds memory.",
        "Subtract the maximum before exp; guard divisions; check the indices of the reads.",
    ),
    DynamicRule(
        INPUT_MUTATED,
        "input-mutated",
        Stage.NUMERIC,
        _E,
        "the kernel modified an input array",
        "Callers do not expect their inputs to change; a second launch then sees other data.",
        "Write to an output array, or list the array in `Contract.inplace` if the update is intended.",
    ),
    DynamicRule(
        CONTRACT_ERROR,
        "contract-error",
        Stage.NUMERIC,
        _E,
        "the contract itself is broken (generator/reference raised, unknown kernel ...)",
        "A contract that cannot run says nothing about the kernel; the record points at the "
        "`Contract(...)` call.",
        "Fix the contract: the generator's output must match the kernel's parameters, the "
        "reference must return the outputs by name.",
    ),
    DynamicRule(
        VALIDATED,
        "validated",
        Stage.NUMERIC,
        _I,
        "the kernel matched its reference on every size and edge case",
        "A note, not a problem: the sizes, the seed and the largest relative error are recorded.",
        "Nothing.",
    ),
    DynamicRule(
        TARGET_MISSED,
        "target-missed",
        Stage.PERFORMANCE,
        _W,
        "a declared performance target was not met",
        "The contract declares a target (e.g. `bandwidth_util >= 0.8`) the measurement is below.",
        "Profile the kernel; or lower the target if the profile's peak is not reachable here.",
    ),
    DynamicRule(
        MEASURED,
        "measured",
        Stage.PERFORMANCE,
        _I,
        "benchmark measurement",
        "A note: median time, spread and, with bytes/FLOPs in the contract, the share of the peak.",
        "Nothing.",
    ),
    DynamicRule(
        IMPLAUSIBLE,
        "implausible-measurement",
        Stage.PERFORMANCE,
        _W,
        "a measurement faster than the hardware allows: the kernel may skip its work",
        "A time below what the hardware's peak allows means the kernel did not do the work, "
        "or the contract's bytes/FLOPs are too high.",
        "Check the contract's `bytes`/`flops` and that the kernel writes every output.",
    ),
    DynamicRule(
        TARGET_UNCHECKED,
        "target-unchecked",
        Stage.PERFORMANCE,
        _W,
        "a performance target could not be evaluated (no bytes/FLOPs or peak known)",
        "A target needs the work done (bytes/FLOPs) and a peak from the hardware profile.",
        "Declare `bytes`/`flops` in the contract, or pass a profile (`--target`, `warp-harness calibrate`).",
    ),
    DynamicRule(
        TUNED,
        "tuned",
        Stage.PERFORMANCE,
        _I,
        "`warp-harness tune` found a faster configuration of the kernel's tunables",
        "A note from the language server with the stored tuning result.",
        "Apply the code action to set the tunables to the best configuration, or ignore it.",
    ),
    DynamicRule(
        EVALUATOR_PATCHED,
        "evaluator-patched",
        Stage.NUMERIC,
        _E,
        "the workspace rebound a function the harness launches, times or compares with",
        "Code under test runs in the worker that launches, times and checks it; a module that "
        "replaces `wp.launch`, `time.perf_counter`, Warp's event timing, `wp.array.numpy` or numpy's "
        "comparisons (at import, or from its reference or generator) can make a kernel look correct "
        "or fast. The worker saves those functions' identities before any workspace code runs and "
        "compares after the import, the validation and the benchmark; the originals are put back and "
        "the harness only ever calls the saved ones. A module built from its text (hermetic) never "
        "runs there, so its patches gain nothing; the supervisor still finds them in the text "
        "(daemon/tamper_scan.py: assignments to Warp's, numpy's, time's or the harness's attributes, "
        "setattr, a function's `__code__`/`__globals__`, ctypes memory writes, imports of the "
        "harness's internals) and gives the module's kernels no pass. Exploits: "
        "examples/exploits/patch_*.py, cached_results.py, stale_output.py, ctypes_code_swap.py, "
        "timed_swap.py.",
        "Remove the assignment (the record's line); launch and time the kernel as it is.",
    ),
    DynamicRule(
        WRONG_AFTER_TIMING,
        "wrong-after-timing",
        Stage.NUMERIC,
        _E,
        "after the timed loop, the benchmark's own buffers give wrong results on fresh inputs",
        "The validation runs each case once on fresh buffers at the contract's sizes; the benchmark "
        "launches many times into reused buffers at the benchmark size. After the timed loop the "
        "worker writes fresh seed-derived inputs into those same buffers, poisons the outputs, "
        "launches once more and compares with the reference: a kernel that turns wrong after the first "
        "calls, serves an earlier call's result, or skips work at sizes the validation does not cover "
        "is caught here. Exploits: examples/exploits/shrunk_size.py, stale_output.py.",
        "Make the kernel compute every output on every launch at every size; do not keep state "
        "between launches.",
    ),
    DynamicRule(
        SEED_INDEPENDENT,
        "seed-independent-output",
        Stage.NUMERIC,
        _W,
        "the outputs were the same for every seed: "
        "the validation cannot tell a kernel that ignores its inputs",
        "When the contract's generator gives inputs whose answer never changes (zeros, constants), "
        "a kernel that writes a constant passes its validation; the benchmark then times no real work.",
        "Draw the inputs from the generator's `rng` so different seeds give different answers.",
    ),
    DynamicRule(
        CLOCK_DISAGREES,
        "clock-disagreement",
        Stage.PERFORMANCE,
        _W,
        "the host clock around a synchronised window of launches disagrees with the event timings",
        "CUDA events time only the work on the stream they are recorded on; work moved to a side "
        "stream, or a patched event clock, makes them read short. Each timed window ends with a "
        "device synchronise and the host clock is compared with the events' sum.",
        "Launch all of the kernel's work on the stream it is given; "
        "do not create streams in the kernel's module.",
    ),
    DynamicRule(
        PERSISTING_L2,
        "persisting-l2",
        Stage.PERFORMANCE,
        _W,
        "the workspace set aside persisting L2 cache (CUDA): its data survives the cold-L2 flush",
        "A persisting-L2 carve-out (cudaLimitPersistingL2CacheSize with an access-policy window) "
        "keeps a buffer in L2 across launches and flushes, so cold-L2 timings read warm. The limit "
        "is read before the benchmark; a rise above its value before the workspace import is "
        "reported and undone.",
        "Do not change the device's cache limits from the kernel's module.",
    ),
    DynamicRule(
        VERDICT_DISAGREES,
        "verdict-disagrees",
        Stage.NUMERIC,
        _E,
        "the kernel's worker passed a case that fails against a reference "
        "computed where the kernel never ran",
        "The worker that runs a kernel also ran the module's own code, so its comparison can be "
        "gamed (a reference that echoes the output it finds in memory or in a file). A second worker "
        "that never builds or launches a kernel computes the references first, from the same seed, and "
        "the daemon compares the outputs the kernel's worker sent. Exploit: "
        "examples/exploits/reference_echo.py.",
        "Make the reference compute from its inputs only; it must not read the kernel's outputs.",
    ),
    DynamicRule(
        CONTRACT_TAMPERED,
        "contract-tampered",
        Stage.NUMERIC,
        _E,
        "a contract changed after it was built: its reference, generator, tolerance or sizes were "
        "rebound by other code",
        "A contract is the specification its kernel is judged by, but the daemon imports the kernel's "
        "module in the same process. Each contract's fields are fingerprinted when it is built "
        "(identities, and of functions their code, defaults, closures and the globals they read) and "
        "compared after the import, the validation and the benchmark; a sibling contract module must "
        "be the file itself, not a module planted in `sys.modules`. Rebound fields are put back. "
        "Exploits: examples/exploits/contract_rebind.py, contract_loosened.py.",
        "Leave the contract as written: change the kernel, not its reference, generator or tolerance.",
    ),
    DynamicRule(
        INFRASTRUCTURE,
        "infrastructure-failure",
        Stage.INTERNAL,
        _E,
        "the cluster could not run the job (a Ray worker or node died twice, or it has no GPU for "
        "a CUDA job): no verdict",
        "With `--executor ray` a job runs on a cluster's worker; a worker killed mid-job (preempted, "
        "out of memory, its node lost) says nothing about the kernel. The job is retried once on "
        "another worker; a second loss is reported as this record, never as a kernel's verdict, and "
        "the result is never cached, so the next run tries again. A job that runs kernels on CUDA "
        "on a cluster with no GPU is not submitted (it would wait for a GPU until its timeout): it "
        "is this record at once, and the module's other jobs (its CPU devices) keep their verdicts.",
        "Re-run; if it repeats, look at the cluster (`ray status`, the worker logs) rather than the "
        "kernel. No GPU: add GPU nodes (`ray start --num-gpus N`, a KubeRay GPU worker group with at "
        "least one replica) or run the CPU devices only (`--device cpu`).",
    ),
    DynamicRule(
        VERDICT_UNCONFIRMED,
        "verdict-unconfirmed",
        Stage.NUMERIC,
        _E,
        "the kernel's worker reported a pass the supervisor could not confirm: no outputs, no "
        "reference, other inputs, or a verdict worker that failed",
        "Whatever runs in a process can change what that process reports, and the kernel's worker "
        "runs the module's code. Only the supervisor, which runs no workspace code, writes a pass: it "
        "compares the outputs the kernel's worker sent, for every case of every kernel (the poisoned "
        "launch and the benchmark's timed buffers included), with references computed in a worker "
        "that never ran the kernel. It fails closed: a case with no outputs, no reference, or inputs "
        "whose digest differs between the two workers, or a verdict worker that errs or times out, "
        "withdraws the pass. Exploits: examples/exploits/silent_worker.py, reference_refuses.py.",
        "Make the contract's generator a function of (size, rng) and its reference a function of its "
        "inputs; do not patch the harness. A verdict worker that timed out: lower the contract's sizes.",
    ),
    DynamicRule(
        VACUOUS_CHECK,
        "vacuous-check",
        Stage.NUMERIC,
        _E,
        "the outputs pass every case before the kernel runs (as the launch finds them, or zeros): "
        "the contract cannot tell a kernel that does nothing from this one",
        "An in-place kernel whose reference changes its input by less than the tolerance, or a "
        "generator of zeros whose reference is zero, passes a kernel that does nothing. The supervisor "
        "compares each output's starting values (and zeros) with the reference too; when that passes "
        "in every case, the validation proved nothing and the pass is withdrawn. Exploit: "
        "examples/exploits/inplace_noop.py; examples/contracts/too_fast.py.",
        "Draw inputs whose answer differs from the outputs' starting values (random values from "
        "`rng`), or tighten the tolerance below the change the kernel makes.",
    ),
    DynamicRule(
        NOT_HERMETIC,
        "not-hermetic",
        Stage.NUMERIC,
        _W,
        "the verdict is not hermetic: the kernel could not be built from its source alone, so the "
        "worker that launched and timed it imported its module (its top-level code ran there)",
        "A hermetic build takes from the module's text only the kernel, the `@wp.func`s and "
        "`@wp.struct`s it reaches and the constants they read, and the contract: from a sibling "
        "`<module>_contract.py` that imports the module's kernels, or from the module's own top-level "
        "`Contract(...)` or `@define` statements with only what they reach (functions, literals, "
        "lambdas, library imports), never the rest of its top-level code. A kernel made by a factory "
        "or closing over run-time state, or a contract that reaches code run at import (a call of the "
        "module's own function, a class, a name rebound at run time), cannot be built that way; it is "
        "validated by importing the module, and code at the module's top level (a patch of numpy, of "
        "the harness) ran in the process that measured it. The message says why. `warp-harness ci "
        "--require-hermetic` makes this an error.",
        "Define the kernel at module level with `@wp.kernel`, reading only `@wp.func`s, `@wp.struct`s "
        "and constants of the module, and its contract at the module's top level (or in a sibling "
        "`<module>_contract.py`), reaching only functions, literals and library imports.",
    ),
    DynamicRule(
        REPLAY_BOUNDS,
        "replay-out-of-bounds",
        Stage.CRASH,
        _E,
        "a captured launch, replayed with bounds checks, indexes an array out of bounds",
        "Release builds do not check indices (warp#667): an edit that reads one past the end returns "
        "garbage or corrupts the heap silently. The replay runs the kernel's bounds probe (a debug build "
        "with an assertion before every array access) on the exact arguments of a real launch "
        "(`warp-harness capture`), so the access stops at its line.",
        "Fix the index or guard it (`if i < a.shape[0]`); the record names the launch (file:line, test) "
        "and the arrays' extents.",
    ),
    DynamicRule(
        REPLAY_UNWRITTEN,
        "replay-unwritten-output",
        Stage.NUMERIC,
        _E,
        "a replayed launch left elements unwritten that the captured run wrote",
        "Arrays the kernel only writes are filled with NaN (integers: a sentinel) before the replay; an "
        "element the recorded run wrote that is still poison afterwards was skipped: a 1-D `wp.tid()` "
        "under a 2-D launch, an early `return`, a wrong launch dim or guard.",
        "Look at the first index the record gives and why no thread writes it.",
    ),
    DynamicRule(
        BEHAVIOUR_CHANGED,
        "behaviour-changed",
        Stage.NUMERIC,
        _W,
        "a replayed launch's outputs differ from the accepted baseline",
        "The outputs of a real launch, stored at capture (or at the last `warp-harness accept`), are the "
        "reference when nobody wrote one: after an edit, any element beyond the dtype's tolerance shows "
        "at once (count, max absolute and relative error, first index), as a snapshot test does.",
        "If the change is intended, run `warp-harness accept FILE::KERNEL --trust`; otherwise the edit "
        "changed the kernel's results.",
    ),
    DynamicRule(
        REPLAY_NONFINITE,
        "replay-nonfinite",
        Stage.NUMERIC,
        _W,
        "a replayed launch produced NaN or Inf from finite inputs where the baseline had none",
        "A division by zero, a `sqrt` of a negative or an overflow introduced by an edit turns finite "
        "inputs into non-finite outputs, which then spread through every later step.",
        "Look at the first index the record gives; guard the operation or fix the formula.",
    ),
    DynamicRule(
        CAPTURE_REFUSED,
        "capture-refused",
        Stage.INTERNAL,
        _W,
        "a capture file was refused: unsigned, wrongly signed, corrupt or not plain data",
        "Captures live in the workspace, which is untrusted: only an index this user's warp-harness signed, "
        "naming arrays whose bytes still hash to their names, is replayed. Anything else (a file shipped "
        "in a repository, planted by another user, or damaged) is never loaded or executed.",
        "Delete it (`warp-harness capture --prune` drops what it cannot verify) and capture again.",
    ),
    DynamicRule(
        REPLAY_FAILED,
        "replay-failed",
        Stage.CRASH,
        _W,
        "a captured launch could not be replayed (the launch raised, the worker died or timed out)",
        "The saved kernel no longer takes the captured arguments, or its module cannot be built, or the "
        "replay crashed for a reason other than a bounds check.",
        "Read the message; capture again if the kernel's signature changed on purpose.",
    ),
    DynamicRule(
        REPLAY_RACE,
        "replay-likely-race",
        Stage.NUMERIC,
        _W,
        "a captured launch gives different results on the CPU and on CUDA, or in two runs on CUDA",
        "Warp runs a CPU launch's threads one after another, so a non-atomic read-modify-write "
        "(`s[0] = s[0] + x[i]`, a histogram's `h[b] = h[b] + 1`; Warp compiles `a[j] += v` as an atomic "
        "add) or a compare-then-store "
        "(`if d < best[k]: best[k] = d`) gives the right answer there and loses updates on a GPU, where the "
        "threads race. When a CUDA device is present (and the workspace's devices allow it, or the launch "
        "was captured on CUDA), the replay runs the captured launch once on the CPU and twice on CUDA; "
        "elements that differ beyond a few ulps (for arrays summed into with atomics, beyond what the "
        "order of the sum explains) are "
        "reported with their count, the first of them and the launch. On a machine without CUDA it does "
        "not run; the replay's summary (WHD086) says so.",
        "Make the update atomic (`wp.atomic_add`, `wp.atomic_min`, ...) or give each thread its own output "
        "element; a difference between CPU and CUDA builds with two agreeing CUDA runs may also be a "
        "backend difference (fast math, a builtin's precision).",
    ),
    DynamicRule(
        REPLAYED,
        "replayed",
        Stage.NUMERIC,
        _I,
        "captured launches of the kernel were replayed and matched their baseline",
        "Says which captured launches judged the kernel (with no contract, they are its only oracle).",
        "Nothing.",
    ),
    DynamicRule(  # capb (#31 item 4)
        CAPTURED_SLOWER,
        "captured-launch-slower",
        Stage.PERFORMANCE,
        _W,
        "a changed kernel's captured launches run slower than the accepted source's, beyond the spread "
        "measured on this machine",
        "A captured launch is timed at its real size by the benchmark step's own loop and compared with "
        "the timing of the accepted source kept in your private cache: the ratio of medians with a 99% "
        "bootstrap interval, against the ratios that unchanged code shows between runs on this machine "
        "(no fixed percentage). The whole interval lies beyond that spread: the edit made it slower.",
        "Intended (more work for a better result)? `warp-harness accept FILE::KERNEL --trust` makes the "
        "source the baseline. Otherwise profile the edit: an inner loop, a lost early exit, atomics.",
    ),
    DynamicRule(  # capb (#31 item 4)
        CAPTURED_FASTER,
        "captured-launch-faster",
        Stage.PERFORMANCE,
        _I,
        "a changed kernel's captured launches run faster than the accepted source's, beyond the spread "
        "measured on this machine",
        "The same comparison as WHD090, the other way: an optimisation that shows on the real launches.",
        "Nothing; `warp-harness accept FILE::KERNEL --trust` makes it the baseline.",
    ),
    DynamicRule(
        UNTRUSTED,
        "untrusted",
        Stage.INTERNAL,
        _I,
        "the workspace is not trusted: only the static tier ran",
        "The dynamic tier executes the workspace's code; it does so only for trusted workspaces.",
        "Pass `--trust` or set `trust = true` in your own settings if you trust the code.",
    ),
)
DYNAMIC_RULES = tuple(sorted(DYNAMIC_RULES, key=lambda r: r.id))  # listed and documented in id order
BY_ID: dict[str, DynamicRule] = {r.id: r for r in DYNAMIC_RULES}
DESCRIPTIONS = {r.id: r.summary for r in DYNAMIC_RULES}


def dynamic_rule(rule: str) -> DynamicRule | None:
    """The dynamic rule with this id (WHD020) or name (mismatch)."""
    wanted = rule.strip()
    return BY_ID.get(wanted.upper()) or next((r for r in DYNAMIC_RULES if r.name == wanted.lower()), None)


def dynamic_markdown() -> str:
    """The dynamic tier's section of docs/rules.md."""
    out = [
        "# Dynamic rules",
        "",
        "Findings of the daemon and `warp-harness ci --trust` (they run the code); "
        "`select`/`ignore` do not hide them.",
        "",
        "| id | name | stage | severity | summary |",
        "|---|---|---|---|---|",
    ]
    for r in DYNAMIC_RULES:
        out.append(
            f"| [{r.id}](#{r.id.lower()}) | {r.name} | {r.stage.value} | {r.severity.value} | {r.summary} |"
        )
    out.append("")
    for r in DYNAMIC_RULES:
        out += [f'<a id="{r.id.lower()}"></a>', "", r.doc(), ""]
    return "\n".join(out)


def make_record(
    stage: Stage,
    rule: str,
    severity: Severity,
    path: str,
    line: int,
    message: str,
    *,
    col: int = 0,
    end_line: int | None = None,
    end_col: int | None = None,
    kernel: str | None = None,
    expected: Any = None,
    actual: Any = None,
    hint: str | None = None,
    related: tuple[Related, ...] = (),
) -> Record:
    return Record(
        stage=stage,
        rule=rule,
        severity=severity,
        location=Location(
            path=path, line=max(int(line), 1), col=col, end_line=end_line, end_col=end_col, kernel=kernel
        ),
        message=message,
        expected=expected,
        actual=actual,
        hint=hint,
        related=related,
    )


def contract_position(source_lines: Sequence[str], kernel: str) -> tuple[int, int, int] | None:
    """(line, col, end_col) of the ``Contract(...)`` call whose ``kernel=`` (or first argument)
    names ``kernel`` in this source, or None (the contract is in a sibling file, or is built
    in a way the source does not show)."""
    try:
        tree = ast.parse("\n".join(source_lines))
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if (func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)) != "Contract":
            continue
        named = [k.value for k in node.keywords if k.arg == "kernel"] or node.args[:1]
        if named and _names(named[0]) == kernel:
            end = node.end_col_offset if node.end_lineno == node.lineno else None
            return (
                node.lineno,
                node.col_offset,
                end if end is not None else len(source_lines[node.lineno - 1]),
            )
    return None


def _names(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None
