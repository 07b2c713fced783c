// Mapping between VS Code's `warpHarness.*` settings and the server's settings (the snake_case keys
// of `[tool.warp-harness]`). Pure functions: no `vscode` import, so they are easy to reason about.

/** A severity the server applies to a rule's records (`severity` of `[tool.warp-harness]`). */
export type SeverityLevel = "error" | "warning" | "info" | "hint";

/** The server's settings, as sent in initializationOptions and workspace/didChangeConfiguration. */
export interface ServerSettings {
  target?: string;
  select?: string[];
  ignore?: string[];
  severity?: Record<string, SeverityLevel>;
  debounce_ms?: number;
  daemon?: boolean;
  trust?: boolean;
  /** The daemon's `--replay-tolerances`: `{"[KERNEL.]DTYPE": [rtol, atol]}` (user settings only). */
  replay_tolerances?: Record<string, [number, number]>;
}

/** `warpHarness.severity` read: levels for the server, rules to hide, entries that mean nothing. */
export interface RuleSeverities {
  levels: Record<string, SeverityLevel>;
  /** Rules set to "off": their diagnostics are not shown (the server has no "off" level). */
  off: string[];
  /** `rule: value` entries that were refused, to report. */
  invalid: string[];
}

const LEVEL_NAMES: Record<string, SeverityLevel | "off"> = {
  error: "error",
  warning: "warning",
  info: "info",
  information: "info",
  hint: "hint",
  off: "off",
};

/** A rule id as the server spells it (`wh013` -> `WH013`); undefined for anything else. */
function ruleId(key: string): string | undefined {
  const id = key.trim().toUpperCase();
  return /^[A-Z]+[0-9]+$/.test(id) ? id : undefined;
}

/** `warpHarness.severity` ({rule id: error | warning | info | hint | off}) split by what handles it. */
export function ruleSeverities(value: unknown): RuleSeverities {
  const out: RuleSeverities = { levels: {}, off: [], invalid: [] };
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return out;
  }
  for (const [key, raw] of Object.entries(value as Record<string, unknown>)) {
    const id = ruleId(key);
    const level = typeof raw === "string" ? LEVEL_NAMES[raw.trim().toLowerCase()] : undefined;
    if (id === undefined || level === undefined) {
      out.invalid.push(`${key}: ${JSON.stringify(raw)}`);
    } else if (level === "off") {
      out.off.push(id);
    } else {
      out.levels[id] = level;
    }
  }
  return out;
}

/** The server's `--log-level` values (`warp-harness serve --help`). */
export const LOG_LEVELS = ["debug", "info", "warning", "error"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** `warpHarness.logLevel` when set explicitly to a level the server knows, else undefined. */
export function logLevel(inspect: Inspector): LogLevel | undefined {
  const value = explicitValue(inspect<string>("logLevel"));
  return (LOG_LEVELS as readonly string[]).includes(value ?? "") ? (value as LogLevel) : undefined;
}

/** What `WorkspaceConfiguration.inspect` returns, reduced to the levels that matter here. */
export interface Inspected<T> {
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/** Reads one setting: `inspect(key)` of a WorkspaceConfiguration. */
export type Inspector = <T>(key: string) => Inspected<T> | undefined;

/** The value a person set explicitly (folder over workspace over user), or undefined. */
export function explicitValue<T>(inspected: Inspected<T> | undefined): T | undefined {
  if (inspected === undefined) {
    return undefined;
  }
  return inspected.workspaceFolderValue ?? inspected.workspaceValue ?? inspected.globalValue;
}

/**
 * The settings to send to the server. Only what was set explicitly in VS Code is sent, so that
 * anything left alone comes from `[tool.warp-harness]` in the workspace's pyproject.toml.
 *
 * `trust` lets the daemon execute workspace code: it is read from the user's settings only (a
 * workspace's own .vscode/settings.json must not be able to trust itself), and it is sent as
 * `false` whenever VS Code does not trust the workspace, which also overrides `trust = true` in
 * the workspace's pyproject.toml.
 */
export function serverSettings(inspect: Inspector, workspaceTrusted: boolean): ServerSettings {
  const settings: ServerSettings = {};
  const target = explicitValue(inspect<string>("target"));
  if (typeof target === "string" && target.trim() !== "") {
    settings.target = target.trim();
  }
  const select = explicitValue(inspect<string[]>("select"));
  if (Array.isArray(select) && select.length > 0) {
    settings.select = select.map((s) => s.trim()).filter((s) => s !== "");
  }
  const ignore = explicitValue(inspect<string[]>("ignore"));
  if (Array.isArray(ignore) && ignore.length > 0) {
    settings.ignore = ignore.map((s) => s.trim()).filter((s) => s !== "");
  }
  const levels = ruleSeverities(explicitValue(inspect<Record<string, string>>("severity"))).levels;
  if (Object.keys(levels).length > 0) {
    settings.severity = levels;
  }
  const debounce = explicitValue(inspect<number>("debounceMs"));
  if (typeof debounce === "number" && Number.isFinite(debounce) && debounce >= 0) {
    settings.debounce_ms = Math.round(debounce);
  }
  const daemon = explicitValue(inspect<boolean>("daemon"));
  if (typeof daemon === "boolean") {
    settings.daemon = daemon;
  }
  if (!workspaceTrusted) {
    settings.trust = false;
  } else {
    const trust = inspect<boolean>("trust")?.globalValue;
    if (typeof trust === "boolean") {
      settings.trust = trust;
    }
  }
  const tolerances = replayTolerances(inspect<Record<string, unknown>>("replayTolerances")?.globalValue);
  if (tolerances !== undefined) {
    settings.replay_tolerances = tolerances;
  }
  return settings;
}

/**
 * `warpHarness.replayTolerances` from the user's settings: the `[rtol, atol]` pairs of two numbers
 * >= 0 (the server checks the keys: a float dtype or KERNEL.DTYPE); undefined when none is set. A
 * workspace's settings are never read: a looser tolerance hides a changed result.
 */
export function replayTolerances(value: unknown): Record<string, [number, number]> | undefined {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return undefined;
  }
  const out: Record<string, [number, number]> = {};
  for (const [key, pair] of Object.entries(value as Record<string, unknown>)) {
    if (
      Array.isArray(pair) &&
      pair.length === 2 &&
      pair.every((v) => typeof v === "number" && Number.isFinite(v) && v >= 0)
    ) {
      out[key.trim()] = [pair[0] as number, pair[1] as number];
    }
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** Settings whose change needs a new server process rather than a didChangeConfiguration. */
export const RESTART_SETTINGS = [
  "warpHarness.server.command",
  "warpHarness.server.interpreter",
  "warpHarness.logLevel",
  "warpHarness.enable",
];
