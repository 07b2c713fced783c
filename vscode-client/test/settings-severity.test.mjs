// Unit tests of the per-rule severity, enable and log-level settings: what is sent to the server,
// what the editor shows of the server's diagnostics, and the server's command line.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

import { withLogLevel } from "../src/command.ts";
import { DIAGNOSTIC_SEVERITY, adjustDiagnostics, ruleOf, serverWanted } from "../src/diagnostics.ts";
import { RESTART_SETTINGS, logLevel, ruleSeverities, serverSettings } from "../src/settings.ts";

const inspector = (values) => (key) => values[key];

test("warpHarness.severity: levels go to the server as `severity`, ids upper-cased, `information` is `info`", () => {
  const sent = serverSettings(
    inspector({ severity: { globalValue: { wh013: "warning", WH003: "information", WH020: "off" } } }),
    true,
  );
  assert.deepEqual(sent, { severity: { WH013: "warning", WH003: "info" } });
  // the folder's table replaces the user's, like every other setting
  const folder = serverSettings(
    inspector({ severity: { globalValue: { WH013: "hint" }, workspaceFolderValue: { WH001: "error" } } }),
    true,
  );
  assert.deepEqual(folder, { severity: { WH001: "error" } });
  // only "off" rules, or none: nothing to send, pyproject.toml's `severity` applies
  assert.deepEqual(serverSettings(inspector({ severity: { globalValue: { WH020: "off" } } }), true), {});
  assert.deepEqual(serverSettings(inspector({ severity: { globalValue: {} } }), true), {});
});

test("warpHarness.severity: bad entries are set aside to report, never sent", () => {
  const rules = ruleSeverities({ WH013: "loud", "not a rule": "error", WH001: 3, WH002: " Hint " });
  assert.deepEqual(rules.levels, { WH002: "hint" });
  assert.deepEqual(rules.off, []);
  assert.deepEqual(rules.invalid, ['WH013: "loud"', 'not a rule: "error"', "WH001: 3"]);
  assert.deepEqual(ruleSeverities(["WH013"]), { levels: {}, off: [], invalid: [] });
  assert.deepEqual(ruleSeverities(undefined), { levels: {}, off: [], invalid: [] });
});

const diag = (code, severity) => ({ code, severity, message: `${code}` });

test("diagnostics shown: `off` rules dropped, levels applied (dynamic-tier ones too), codes with links read", () => {
  const rules = ruleSeverities({ WH020: "off", WH013: "hint", WHD032: "error" });
  const shown = adjustDiagnostics(
    [
      diag("WH020", DIAGNOSTIC_SEVERITY.error),
      diag({ value: "WH013", target: "file:///docs/WH013.md" }, DIAGNOSTIC_SEVERITY.warning),
      diag("WHD032", DIAGNOSTIC_SEVERITY.warning),
      diag("WH001", DIAGNOSTIC_SEVERITY.error),
      { severity: DIAGNOSTIC_SEVERITY.info, message: "no code" },
    ],
    rules,
  );
  assert.deepEqual(
    shown.map((d) => [ruleOf(d), d.severity]),
    [
      ["WH013", DIAGNOSTIC_SEVERITY.hint],
      ["WHD032", DIAGNOSTIC_SEVERITY.error],
      ["WH001", DIAGNOSTIC_SEVERITY.error],
      [undefined, DIAGNOSTIC_SEVERITY.info],
    ],
  );
});

test("DIAGNOSTIC_SEVERITY matches vscode.DiagnosticSeverity", () => {
  // @types/vscode declares the enum: Error = 0, Warning = 1, Information = 2, Hint = 3
  const all = fs.readFileSync(path.join("node_modules", "@types", "vscode", "index.d.ts"), "utf8");
  const start = all.indexOf("export enum DiagnosticSeverity");
  const dts = all.slice(start, all.indexOf("}", start));
  for (const [name, level] of [["Error", "error"], ["Warning", "warning"], ["Information", "info"], ["Hint", "hint"]]) {
    assert.match(dts, new RegExp(`${name} = ${DIAGNOSTIC_SEVERITY[level]}\\b`));
  }
});

test("warpHarness.enable: the server runs when some folder wants it (the window's value with no folder)", () => {
  assert.equal(serverWanted([false, true], false), true);
  assert.equal(serverWanted([false, false], true), false);
  assert.equal(serverWanted([], true), true);
  assert.equal(serverWanted([], false), false);
  assert.ok(RESTART_SETTINGS.includes("warpHarness.enable"));
});

test("warpHarness.logLevel: passed as --log-level only when set, replacing one in the command", () => {
  assert.equal(logLevel(inspector({})), undefined);
  assert.equal(logLevel(inspector({ logLevel: { globalValue: "debug" } })), "debug");
  assert.equal(logLevel(inspector({ logLevel: { globalValue: "verbose" } })), undefined);
  const line = { command: "/v/bin/warp-harness", args: ["serve"] };
  assert.equal(withLogLevel(line, undefined), line);
  assert.deepEqual(withLogLevel(line, "debug").args, ["serve", "--log-level", "debug"]);
  assert.deepEqual(
    withLogLevel({ command: "wh", args: ["serve", "--log-level", "error", "--log-level=info", "--tcp"] }, "debug").args,
    ["serve", "--tcp", "--log-level", "debug"],
  );
  assert.ok(RESTART_SETTINGS.includes("warpHarness.logLevel"));
});

test("the real server accepts the --log-level values the setting offers", () => {
  const server = process.env.WH_SERVER ?? "warp-harness";
  let help;
  try {
    help = execFileSync(server, ["serve", "--help"], { encoding: "utf8" });
  } catch {
    return; // no server on PATH: .ci/vscode checks it before the end-to-end test
  }
  const choices = /--log-level \{([a-z,]+)\}/.exec(help)[1].split(",");
  const pkg = JSON.parse(fs.readFileSync("package.json", "utf8"));
  assert.deepEqual(pkg.contributes.configuration.properties["warpHarness.logLevel"].enum, choices);
});
