// What the editor shows of the server's diagnostics: `warpHarness.severity` applied (also to the
// daemon's dynamic-tier records, which the server passes on as the daemon sent them), rules set to
// "off" hidden, and nothing for a document whose folder has `warpHarness.enable` off. Pure: no
// `vscode` import, so the unit tests run it on plain objects.
import type { RuleSeverities, SeverityLevel } from "./settings";

/** vscode.DiagnosticSeverity's values (Error 0, Warning 1, Information 2, Hint 3). */
export const DIAGNOSTIC_SEVERITY: Record<SeverityLevel, number> = { error: 0, warning: 1, info: 2, hint: 3 };

/** The part of a vscode.Diagnostic this module reads and writes. */
export interface DiagnosticLike {
  code?: string | number | { value: string | number; target: unknown };
  severity: number;
}

/** The rule id of a diagnostic (its `code`, which may carry a link to the rule's docs). */
export function ruleOf(diagnostic: DiagnosticLike): string | undefined {
  const code = typeof diagnostic.code === "object" && diagnostic.code !== null ? diagnostic.code.value : diagnostic.code;
  return code === undefined ? undefined : String(code).toUpperCase();
}

/** The diagnostics to show: "off" rules dropped, the others at the severity the setting gives. */
export function adjustDiagnostics<T extends DiagnosticLike>(diagnostics: T[], rules: RuleSeverities): T[] {
  if (rules.off.length === 0 && Object.keys(rules.levels).length === 0) {
    return diagnostics;
  }
  const off = new Set(rules.off);
  const out: T[] = [];
  for (const diagnostic of diagnostics) {
    const rule = ruleOf(diagnostic);
    if (rule !== undefined && off.has(rule)) {
      continue;
    }
    const level = rule === undefined ? undefined : rules.levels[rule];
    if (level !== undefined) {
      diagnostic.severity = DIAGNOSTIC_SEVERITY[level];
    }
    out.push(diagnostic);
  }
  return out;
}

/**
 * Whether the server runs at all: some folder has `warpHarness.enable` on, or, with no folder
 * open, the window's value is on.
 */
export function serverWanted(folderEnabled: boolean[], windowEnabled: boolean): boolean {
  return folderEnabled.length === 0 ? windowEnabled : folderEnabled.some((on) => on);
}
