// Unit tests of the extension's pure parts (no VS Code needed): which settings are sent to the
// server, the trust policy, and how the server command is found. Node 24 runs the .ts sources
// directly (type stripping): `node --test test/`.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { test } from "node:test";

import { cliCommand, expandVariables, findExecutable, resolveServerCommand } from "../src/command.ts";
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

  let r = resolveServerCommand({ command: [custom, "serve", "--log-level", "debug"], interpreter: python }, [workspace]);
  assert.deepEqual(r, {
    ok: true,
    line: { command: custom, args: ["serve", "--log-level", "debug"] },
    how: "warpHarness.server.command",
  });
  r = resolveServerCommand({ command: [], interpreter: python }, [workspace]);
  assert.deepEqual(r.line, { command: python, args: ["-m", "warp_harness", "serve"] });
  r = resolveServerCommand({ command: [], interpreter: "" }, [workspace]);
  assert.deepEqual(r.line, { command: venvServer, args: ["serve"] });

  const onPath = fakeExecutable(path.join(root, "bin"), "warp-harness");
  process.env.PATH = path.join(root, "bin");
  r = resolveServerCommand({ command: [], interpreter: "" }, [workspace]);
  assert.deepEqual(r.line, { command: onPath, args: ["serve"] });
});

test("a missing server is reported with how to fix it", (t) => {
  const oldPath = process.env.PATH;
  t.after(() => {
    process.env.PATH = oldPath;
  });
  process.env.PATH = "/nonexistent";
  let r = resolveServerCommand({ command: [], interpreter: "" }, ["/nonexistent/ws"]);
  assert.equal(r.ok, false);
  assert.match(r.reason, /`warp-harness` was not found/);
  assert.match(r.reason, /pip install warp-harness/);
  r = resolveServerCommand({ command: ["/nonexistent/wh", "serve"], interpreter: "" }, []);
  assert.match(r.reason, /warpHarness\.server\.command/);
  r = resolveServerCommand({ command: [], interpreter: "/nonexistent/python" }, []);
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
