// Unit tests of the extension's pure parts (no VS Code needed): which settings are sent to the
// server, the trust policy, and how the server command is found. Node 24 runs the .ts sources
// directly (type stripping): `node --test test/`.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import {
  INTERPRETER_ARGS,
  cliCommand,
  expandVariables,
  findExecutable,
  insideFolders,
  resolveServerCommand,
  workspaceReason,
} from "../src/command.ts";
import { explicitValue, serverSettings } from "../src/settings.ts";

/** An Inspector over {key: {globalValue, workspaceValue, workspaceFolderValue}}. */
const inspector = (values) => (key) => values[key];

test("only explicitly set settings are sent, in the server's snake_case", () => {
  assert.deepEqual(serverSettings(inspector({}), true), {});
  const sent = serverSettings(
    inspector({
      target: { globalValue: "sm_90" },
      select: { workspaceValue: ["WH003", " WH01 ", ""] },
      ignore: { globalValue: ["WH013"], workspaceFolderValue: ["WH012"] },
      debounceMs: { globalValue: 250.4 },
      daemon: { workspaceValue: false },
    }),
    true,
  );
  assert.deepEqual(sent, { target: "sm_90", select: ["WH003", "WH01"], ignore: ["WH012"], debounce_ms: 250, daemon: false });
});

test("empty values mean: use pyproject.toml", () => {
  const sent = serverSettings(
    inspector({ target: { globalValue: "  " }, select: { globalValue: [] }, debounceMs: { globalValue: -1 } }),
    true,
  );
  assert.deepEqual(sent, {});
});

test("trust comes from user settings only", () => {
  assert.deepEqual(serverSettings(inspector({ trust: { workspaceValue: true } }), true), {});
  assert.deepEqual(serverSettings(inspector({ trust: { globalValue: true } }), true), { trust: true });
  assert.deepEqual(serverSettings(inspector({ trust: { globalValue: false } }), true), { trust: false });
});

test("replay tolerances come from user settings only, as [rtol, atol] pairs", () => {
  const set = { float32: [1e-3, 1e-5], "integrate.float32": [1e-2, 1e-4], bad: [1], worse: "x" };
  assert.deepEqual(serverSettings(inspector({ replayTolerances: { workspaceValue: set } }), true), {});
  assert.deepEqual(serverSettings(inspector({ replayTolerances: { globalValue: set } }), true), {
    replay_tolerances: { float32: [1e-3, 1e-5], "integrate.float32": [1e-2, 1e-4] },
  });
  assert.deepEqual(serverSettings(inspector({ replayTolerances: { globalValue: {} } }), true), {});
});

test("an untrusted workspace always sends trust: false", () => {
  assert.deepEqual(serverSettings(inspector({}), false), { trust: false });
  assert.deepEqual(serverSettings(inspector({ trust: { globalValue: true } }), false), { trust: false });
});

test("explicitValue: folder over workspace over user", () => {
  assert.equal(explicitValue(undefined), undefined);
  assert.equal(explicitValue({ globalValue: 1, workspaceValue: 2, workspaceFolderValue: 3 }), 3);
  assert.equal(explicitValue({ globalValue: 1, workspaceValue: 2 }), 2);
  assert.equal(explicitValue({ globalValue: 1 }), 1);
});

function fakeExecutable(dir, name) {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, name);
  fs.writeFileSync(file, "#!/bin/sh\n");
  fs.chmodSync(file, 0o755);
  return file;
}

test("server command: the setting, then the interpreter, then PATH, then a workspace .venv", (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "wh-unit-"));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const oldPath = process.env.PATH;
  t.after(() => {
    process.env.PATH = oldPath;
  });
  const custom = fakeExecutable(path.join(root, "custom"), "wh");
  const python = fakeExecutable(path.join(root, "py", "bin"), "python3");
  const workspace = path.join(root, "ws");
  const venvServer = fakeExecutable(path.join(workspace, ".venv", "bin"), "warp-harness");
  process.env.PATH = path.join(root, "empty");

  let r = resolveServerCommand({ command: [custom, "serve", "--log-level", "debug"], interpreter: python }, [workspace], true);
  assert.deepEqual(r, {
    ok: true,
    line: { command: custom, args: ["serve", "--log-level", "debug"] },
    how: "warpHarness.server.command",
  });
  r = resolveServerCommand({ command: [], interpreter: python }, [workspace], true);
  assert.deepEqual(r.line, { command: python, args: ["-I", "-m", "warp_harness", "serve"] });
  r = resolveServerCommand({ command: [], interpreter: "" }, [workspace], true);
  assert.deepEqual(r.line, { command: venvServer, args: ["serve"] });

  const onPath = fakeExecutable(path.join(root, "bin"), "warp-harness");
  process.env.PATH = path.join(root, "bin");
  r = resolveServerCommand({ command: [], interpreter: "" }, [workspace], true);
  assert.deepEqual(r.line, { command: onPath, args: ["serve"] });
});

test("a missing server is reported with how to fix it", (t) => {
  const oldPath = process.env.PATH;
  t.after(() => {
    process.env.PATH = oldPath;
  });
  process.env.PATH = "/nonexistent";
  let r = resolveServerCommand({ command: [], interpreter: "" }, ["/nonexistent/ws"], true);
  assert.equal(r.ok, false);
  assert.match(r.reason, /`warp-harness` was not found/);
  assert.match(r.reason, /pip install warp-harness/);
  r = resolveServerCommand({ command: ["/nonexistent/wh", "serve"], interpreter: "" }, [], true);
  assert.match(r.reason, /warpHarness\.server\.command/);
  r = resolveServerCommand({ command: [], interpreter: "/nonexistent/python" }, [], true);
  assert.match(r.reason, /warpHarness\.server\.interpreter/);
});

test("${workspaceFolder} and ~ are expanded", () => {
  assert.equal(expandVariables("${workspaceFolder}/.venv/bin/python", "/w"), "/w/.venv/bin/python");
  assert.equal(expandVariables("~/venv/bin/python", "/w"), path.join(os.homedir(), "venv/bin/python"));
  assert.equal(expandVariables("plain", undefined), "plain");
});

test("findExecutable skips folders and non-executables", (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "wh-unit-"));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  fs.mkdirSync(path.join(root, "a", "tool"), { recursive: true });
  fs.writeFileSync(path.join(root, "b-tool"), "");
  const good = fakeExecutable(path.join(root, "c"), "tool");
  assert.equal(findExecutable("tool", [path.join(root, "a"), path.join(root, "c")].join(path.delimiter)), good);
  assert.equal(findExecutable(path.join(root, "b-tool")), undefined);
});

test("the CLI command line is the server's with `serve` replaced", () => {
  assert.deepEqual(cliCommand({ command: "/v/bin/warp-harness", args: ["serve"] }, "ci", ["/w", "--static-only"]), {
    command: "/v/bin/warp-harness",
    args: ["ci", "/w", "--static-only"],
  });
  assert.deepEqual(cliCommand({ command: "/v/bin/python", args: ["-m", "warp_harness", "serve", "--tcp"] }, "ci", ["/w"]), {
    command: "/v/bin/python",
    args: ["-m", "warp_harness", "ci", "/w"],
  });
});

test("the interpreter starts the server isolated: -I before -m, so the workspace is not on sys.path", () => {
  assert.deepEqual(INTERPRETER_ARGS, ["-I", "-m", "warp_harness", "serve"]);
  const r = resolveServerCommand({ command: [], interpreter: process.execPath }, [], true);
  assert.equal(r.ok, true);
  assert.ok(r.line.args.indexOf("-I") >= 0 && r.line.args.indexOf("-I") < r.line.args.indexOf("-m"));
  // the CI task is the same command line with `serve` replaced: still isolated
  assert.deepEqual(cliCommand(r.line, "ci", ["/w"]).args, ["-I", "-m", "warp_harness", "ci", "/w"]);
});

/** A temporary root with a workspace that ships `.venv/bin/warp-harness`; PATH is restored after. */
function hostileWorkspace(t) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "wh-unit-"));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const oldPath = process.env.PATH;
  t.after(() => {
    process.env.PATH = oldPath;
  });
  const workspace = path.join(root, "ws");
  const venvServer = fakeExecutable(path.join(workspace, ".venv", "bin"), "warp-harness");
  const venvPython = fakeExecutable(path.join(workspace, ".venv", "bin"), "python3");
  process.env.PATH = path.join(root, "empty");
  return { root, workspace, venvServer, venvPython };
}

test("a workspace's .venv/bin/warp-harness is run only in a trusted workspace", (t) => {
  const { workspace, venvServer } = hostileWorkspace(t);
  const untrusted = resolveServerCommand({ command: [], interpreter: "" }, [workspace], false);
  assert.equal(untrusted.ok, false);
  assert.match(untrusted.reason, /does not trust this workspace/);
  assert.ok(untrusted.reason.includes(venvServer));
  const trusted = resolveServerCommand({ command: [], interpreter: "" }, [workspace], true);
  assert.deepEqual(trusted.line, { command: venvServer, args: ["serve"] });
});

test("untrusted: a global warp-harness is chosen over the workspace's, and PATH entries inside it are skipped", (t) => {
  const { root, workspace, venvServer } = hostileWorkspace(t);
  const global = fakeExecutable(path.join(root, "global", "bin"), "warp-harness");
  // an activated workspace venv first on PATH
  process.env.PATH = [path.join(workspace, ".venv", "bin"), path.join(root, "global", "bin")].join(path.delimiter);
  const untrusted = resolveServerCommand({ command: [], interpreter: "" }, [workspace], false);
  assert.deepEqual(untrusted.line, { command: global, args: ["serve"] });
  const trusted = resolveServerCommand({ command: [], interpreter: "" }, [workspace], true);
  assert.deepEqual(trusted.line, { command: venvServer, args: ["serve"] });
  // only the workspace's on PATH: refused, not run
  process.env.PATH = path.join(workspace, ".venv", "bin");
  assert.equal(resolveServerCommand({ command: [], interpreter: "" }, [workspace], false).ok, false);
});

test("untrusted: settings that name an executable inside the workspace are refused with the reason", (t) => {
  const { workspace, venvServer, venvPython } = hostileWorkspace(t);
  for (const settings of [
    { command: ["${workspaceFolder}/.venv/bin/warp-harness", "serve"], interpreter: "" },
    { command: [], interpreter: "${workspaceFolder}/.venv/bin/python3" },
  ]) {
    const untrusted = resolveServerCommand(settings, [workspace], false);
    assert.equal(untrusted.ok, false);
    assert.match(untrusted.reason, /lies inside the workspace\. VS Code does not trust this workspace/);
    assert.equal(resolveServerCommand(settings, [workspace], true).ok, true);
  }
  assert.equal(resolveServerCommand({ command: [venvServer, "serve"], interpreter: "" }, [workspace], true).ok, true);
  assert.equal(resolveServerCommand({ command: [], interpreter: venvPython }, [workspace], false).ok, false);
});

test("insideFolders follows symlinks and does not take a sibling with a common prefix for inside", (t) => {
  const { root, workspace, venvServer } = hostileWorkspace(t);
  const link = path.join(root, "link-to-server");
  fs.symlinkSync(venvServer, link);
  assert.equal(insideFolders(link, [workspace]), true);
  assert.equal(insideFolders(workspace, [workspace]), true);
  const sibling = fakeExecutable(path.join(root, "ws2", "bin"), "warp-harness");
  assert.equal(insideFolders(sibling, [workspace]), false);
  const dotted = fakeExecutable(path.join(workspace, "..hidden"), "warp-harness");
  assert.equal(insideFolders(dotted, [workspace]), true);
  assert.equal(insideFolders(sibling, []), false);
});

/** The system's Python, links resolved (a real interpreter outside any test folder), or undefined. */
function systemPython() {
  const found = findExecutable("python3", "/usr/bin:/usr/local/bin:/bin");
  return found === undefined ? undefined : fs.realpathSync(found);
}

/**
 * A cloned repository that ships a virtual environment (issue #30, finding 3): `.venv/bin/python` a
 * symlink to the system Python, `.venv/pyvenv.cfg`, and a `.pth` in its site-packages that writes
 * `marker` when Python starts. PATH is restored after.
 */
function shippedVenv(t, python) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "wh-unit-"));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const oldPath = process.env.PATH;
  t.after(() => {
    process.env.PATH = oldPath;
  });
  process.env.PATH = path.join(root, "empty");
  const workspace = path.join(root, "ws");
  const venv = path.join(workspace, ".venv");
  const version = execFileSync(python, ["-I", "-c", "import sys; print('%d.%d' % sys.version_info[:2])"], {
    encoding: "utf8",
  }).trim();
  const site = path.join(venv, "lib", `python${version}`, "site-packages");
  fs.mkdirSync(site, { recursive: true });
  fs.mkdirSync(path.join(venv, "bin"));
  const marker = path.join(root, "pth-ran");
  fs.writeFileSync(path.join(site, "evil.pth"), `import os; open(${JSON.stringify(marker)}, "w").close()\n`);
  fs.writeFileSync(
    path.join(venv, "pyvenv.cfg"),
    `home = ${path.dirname(python)}\ninclude-system-site-packages = false\nversion = ${version}\n`,
  );
  fs.symlinkSync(python, path.join(venv, "bin", "python"));
  return { root, workspace, venv, marker };
}

const UNTRUSTED_REFUSAL = /lies inside the workspace.*\. VS Code does not trust this workspace/;

test("untrusted: a shipped .venv/bin/python linking to the system Python is refused, as configured", (t) => {
  const python = systemPython();
  if (python === undefined) {
    t.skip("no python3 in /usr/bin, /usr/local/bin or /bin");
    return;
  }
  const { workspace, venv, marker } = shippedVenv(t, python);
  // the threat is real: started as configured, the system Python runs the workspace's .pth, -I or not
  execFileSync(path.join(venv, "bin", "python"), ["-I", "-c", "pass"]);
  assert.ok(fs.existsSync(marker), "the shipped .pth did not run: the test's environment is not a venv");
  fs.rmSync(marker);

  const configured = "${workspaceFolder}/.venv/bin/python";
  for (const settings of [
    { command: [], interpreter: configured },
    { command: [configured, ...INTERPRETER_ARGS], interpreter: "" },
  ]) {
    const untrusted = resolveServerCommand(settings, [workspace], false);
    assert.equal(untrusted.ok, false, JSON.stringify(untrusted));
    assert.match(untrusted.reason, UNTRUSTED_REFUSAL);
    assert.ok(untrusted.reason.includes(path.join(venv, "bin", "python")));
    // trusted: run as configured (the venv's python, not the system one it links to)
    const trusted = resolveServerCommand(settings, [workspace], true);
    assert.equal(trusted.ok, true);
    assert.equal(trusted.line.command, path.join(venv, "bin", "python"));
  }
  assert.ok(!fs.existsSync(marker));
});

test("untrusted: paths outside the workspace that lead into it, or take its pyvenv.cfg, are refused", (t) => {
  const python = systemPython();
  if (python === undefined) {
    t.skip("no python3 in /usr/bin, /usr/local/bin or /bin");
    return;
  }
  const { root, workspace, venv } = shippedVenv(t, python);
  const refused = (interpreter) => {
    const r = resolveServerCommand({ command: [], interpreter }, [workspace], false);
    assert.equal(r.ok, false, `${interpreter} was accepted`);
    assert.match(r.reason, UNTRUSTED_REFUSAL);
    return r.reason;
  };
  // a folder of the user's that links to the workspace's venv
  fs.mkdirSync(path.join(root, "links"));
  fs.symlinkSync(venv, path.join(root, "links", "venv"));
  assert.match(refused(path.join(root, "links", "venv", "bin", "python")), /its folder .* leads to/);
  // a venv outside whose pyvenv.cfg is a link to the workspace's
  const linked = path.join(root, "linked-cfg");
  fs.mkdirSync(path.join(linked, "bin"), { recursive: true });
  fs.symlinkSync(python, path.join(linked, "bin", "python"));
  fs.symlinkSync(path.join(venv, "pyvenv.cfg"), path.join(linked, "pyvenv.cfg"));
  assert.match(refused(path.join(linked, "bin", "python")), /its environment file .* is the workspace's/);
  // a venv outside whose home (the standard library's interpreter) is in the workspace
  const homed = path.join(root, "homed");
  fs.mkdirSync(path.join(homed, "bin"), { recursive: true });
  fs.symlinkSync(python, path.join(homed, "bin", "python"));
  fs.writeFileSync(path.join(homed, "pyvenv.cfg"), `home = ${path.join(workspace, "bin")}\n`);
  assert.match(refused(path.join(homed, "bin", "python")), /the `home` of its/);
  // the user's own venv outside the workspace, linking to the same system Python: accepted as configured
  const own = path.join(root, "own-venv");
  fs.mkdirSync(path.join(own, "bin"), { recursive: true });
  fs.symlinkSync(python, path.join(own, "bin", "python"));
  fs.writeFileSync(path.join(own, "pyvenv.cfg"), `home = ${path.dirname(python)}\n`);
  const accepted = resolveServerCommand({ command: [], interpreter: path.join(own, "bin", "python") }, [workspace], false);
  assert.deepEqual(accepted.line, { command: path.join(own, "bin", "python"), args: INTERPRETER_ARGS });
  assert.equal(workspaceReason(python, [workspace]), undefined);
  assert.equal(workspaceReason(path.join(venv, "bin", "python"), []), undefined);
});

test("untrusted: a server command whose arguments name workspace files is refused", (t) => {
  const python = systemPython();
  if (python === undefined) {
    t.skip("no python3 in /usr/bin, /usr/local/bin or /bin");
    return;
  }
  const { workspace } = shippedVenv(t, python);
  fs.writeFileSync(path.join(workspace, "serve.py"), "import os\n");
  for (const args of [["${workspaceFolder}/serve.py"], ["-I", "-m", "warp_harness", "serve", "--log-file=${workspaceFolder}/wh.log"]]) {
    const settings = { command: [python, ...args], interpreter: "" };
    const untrusted = resolveServerCommand(settings, [workspace], false);
    assert.equal(untrusted.ok, false);
    assert.match(untrusted.reason, /argument `.*` \(warpHarness\.server\.command\) lies inside the workspace/);
    assert.equal(resolveServerCommand(settings, [workspace], true).ok, true);
  }
  const plain = resolveServerCommand({ command: [python, ...INTERPRETER_ARGS], interpreter: "" }, [workspace], false);
  assert.deepEqual(plain.line, { command: python, args: INTERPRETER_ARGS });
});
