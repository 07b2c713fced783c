// Mapping between VS Code's `warpHarness.*` settings and the server's settings (the snake_case keys
// of `[tool.warp-harness]`). Pure functions: no `vscode` import, so they are easy to reason about.

/** The server's settings, as sent in initializationOptions and workspace/didChangeConfiguration. */
export interface ServerSettings {
  target?: string;
  select?: string[];
  ignore?: string[];
  debounce_ms?: number;
  daemon?: boolean;
  trust?: boolean;
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
  return settings;
}

/** Settings whose change needs a new server process rather than a didChangeConfiguration. */
export const RESTART_SETTINGS = ["warpHarness.server.command", "warpHarness.server.interpreter"];
