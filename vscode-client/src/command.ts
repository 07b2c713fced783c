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
 * The command line that starts the language server:
 * 1. `warpHarness.server.command` as given;
 * 2. `<warpHarness.server.interpreter> -m warp_harness serve`;
 * 3. `warp-harness serve` from PATH, else from a `.venv` or `venv` in a workspace folder.
 */
export function resolveServerCommand(settings: CommandSettings, workspaceFolders: string[]): Resolution {
  const first = workspaceFolders[0];
  const command = settings.command.map((part) => expandVariables(part, first)).filter((part) => part !== "");
  if (command.length > 0) {
    const found = findExecutable(command[0]);
    if (found === undefined) {
      return {
        ok: false,
        reason: `The server command \`${command[0]}\` (warpHarness.server.command) was not found.`,
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
    return {
      ok: true,
      line: { command: found, args: ["-m", "warp_harness", "serve"] },
      how: "warpHarness.server.interpreter",
    };
  }
  const onPath = findExecutable("warp-harness");
  if (onPath !== undefined) {
    return { ok: true, line: { command: onPath, args: ["serve"] }, how: "PATH" };
  }
  const binDir = IS_WINDOWS ? "Scripts" : "bin";
  for (const folder of workspaceFolders) {
    for (const venv of [".venv", "venv"]) {
      const candidate = findExecutable(path.join(folder, venv, binDir, IS_WINDOWS ? "warp-harness.exe" : "warp-harness"));
      if (candidate !== undefined) {
        return { ok: true, line: { command: candidate, args: ["serve"] }, how: `${venv} in ${folder}` };
      }
    }
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
