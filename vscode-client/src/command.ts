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

/** Whether `file` lies inside one of `folders`, relative paths compared as given (no link followed). */
function under(file: string, folders: string[]): boolean {
  return folders.some((folder) => {
    const relative = path.relative(folder, file);
    const outside = relative === ".." || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative);
    return !outside;
  });
}

/** Whether `file` (symlinks followed) lies inside one of `folders`. */
export function insideFolders(file: string, folders: string[]): boolean {
  return under(realPath(file), folders.map(realPath));
}

/** Whether `file` as named (no link followed), or what it leads to, lies inside one of `folders`. */
function namedOrLeadsInside(file: string, folders: string[]): boolean {
  const named = path.resolve(file);
  return under(named, [...folders.map((f) => path.resolve(f)), ...folders.map(realPath)]) || insideFolders(named, folders);
}

/**
 * Whether a command-line argument (or the value of an `--option=value` one) is an absolute path
 * inside a workspace folder: a script, a module folder or a file to write that the workspace controls.
 */
function namesWorkspacePath(arg: string, folders: string[]): boolean {
  const value = arg.startsWith("-") && arg.includes("=") ? arg.slice(arg.indexOf("=") + 1) : arg;
  return path.isAbsolute(value) && namedOrLeadsInside(value, folders);
}

const PYVENV_CFG_MAX_BYTES = 64 * 1024;

/** The `home` of a pyvenv.cfg (the interpreter's own folder Python takes the standard library from). */
function pyvenvHome(cfg: string): string | undefined {
  try {
    if (fs.statSync(cfg).size > PYVENV_CFG_MAX_BYTES) {
      return undefined;
    }
    const match = /^[ \t]*home[ \t]*=[ \t]*(.*?)[ \t]*$/m.exec(fs.readFileSync(cfg, "utf8"));
    return match?.[1] || undefined;
  } catch {
    return undefined;
  }
}

function exists(file: string): boolean {
  try {
    fs.lstatSync(file);
    return true;
  } catch {
    return false;
  }
}

/**
 * Why running `file` would run what a workspace controls, or undefined. `file` is judged as
 * configured (variables substituted, links not resolved): Python takes its environment from the
 * path it was started as, not from where a link leads. A `.venv/bin/python` shipped as a link to the
 * system Python, beside a shipped `pyvenv.cfg`, is the system Python running the workspace's
 * site-packages and their `.pth` files (which Python executes at start-up). So it is refused when
 * the path as named lies inside a workspace folder, when it or the folders Python looks in for
 * `pyvenv.cfg` (the executable's, and the one above) lead into one, when that `pyvenv.cfg` is a
 * workspace file, or when its `home` lies inside one.
 */
export function workspaceReason(file: string, folders: string[]): string | undefined {
  if (folders.length === 0) {
    return undefined;
  }
  const named = path.resolve(file);
  const resolvedFolders = [...folders.map((f) => path.resolve(f)), ...folders.map(realPath)];
  if (under(named, resolvedFolders)) {
    return "lies inside the workspace";
  }
  if (insideFolders(named, folders)) {
    return `lies inside the workspace (it is a link to \`${realPath(named)}\`)`;
  }
  const bin = path.dirname(named);
  for (const dir of [bin, path.dirname(bin)]) {
    if (insideFolders(dir, folders)) {
      return `lies inside the workspace (its folder \`${dir}\` leads to \`${realPath(dir)}\`)`;
    }
    const cfg = path.join(dir, "pyvenv.cfg");
    if (!exists(cfg)) {
      continue;
    }
    if (insideFolders(cfg, folders)) {
      return `lies inside the workspace (its environment file \`${cfg}\` is the workspace's \`${realPath(cfg)}\`)`;
    }
    const home = pyvenvHome(cfg);
    if (home !== undefined && namedOrLeadsInside(home, folders)) {
      return `lies inside the workspace (the \`home\` of its \`${cfg}\` is \`${home}\`)`;
    }
  }
  return undefined;
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
 * Unless `workspaceTrusted`, no executable inside a workspace folder is chosen (`workspaceReason`:
 * judged by the path as configured, and by where it and its environment lead): PATH entries there
 * are skipped, and a setting that names one is refused with the reason.
 */
export function resolveServerCommand(
  settings: CommandSettings,
  workspaceFolders: string[],
  workspaceTrusted: boolean,
): Resolution {
  const first = workspaceFolders[0];
  const refused = (file: string): string | undefined =>
    workspaceTrusted ? undefined : workspaceReason(file, workspaceFolders);
  const command = settings.command.map((part) => expandVariables(part, first)).filter((part) => part !== "");
  if (command.length > 0) {
    const found = findExecutable(command[0]);
    if (found === undefined) {
      return {
        ok: false,
        reason: `The server command \`${command[0]}\` (warpHarness.server.command) was not found.`,
      };
    }
    const why = refused(found);
    if (why !== undefined) {
      return { ok: false, reason: `The server command \`${found}\` (warpHarness.server.command) ${why}. ${UNTRUSTED}` };
    }
    const argument = workspaceTrusted ? undefined : command.slice(1).find((arg) => namesWorkspacePath(arg, workspaceFolders));
    if (argument !== undefined) {
      return {
        ok: false,
        reason: `The server command's argument \`${argument}\` (warpHarness.server.command) lies inside the workspace. ${UNTRUSTED}`,
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
    const why = refused(found);
    if (why !== undefined) {
      return {
        ok: false,
        reason: `The Python interpreter \`${found}\` (warpHarness.server.interpreter) ${why}. ${UNTRUSTED}`,
      };
    }
    return { ok: true, line: { command: found, args: [...INTERPRETER_ARGS] }, how: "warpHarness.server.interpreter" };
  }
  // untrusted: a relative PATH entry could name a folder of the workspace too
  const pathDirs = (process.env.PATH ?? "")
    .split(path.delimiter)
    .filter(
      (dir) =>
        dir !== "" && (workspaceTrusted || (path.isAbsolute(dir) && !namedOrLeadsInside(dir, workspaceFolders))),
    );
  const onPath = findExecutable("warp-harness", pathDirs.join(path.delimiter));
  if (onPath !== undefined && refused(onPath) === undefined) {
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

/**
 * The server's command line with `--log-level LEVEL` (`warpHarness.logLevel`) appended, replacing
 * one already there; unchanged when no level is set, so a wrapper script that takes no such
 * option keeps working until someone sets one.
 */
export function withLogLevel(server: CommandLine, level: string | undefined): CommandLine {
  if (level === undefined) {
    return server;
  }
  const args: string[] = [];
  for (let i = 0; i < server.args.length; i++) {
    const arg = server.args[i];
    if (arg === "--log-level") {
      i++; // and its value
    } else if (!arg.startsWith("--log-level=")) {
      args.push(arg);
    }
  }
  return { command: server.command, args: [...args, "--log-level", level] };
}
