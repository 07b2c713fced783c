// Finding the `warp-harness` command line: the server (`... serve`) and the CLI (`... ci`).
import * as fs from "node:fs";
import * as path from "node:path";

export interface CommandLine {
  command: string;
  args: string[];
}

export interface CommandSettings {
  /** warpHarness.server.command: a full command line, e.g. ["/venv/bin/warp-harness", "serve"]. */
  command: string[];
  /** warpHarness.server.interpreter: a Python that has warp-harness installed. */
  interpreter: string;
}

export type Resolution = { ok: true; line: CommandLine; how: string } | { ok: false; reason: string };

const IS_WINDOWS = process.platform === "win32";

function isExecutableFile(file: string): boolean {
  try {
    const stat = fs.statSync(file);
    if (!stat.isFile()) {
      return false;
    }
    if (IS_WINDOWS) {
      return true;
    }
    fs.accessSync(file, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** Where `name` is on PATH (like `which`), or undefined. A name with a slash is checked as is. */
export function findExecutable(name: string, envPath: string | undefined = process.env.PATH): string | undefined {
  if (name.includes("/") || (IS_WINDOWS && name.includes("\\"))) {
    return isExecutableFile(name) ? path.resolve(name) : undefined;
  }
  const exts = IS_WINDOWS ? ["", ".exe", ".cmd", ".bat"] : [""];
  for (const dir of (envPath ?? "").split(path.delimiter)) {
    if (dir === "") {
      continue;
    }
    for (const ext of exts) {
      const candidate = path.join(dir, name + ext);
      if (isExecutableFile(candidate)) {
        return candidate;
      }
    }
  }
  return undefined;
}

/** `${workspaceFolder}` and `~` in a setting's value. */
export function expandVariables(value: string, workspaceFolder: string | undefined): string {
  let out = value;
  if (workspaceFolder !== undefined) {
    out = out.split("${workspaceFolder}").join(workspaceFolder);
  }
  const home = process.env.HOME ?? process.env.USERPROFILE;
  if (home !== undefined && (out === "~" || out.startsWith("~/"))) {
    out = home + out.slice(1);
  }
  return out;
}

const NOT_INSTALLED =
  "Install it into the Python environment you use for your kernels (`pip install warp-harness`), " +
  "then put that environment's `bin` folder on PATH or set `warpHarness.server.interpreter` " +
  "(or `warpHarness.server.command`).";

/**
 * How the server is started from an interpreter. `-I` (isolated mode): `python -m` would otherwise
 * put the current folder (the workspace) first on sys.path, and runpy imports a workspace
 * `warp_harness/` or stdlib-named module before our code can drop it. Isolated mode also ignores
 * PYTHON* variables and the user site, so the interpreter's environment (a venv, conda, the system)
 * must have warp-harness installed.
 */
export const INTERPRETER_ARGS = ["-I", "-m", "warp_harness", "serve"];

/** The real path of `file`, or `file` made absolute when it does not exist. */
function realPath(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}

/** Whether `file` (symlinks followed) lies inside one of `folders`. */
export function insideFolders(file: string, folders: string[]): boolean {
  const real = realPath(file);
  return folders.some((folder) => {
    const relative = path.relative(realPath(folder), real);
    const outside = relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative);
    return !outside;
  });
}

const UNTRUSTED =
  "VS Code does not trust this workspace, and a workspace can ship its own executables (a cloned " +
  "repository's `.venv/bin/warp-harness`), so none inside it is run. Trust the workspace " +
  "(Workspaces: Manage Workspace Trust), or install warp-harness outside it.";

/**
 * The command line that starts the language server:
 * 1. `warpHarness.server.command` as given;
 * 2. `<warpHarness.server.interpreter> -I -m warp_harness serve`;
 * 3. `warp-harness serve` from PATH, else from a `.venv` or `venv` in a workspace folder.
 *
 * Unless `workspaceTrusted`, no executable inside a workspace folder is chosen: PATH entries there
 * are skipped, and a setting that names one is refused with the reason.
 */
export function resolveServerCommand(
  settings: CommandSettings,
  workspaceFolders: string[],
  workspaceTrusted: boolean,
): Resolution {
  const first = workspaceFolders[0];
  const allowed = (file: string): boolean => workspaceTrusted || !insideFolders(file, workspaceFolders);
  const command = settings.command.map((part) => expandVariables(part, first)).filter((part) => part !== "");
  if (command.length > 0) {
    const found = findExecutable(command[0]);
    if (found === undefined) {
      return {
        ok: false,
        reason: `The server command \`${command[0]}\` (warpHarness.server.command) was not found.`,
      };
    }
    if (!allowed(found)) {
      return {
        ok: false,
        reason: `The server command \`${found}\` (warpHarness.server.command) lies inside the workspace. ${UNTRUSTED}`,
      };
    }
    return { ok: true, line: { command: found, args: command.slice(1) }, how: "warpHarness.server.command" };
  }
  const interpreter = expandVariables(settings.interpreter.trim(), first);
  if (interpreter !== "") {
    const found = findExecutable(interpreter);
    if (found === undefined) {
      return {
        ok: false,
        reason: `The Python interpreter \`${interpreter}\` (warpHarness.server.interpreter) was not found.`,
      };
    }
    if (!allowed(found)) {
      return {
        ok: false,
        reason: `The Python interpreter \`${found}\` (warpHarness.server.interpreter) lies inside the workspace. ${UNTRUSTED}`,
      };
    }
    return { ok: true, line: { command: found, args: [...INTERPRETER_ARGS] }, how: "warpHarness.server.interpreter" };
  }
  // untrusted: a relative PATH entry could name a folder of the workspace too
  const pathDirs = (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter((dir) => dir !== "" && (workspaceTrusted || (path.isAbsolute(dir) && allowed(dir))));
  const onPath = findExecutable("warp-harness", pathDirs.join(path.delimiter));
  if (onPath !== undefined && allowed(onPath)) {
    return { ok: true, line: { command: onPath, args: ["serve"] }, how: "PATH" };
  }
  const binDir = IS_WINDOWS ? "Scripts" : "bin";
  let skipped: string | undefined;
  for (const folder of workspaceFolders) {
    for (const venv of [".venv", "venv"]) {
      const candidate = findExecutable(path.join(folder, venv, binDir, IS_WINDOWS ? "warp-harness.exe" : "warp-harness"));
      if (candidate === undefined) {
        continue;
      }
      if (!workspaceTrusted) {
        skipped ??= candidate;
        continue;
      }
      return { ok: true, line: { command: candidate, args: ["serve"] }, how: `${venv} in ${folder}` };
    }
  }
  if (skipped !== undefined) {
    return { ok: false, reason: `\`warp-harness\` was not found on PATH; \`${skipped}\` is not run: ${UNTRUSTED}` };
  }
  return { ok: false, reason: `\`warp-harness\` was not found on PATH nor in a workspace .venv. ${NOT_INSTALLED}` };
}

/**
 * The CLI command line for `warp-harness <subcommand> <args>`: the server's command line with its
 * trailing `serve` (and what follows it, e.g. `--tcp`) replaced.
 */
export function cliCommand(server: CommandLine, subcommand: string, args: string[]): CommandLine {
  const serveAt = server.args.lastIndexOf("serve");
  const base = serveAt >= 0 ? server.args.slice(0, serveAt) : server.args;
  return { command: server.command, args: [...base, subcommand, ...args] };
}
