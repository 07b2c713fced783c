// End-to-end test in a real VS Code: code-server with the packaged .vsix installed, driven by
// headless Chromium through playwright-core.
//
// In a temporary workspace holding a buggy kernel it:
//   1. waits for the warp-harness diagnostic in the Problems panel (and the squiggle);
//   2. applies its quick fix from the editor (Go to Line, Ctrl+., the menu entry), checks that the
//      diagnostic disappears and the others stay, saves, and checks the file on disk changed;
//   2b. opens a Jupyter notebook (.ipynb) whose kernel cell has the same kind of bug, waits for the
//      diagnostic of that cell in the Problems panel, applies its quick fix in the cell, saves, and
//      checks the fix is in the cell's source on disk and the rest of the notebook's JSON unchanged;
//   2a. (before 2b) sets warpHarness.severity {rule of the fixed one: off, another rule: warning}
//      and waits for the same-rule diagnostic to leave the Problems panel and the editor to show only
//      warning squiggles, then clears it; runs Fix All in This File and checks that the safely
//      fixable diagnostics go, the unsafe one stays, and the fixes reach the disk after a save;
//   3. runs Start Daemon / Stop Daemon and waits for the status-bar item to follow;
//   4. sets warpHarness.ignore and waits for that rule's diagnostic to go (didChangeConfiguration);
//   5. runs Run CI Check on Workspace and reads the `warp-harness ci` summary in the terminal;
//   5b. sets warpHarness.enable false and waits for "Warp: disabled" and the diagnostics to go,
//      then true and waits for them to come back;
//   6. points warpHarness.server.command at a missing file, then at a command that exits at once,
//      and waits for the extension's error notifications.
//
// The expected diagnostic and fix are read from `warp-harness check --output-format json` on the
// same file (WH_E2E_CLI, default `warp-harness` on PATH), so the test follows the server's wording.
// The server is `<warp-harness on PATH> serve`, or WH_E2E_SERVER_COMMAND (a JSON command line),
// written into the workspace's warpHarness.server.command.
//
// Environment: CODE_SERVER (code-server binary; it needs Node 24 first on PATH), VSIX, CHROMIUM
// (default /usr/bin/chromium), WH_E2E_KERNEL (buggy file, default
// examples/buggy/mixed_precision.py), WH_E2E_ARTIFACTS (where screenshots and logs go; default
// inside the scratch folder, which is kept on failure), WH_E2E_TIMEOUT_S (overall, default 480).
// Exits non-zero on any failure.
import { spawn, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const clientDir = path.resolve(here, "..");
const repoRoot = path.resolve(clientDir, "..");

const CODE_SERVER =
  process.env.CODE_SERVER ?? path.join(os.homedir(), ".cache/warp-harness-ci/code-server/bin/code-server");
const VSIX = process.env.VSIX ?? path.join(clientDir, "warp-harness.vsix");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const KERNEL = process.env.WH_E2E_KERNEL ?? path.join(repoRoot, "examples/buggy/mixed_precision.py");
const SERVER_COMMAND = process.env.WH_E2E_SERVER_COMMAND ? JSON.parse(process.env.WH_E2E_SERVER_COMMAND) : null;
const OVERALL_S = Number(process.env.WH_E2E_TIMEOUT_S ?? 480);
// Generous single-step waits: CI is a noisy 2-core machine.
const LOAD_MS = 180_000;
const STEP_MS = 90_000;

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "wh-vscode-e2e-"));
const artifacts = process.env.WH_E2E_ARTIFACTS ?? path.join(scratch, "artifacts");
fs.mkdirSync(artifacts, { recursive: true });
const t0 = Date.now();
let shot = 0;
let page;
let context;
let codeServer;

function log(message) {
  console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${message}`);
}

async function screenshot(name) {
  if (page === undefined) {
    return;
  }
  const file = path.join(artifacts, `${String(++shot).padStart(2, "0")}-${name}.png`);
  try {
    await page.screenshot({ path: file, timeout: 15_000 });
    log(`screenshot ${file}`);
  } catch (error) {
    log(`screenshot ${name} failed: ${error.message}`);
  }
}

async function step(name, fn) {
  const start = Date.now();
  log(`→ ${name}`);
  try {
    const result = await fn();
    log(`✓ ${name} (${((Date.now() - start) / 1000).toFixed(1)} s)`);
    return result;
  } catch (error) {
    await screenshot(`FAILED-${name.replace(/[^a-z0-9]+/gi, "-").toLowerCase()}`);
    throw new Error(`step "${name}" failed: ${error.message}`, { cause: error });
  }
}

/** Polls `probe` until it returns a truthy value; throws with `what` after `timeoutMs`. */
async function waitFor(what, probe, timeoutMs = STEP_MS, intervalMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last;
  for (;;) {
    try {
      const value = await probe();
      if (value) {
        return value;
      }
    } catch (error) {
      if (error.fatal) {
        throw error;
      }
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}${last ? ` (${last.message})` : ""}`);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function scratchEnv() {
  const env = { ...process.env };
  for (const [key, sub] of [
    ["XDG_CONFIG_HOME", "xdg/config"],
    ["XDG_DATA_HOME", "xdg/data"],
    ["XDG_CACHE_HOME", "xdg/cache"],
    ["XDG_STATE_HOME", "xdg/state"],
  ]) {
    env[key] = path.join(scratch, sub);
    fs.mkdirSync(env[key], { recursive: true });
  }
  env.EXTENSIONS_GALLERY = '{"serviceUrl":""}';
  delete env.VSCODE_IPC_HOOK_CLI;
  return env;
}

/** The first record with a fix, from the real CLI: what the Problems panel should show. */
function expectedFinding(file) {
  const out = execFileSync(process.env.WH_E2E_CLI ?? "warp-harness", ["check", file, "--output-format", "json", "--exit-zero"], {
    encoding: "utf8",
    cwd: path.dirname(file),
  });
  const results = JSON.parse(out).results ?? [];
  const record = results.find((r) => r.fix && r.fix.safe !== false && r.fix.edits?.length) ?? null;
  if (record === null) {
    throw new Error(`warp-harness check found no fixable problem in ${file}`);
  }
  return { record, others: results.filter((r) => r !== record) };
}

/** A notebook (laid out as Jupyter writes it: nbformat 4, one-space indent) with a buggy kernel cell. */
function notebookJson() {
  const code = (source, outputs = []) => ({
    cell_type: "code",
    execution_count: null,
    id: `c${Math.random().toString(16).slice(2, 10)}`,
    metadata: {},
    outputs,
    source,
  });
  const notebook = {
    cells: [
      { cell_type: "markdown", id: "m0000001", metadata: {}, source: ["# Scaling in float16"] },
      code(["%matplotlib inline\n", "import warp as wp"]),
      code(
        [
          "@wp.kernel\n",
          "def scale(x: wp.array(dtype=wp.float16)):\n",
          "    i = wp.tid()\n",
          "    x[i] = x[i] * 2.0",
        ],
        [{ name: "stdout", output_type: "stream", text: ["kept output\n"] }],
      ),
    ],
    metadata: {
      kernelspec: { display_name: "Python 3", language: "python", name: "python3" },
      language_info: { name: "python" },
      custom: { keep: "this" },
    },
    nbformat: 4,
    nbformat_minor: 5,
  };
  return JSON.stringify(notebook, null, 1) + "\n";
}

function fatal(message) {
  const error = new Error(message);
  error.fatal = true;
  return error;
}

/** The extension's own error notifications (server not found, did not start): fail at once. */
async function checkExtensionErrors() {
  const toasts = await page.locator(".notifications-toasts .notification-list-item-message").allInnerTexts();
  const ours = toasts.find((text) => text.startsWith("Warp Harness:"));
  if (ours !== undefined) {
    throw fatal(`the extension reported: ${ours}`);
  }
}

/** Where `name` is on PATH, or null. */
function which(name) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return null;
}

/** Runs a command by its title from the Command Palette. */
async function runCommand(title) {
  await page.keyboard.press("Control+Shift+P");
  const input = page.locator(".quick-input-widget input");
  await input.waitFor({ timeout: 10_000 });
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: 15_000 });
  await page.keyboard.press("Enter");
}

async function statusText() {
  const texts = await page.locator(".part.statusbar .statusbar-item").allInnerTexts();
  return texts.find((t) => t.includes("Warp:")) ?? null;
}

async function problemsRows() {
  return page.locator(".markers-panel .monaco-list-row").allInnerTexts();
}

async function main() {
  for (const [what, file] of [
    ["code-server", CODE_SERVER],
    ["the .vsix", VSIX],
    ["chromium", CHROMIUM],
    ["the buggy kernel", KERNEL],
  ]) {
    if (!fs.existsSync(file)) {
      throw new Error(`${what} not found at ${file}`);
    }
  }
  const workspace = path.join(scratch, "workspace");
  const userData = path.join(scratch, "user-data");
  const extensions = path.join(scratch, "extensions");
  fs.mkdirSync(path.join(workspace, ".vscode"), { recursive: true });
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  const fileName = path.basename(KERNEL);
  const kernel = path.join(workspace, fileName);
  fs.copyFileSync(KERNEL, kernel);
  const original = fs.readFileSync(kernel, "utf8");

  const { record, others } = expectedFinding(kernel);
  const loc = record.location;
  const edit = record.fix.edits[0];
  // The message up to its first quote: what identifies this row in the Problems panel.
  const messageKey = record.message.split('"')[0].trim().slice(0, 60);
  log(`expect ${record.rule} at ${loc.line}:${loc.col + 1} "${messageKey}"; fix "${record.fix.title}"`);

  const userSettings = {
    "workbench.startupEditor": "none",
    "workbench.tips.enabled": false,
    "workbench.enableExperiments": false,
    "workbench.secondarySideBar.defaultVisibility": "hidden",
    "chat.disableAIFeatures": true,
    "telemetry.telemetryLevel": "off",
    "update.mode": "none",
    "extensions.autoCheckUpdates": false,
    "extensions.autoUpdate": false,
    "extensions.ignoreRecommendations": true,
    "security.workspace.trust.enabled": false,
    "files.autoSave": "off",
    "editor.quickSuggestions": { other: false, comments: false, strings: false },
    "editor.hover.enabled": false,
    "warpHarness.trace.server": "messages",
    "terminal.integrated.gpuAcceleration": "off",
    "terminal.integrated.enablePersistentSessions": false,
  };
  fs.writeFileSync(path.join(userData, "User", "settings.json"), JSON.stringify(userSettings, null, 2));
  // code-server's extension host takes PATH from a login shell, not from this process, so the
  // server is named explicitly: the `warp-harness` this process has on PATH.
  const found = which("warp-harness");
  const serverCommand = SERVER_COMMAND ?? (found ? [found, "serve"] : null);
  if (serverCommand === null) {
    throw new Error("warp-harness is not on PATH (or set WH_E2E_SERVER_COMMAND)");
  }
  log(`server command: ${serverCommand.join(" ")}`);
  const workspaceSettings = { "warpHarness.server.command": serverCommand };
  fs.writeFileSync(path.join(workspace, ".vscode", "settings.json"), JSON.stringify(workspaceSettings, null, 2));

  const env = scratchEnv();
  const common = ["--user-data-dir", userData, "--extensions-dir", extensions];

  await step("install the .vsix into code-server", async () => {
    const out = execFileSync(CODE_SERVER, [...common, "--install-extension", VSIX, "--force"], {
      env,
      encoding: "utf8",
      timeout: STEP_MS,
    });
    log(out.trim().split("\n").slice(-1)[0] ?? "");
    const installed = fs.readdirSync(extensions).filter((d) => d.startsWith("warp-harness.warp-harness"));
    if (installed.length === 0) {
      throw new Error(`the extension is not in ${extensions}: ${fs.readdirSync(extensions).join(", ")}`);
    }
  });

  const port = await freePort();
  const config = path.join(scratch, "code-server.yaml");
  fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  const serverLog = path.join(artifacts, "code-server.log");
  const logFd = fs.openSync(serverLog, "w");
  await step("start code-server", async () => {
    codeServer = spawn(
      CODE_SERVER,
      [
        "--config",
        config,
        ...common,
        "--disable-telemetry",
        "--disable-update-check",
        "--disable-workspace-trust",
        "--disable-getting-started-override",
        "--ignore-last-opened",
        workspace,
      ],
      // detached: its own session and process group, so the whole tree (extension hosts kept for
      // reconnection, the language server under them) is killed at the end.
      { env, stdio: ["ignore", logFd, logFd], detached: true },
    );
    codeServer.on("exit", (code, signal) => log(`code-server exited (${code ?? signal})`));
    await waitFor(
      `code-server on 127.0.0.1:${port}`,
      async () => {
        if (codeServer.exitCode !== null) {
          throw new Error(`code-server exited with ${codeServer.exitCode}; see ${serverLog}`);
        }
        const response = await fetch(`http://127.0.0.1:${port}/healthz`);
        return response.ok;
      },
      LOAD_MS,
      500,
    );
  });

  await step("open the workspace in headless Chromium", async () => {
    context = await chromium.launchPersistentContext(path.join(scratch, "chromium-profile"), {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1400, height: 900 },
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    context.setDefaultTimeout(STEP_MS);
    page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => log(`page error: ${error.message}`));
    await page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(workspace)}`, { timeout: LOAD_MS });
    await page.locator(".monaco-workbench").waitFor({ timeout: LOAD_MS });
    await page.locator(".explorer-folders-view, .part.sidebar").first().waitFor({ timeout: LOAD_MS });
  });

  await step(`open ${fileName}`, async () => {
    await waitFor(
      "the editor tab",
      async () => {
        await page.locator(".monaco-workbench").click({ position: { x: 700, y: 450 }, timeout: 5_000 }).catch(() => {});
        await page.keyboard.press("Control+P");
        const input = page.locator(".quick-input-widget input");
        await input.waitFor({ timeout: 10_000 });
        await input.fill(fileName);
        await page.locator(".quick-input-list .monaco-list-row", { hasText: fileName }).first().waitFor({ timeout: 15_000 });
        await page.keyboard.press("Enter");
        await page.locator(`.tabs-container .tab[aria-label*="${fileName}"]`).first().waitFor({ timeout: 15_000 });
        return true;
      },
      LOAD_MS,
      1_000,
    );
    await page.locator(".monaco-editor .view-lines").first().waitFor();
  });

  await step(`the ${record.rule} diagnostic in the Problems panel`, async () => {
    await page.keyboard.press("Control+Shift+M");
    await page.locator(".markers-panel").waitFor({ timeout: STEP_MS });
    const row = await waitFor(
      `"${messageKey}" in the Problems panel`,
      async () => {
        await checkExtensionErrors();
        return (await problemsRows()).find((text) => text.includes(messageKey));
      },
      LOAD_MS,
      500,
    );
    log(`Problems panel row: ${row.replace(/\s+/g, " ")}`);
    if (!row.includes(record.rule)) {
      throw new Error(`the row does not show the rule id ${record.rule}: ${row}`);
    }
    await page.locator(".monaco-editor .squiggly-error").first().waitFor({ timeout: STEP_MS });
    await screenshot("diagnostic");
  });

  await step("status-bar item", async () => {
    const text = await waitFor("the Warp status-bar item", statusText, STEP_MS);
    log(`status bar: ${text.trim()}`);
  });

  await step(`apply the quick fix "${record.fix.title}"`, async () => {
    const menu = page.locator(".action-widget");
    await waitFor(
      "the quick fix menu",
      async () => {
        await page.locator(".monaco-editor .view-lines").first().click({ timeout: 5_000 });
        await page.keyboard.press("Control+G");
        const input = page.locator(".quick-input-widget input");
        await input.waitFor({ timeout: 10_000 });
        // Go to Line is Quick Open with a ":" prefix; fill() replaces the whole value.
        await input.fill(`:${loc.line}:${edit.range.col + 1}`);
        await page.keyboard.press("Enter");
        await page.keyboard.press("Control+Period");
        await menu.locator(".monaco-list-row", { hasText: record.fix.title }).first().waitFor({ timeout: 10_000 });
        return true;
      },
      STEP_MS,
      1_000,
    );
    await screenshot("quick-fix-menu");
    await menu.locator(".monaco-list-row", { hasText: record.fix.title }).first().click();
    await waitFor(
      "the diagnostic to disappear",
      async () => {
        const rows = await problemsRows();
        return !rows.some((text) => text.includes(messageKey)) ? rows : null;
      },
      STEP_MS,
      500,
    );
    const rest = await problemsRows();
    log(`Problems panel now: ${rest.length} row(s)`);
    for (const other of others.filter((r) => r.location.line !== loc.line)) {
      const key = other.message.split('"')[0].trim().slice(0, 60);
      if (!rest.some((text) => text.includes(key))) {
        throw new Error(`an unrelated diagnostic vanished too: "${key}"`);
      }
    }
    await screenshot("fixed");
  });

  await step("save and check the file on disk", async () => {
    await page.locator(".monaco-editor .view-lines").first().click();
    await page.keyboard.press("Control+S");
    const text = await waitFor(
      `${kernel} to contain ${edit.new_text}`,
      () => {
        const now = fs.readFileSync(kernel, "utf8");
        return now !== original && now.includes(edit.new_text) ? now : null;
      },
      STEP_MS,
    );
    const line = text.split("\n")[loc.line - 1];
    log(`line ${loc.line} on disk: ${line.trim()}`);
    if (!line.includes(edit.new_text)) {
      throw new Error(`line ${loc.line} does not hold ${edit.new_text}: ${line}`);
    }
  });

  // warpHarness.severity: "off" hides a rule in the editor (the extension's filter), a level goes
  // through the server (`severity`): the other WH003 leaves, WH004's squiggle turns from error to warning.
  const rest = others.filter((r) => r.location.line !== loc.line);
  const sameRule = rest.find((r) => r.rule === record.rule);
  const otherRule = rest.find((r) => r.rule !== record.rule);
  const keyOf = (r) => r.message.split('"')[0].trim().slice(0, 60);
  const writeWorkspaceSettings = (extra) =>
    fs.writeFileSync(
      path.join(workspace, ".vscode", "settings.json"),
      JSON.stringify({ ...workspaceSettings, ...extra }, null, 2),
    );
  if (sameRule !== undefined && otherRule !== undefined) {
    await step(`warpHarness.severity {${record.rule}: off, ${otherRule.rule}: warning}`, async () => {
      writeWorkspaceSettings({ "warpHarness.severity": { [record.rule]: "off", [otherRule.rule]: "warning" } });
      await waitFor(
        `"${keyOf(sameRule)}" to leave the Problems panel and a warning squiggle only`,
        async () => {
          const rows = await problemsRows();
          const errors = await page.locator(".monaco-editor .squiggly-error").count();
          const warnings = await page.locator(".monaco-editor .squiggly-warning").count();
          return !rows.some((t) => t.includes(keyOf(sameRule))) &&
            rows.some((t) => t.includes(keyOf(otherRule))) &&
            errors === 0 &&
            warnings > 0
            ? rows
            : null;
        },
        STEP_MS,
        500,
      );
      await screenshot("severity");
      writeWorkspaceSettings({});
      await waitFor(
        `"${keyOf(sameRule)}" back as an error`,
        async () =>
          (await problemsRows()).some((t) => t.includes(keyOf(sameRule))) &&
          (await page.locator(".monaco-editor .squiggly-error").count()) > 0,
        STEP_MS,
        500,
      );
    });
  }

  // Fix All in This File: every safe fix of the active document, the unsafe ones left.
  const safe = rest.filter((r) => r.fix?.safe);
  if (safe.length > 0) {
    await step("Fix All in This File → the safe fixes, on disk after a save", async () => {
      await page.locator(".monaco-editor .view-lines").first().click();
      await runCommand("Warp Harness: Fix All in This File");
      await waitFor(
        "the safely fixable diagnostics to leave the Problems panel",
        async () => {
          const rows = await problemsRows();
          return safe.every((r) => !rows.some((t) => t.includes(keyOf(r)))) ? rows : null;
        },
        STEP_MS,
        500,
      );
      const rows = await problemsRows();
      for (const unsafe of rest.filter((r) => !r.fix?.safe)) {
        if (!rows.some((t) => t.includes(keyOf(unsafe)))) {
          throw new Error(`"${keyOf(unsafe)}" (${unsafe.rule}, no safe fix) went too`);
        }
      }
      await page.locator(".monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+S");
      await waitFor(
        "the safe fixes on disk",
        () => {
          const lines = fs.readFileSync(kernel, "utf8").split("\n");
          return safe.every((r) => lines[r.fix.edits[0].range.line - 1].includes(r.fix.edits[0].new_text));
        },
        STEP_MS,
      );
      await screenshot("fix-all");
    });
  }

  // A notebook: the diagnostic in its kernel cell, the quick fix applied in the cell, saved.
  const notebookName = "scale.ipynb";
  const notebookPath = path.join(workspace, notebookName);
  fs.writeFileSync(notebookPath, notebookJson());
  const notebookOriginal = fs.readFileSync(notebookPath, "utf8");
  const nb = expectedFinding(notebookPath).record;
  const nbKey = nb.message.split('"')[0].trim().slice(0, 60);
  const nbEdit = nb.fix.edits[0];
  log(`notebook: expect ${nb.rule} in cell ${nb.location.cell} at ${nb.location.line}:${nb.location.col + 1}; fix "${nb.fix.title}"`);

  await step(`open ${notebookName}`, async () => {
    await page.keyboard.press("Escape");
    await waitFor(
      "the notebook editor",
      async () => {
        // from the Explorer: code-server's quick open sometimes answers "No matching results" for
        // a file the Explorer lists (its file search runs in the background)
        await page.keyboard.press("Escape");
        const row = page.locator(".explorer-folders-view .monaco-list-row", { hasText: notebookName }).first();
        await row.waitFor({ timeout: 10_000 });
        await row.dblclick();
        await page.locator(".notebook-editor .cell-list-container, .notebookOverlay").first().waitFor({ timeout: 15_000 });
        return true;
      },
      LOAD_MS,
      1_000,
    );
  });

  await step(`the ${nb.rule} diagnostic of cell ${nb.location.cell} in the Problems panel`, async () => {
    await page.keyboard.press("Control+Shift+M");
    await page.locator(".markers-panel").waitFor({ timeout: STEP_MS });
    const row = await waitFor(
      `"${nbKey}" in the Problems panel`,
      async () => {
        await checkExtensionErrors();
        return (await problemsRows()).find((text) => text.includes(nbKey));
      },
      LOAD_MS,
      500,
    );
    log(`Problems panel row: ${row.replace(/\s+/g, " ")}`);
    await page.locator(".notebook-editor .monaco-editor .squiggly-error").first().waitFor({ timeout: STEP_MS });
    await screenshot("notebook-diagnostic");
  });

  await step(`apply the notebook quick fix "${nb.fix.title}"`, async () => {
    const menu = page.locator(".action-widget");
    await waitFor(
      "the quick fix menu in the cell",
      async () => {
        // a menu an earlier attempt opened (Enter on a row the list moved under the click) blocks clicks
        await page.keyboard.press("Escape");
        // the Problems row opens the cell with the cursor on the diagnostic
        const row = page.locator(".markers-panel .monaco-list-row", { hasText: nbKey }).first();
        await row.click({ timeout: 5_000 });
        await page.keyboard.press("Enter");
        await page.waitForTimeout(500);
        await page.keyboard.press("Control+Period");
        await menu.locator(".monaco-list-row", { hasText: nb.fix.title }).first().waitFor({ timeout: 10_000 });
        return true;
      },
      STEP_MS,
      1_000,
    );
    await screenshot("notebook-quick-fix-menu");
    await menu.locator(".monaco-list-row", { hasText: nb.fix.title }).first().click();
    await waitFor(
      "the notebook diagnostic to disappear",
      async () => !(await problemsRows()).some((text) => text.includes(nbKey)),
      STEP_MS,
      500,
    );
    await screenshot("notebook-fixed");
  });

  await step("save the notebook and check it on disk", async () => {
    await page.keyboard.press("Control+S");
    const text = await waitFor(
      `${notebookPath} to contain ${nbEdit.new_text}`,
      () => {
        const now = fs.readFileSync(notebookPath, "utf8");
        return now !== notebookOriginal && now.includes(nbEdit.new_text) ? now : null;
      },
      STEP_MS,
    );
    const saved = JSON.parse(text);
    const cell = saved.cells[nb.location.cell - 1];
    const source = Array.isArray(cell.source) ? cell.source.join("") : cell.source;
    log(`cell ${nb.location.cell} on disk: ${source.split("\n")[nb.location.line - 1].trim()}`);
    if (!source.split("\n")[nb.location.line - 1].includes(nbEdit.new_text)) {
      throw new Error(`cell ${nb.location.cell} line ${nb.location.line} does not hold ${nbEdit.new_text}`);
    }
    if (saved.metadata?.custom?.keep !== "this" || JSON.stringify(cell.outputs) !== JSON.stringify(JSON.parse(notebookOriginal).cells[2].outputs)) {
      throw new Error("the notebook's metadata or outputs changed");
    }
    await page.keyboard.press("Escape");
  });

  // The daemon's state reaches the status bar: start it (the workspace is not trusted to run
  // code, so it runs static-only and says "untrusted"), then stop it.
  await step("Start Daemon → status bar", async () => {
    await runCommand("Warp Harness: Start Daemon");
    const text = await waitFor(
      "the status bar to show the started daemon",
      async () => {
        const now = await statusText();
        return now && /Warp: (untrusted|idle)/.test(now) ? now : null;
      },
      LOAD_MS,
      500,
    );
    log(`status bar: ${text.trim()}`);
    await screenshot("daemon-started");
  });

  await step("Stop Daemon → status bar", async () => {
    await page.keyboard.press("Escape");
    await runCommand("Warp Harness: Stop Daemon");
    const text = await waitFor(
      "the status bar to show the daemon off",
      async () => {
        const now = await statusText();
        return now && now.includes("Warp: daemon off") ? now : null;
      },
      STEP_MS,
      500,
    );
    log(`status bar: ${text.trim()}`);
  });

  // A setting changed while running reaches the server (workspace/didChangeConfiguration).
  const remaining = rest.filter((r) => !safe.includes(r)); // Fix All applied the safe ones
  const ignored = remaining.find((r) => r.rule !== record.rule);
  if (ignored !== undefined) {
    await step(`warpHarness.ignore = ["${ignored.rule}"] → its diagnostic goes`, async () => {
      const settingsFile = path.join(workspace, ".vscode", "settings.json");
      fs.writeFileSync(
        settingsFile,
        JSON.stringify({ ...workspaceSettings, "warpHarness.ignore": [ignored.rule] }, null, 2),
      );
      const key = ignored.message.split('"')[0].trim().slice(0, 60);
      await waitFor(
        `"${key}" to leave the Problems panel`,
        async () => !(await problemsRows()).some((text) => text.includes(key)),
        STEP_MS,
        500,
      );
      const kept = remaining.filter((r) => r.rule !== ignored.rule);
      for (const other of kept) {
        const otherKey = other.message.split('"')[0].trim().slice(0, 60);
        if (!(await problemsRows()).some((text) => text.includes(otherKey))) {
          throw new Error(`"${otherKey}" (${other.rule}) went too`);
        }
      }
    });
  }

  // Run CI Check: `warp-harness ci <folder> --static-only` as a task, in the terminal.
  await step("Run CI Check on Workspace → the terminal", async () => {
    await page.keyboard.press("Escape");
    await runCommand("Warp Harness: Run CI Check on Workspace");
    const text = await waitFor(
      "the ci summary in the terminal",
      async () => {
        // terminal.integrated.gpuAcceleration = off: xterm renders its rows as DOM text
        const rows = await page.locator(".terminal-wrapper.active .xterm-rows").allInnerTexts();
        const all = rows.join("\n");
        return /warp-harness ci: .*error/.test(all) ? all : null;
      },
      LOAD_MS,
      500,
    );
    const summary = text.split("\n").find((line) => line.includes("warp-harness ci:"));
    log(`terminal: ${summary.trim()}`);
    await screenshot("ci-task");
  });

  // warpHarness.enable off for the (only) folder: no server, nothing shown; on again: back.
  if (ignored !== undefined) {
    await step("warpHarness.enable = false → the server stops and its diagnostics go; true → back", async () => {
      const key = keyOf(ignored);
      const shown = async () => (await problemsRows()).some((text) => text.includes(key));
      writeWorkspaceSettings({}); // warpHarness.ignore cleared: the diagnostic is back first
      await page.keyboard.press("Escape");
      await page.locator(".monaco-editor .view-lines").first().click();
      await page.keyboard.press("Control+Shift+M");
      await waitFor(`"${key}" back in the Problems panel`, shown, STEP_MS, 500);
      writeWorkspaceSettings({ "warpHarness.enable": false });
      const text = await waitFor(
        "Warp: disabled in the status bar, the diagnostic gone",
        async () => {
          const now = await statusText();
          return now && now.includes("Warp: disabled") && !(await shown()) ? now : null;
        },
        STEP_MS,
        500,
      );
      log(`status bar: ${text.trim()}`);
      await screenshot("disabled");
      writeWorkspaceSettings({});
      await waitFor(`"${key}" back once enabled`, shown, STEP_MS, 500);
    });
  }

  // A server command that does not exist: the extension says so, and the status bar too.
  await step("a missing server is reported", async () => {
    const settingsFile = path.join(workspace, ".vscode", "settings.json");
    const missing = path.join(scratch, "no-such-venv", "bin", "warp-harness");
    fs.writeFileSync(settingsFile, JSON.stringify({ "warpHarness.server.command": [missing, "serve"] }, null, 2));
    const toast = await waitFor(
      "the extension's error notification",
      async () => {
        const texts = await page.locator(".notifications-toasts .notification-list-item-message").allInnerTexts();
        return texts.find((text) => text.includes("could not be started") && text.includes(missing));
      },
      STEP_MS,
      500,
    );
    log(`notification: ${toast.replace(/\s+/g, " ")}`);
    await waitFor(
      "the status bar to say the server stopped",
      async () => ((await statusText()) ?? "").includes("server stopped"),
      STEP_MS,
      500,
    );
    await screenshot("server-missing");
  });

  // A server that exits at once (here: warp-harness with a subcommand it does not have).
  await step("a server that does not start is reported", async () => {
    const settingsFile = path.join(workspace, ".vscode", "settings.json");
    const broken = [serverCommand[0], "no-such-subcommand"];
    fs.writeFileSync(settingsFile, JSON.stringify({ "warpHarness.server.command": broken }, null, 2));
    const toast = await waitFor(
      "the extension's error notification",
      async () => {
        const texts = await page.locator(".notifications-toasts .notification-list-item-message").allInnerTexts();
        return texts.find((text) => text.includes("did not start") && text.includes("no-such-subcommand"));
      },
      STEP_MS,
      500,
    );
    log(`notification: ${toast.replace(/\s+/g, " ")}`);
    await screenshot("server-broken");
  });
}

/** Processes (ours) whose command line names the scratch folder: a daemon the server started in
 * its own session survives the process-group kill. */
function leftovers() {
  const pids = [];
  for (const entry of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) {
      continue;
    }
    try {
      const cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, "utf8");
      if (cmdline.includes(scratch)) {
        pids.push(Number(entry));
      }
    } catch {
      // gone, or not ours to read
    }
  }
  return pids;
}

async function cleanup() {
  if (context !== undefined) {
    await context.close().catch(() => {});
  }
  if (codeServer !== undefined && codeServer.exitCode === null && codeServer.signalCode === null) {
    const group = -codeServer.pid;
    try {
      process.kill(group, "SIGTERM");
    } catch {
      // already gone
    }
    const exited = await Promise.race([
      new Promise((resolve) => codeServer.once("exit", () => resolve(true))),
      new Promise((resolve) => setTimeout(() => resolve(false), 10_000)),
    ]);
    try {
      process.kill(group, "SIGKILL"); // the extension host and the language server under it
    } catch {
      // the whole group is gone
    }
    if (!exited) {
      log("code-server did not stop on SIGTERM; killed");
    }
  }
  const left = leftovers();
  if (left.length > 0) {
    log(`stopping ${left.length} leftover process(es) of this run: ${left.join(", ")}`);
    for (const pid of left) {
      try {
        process.kill(pid, "SIGTERM");
      } catch {
        // already gone
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    for (const pid of leftovers()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  }
}

const overall = setTimeout(() => {
  log(`overall timeout of ${OVERALL_S} s`);
  void screenshot("FAILED-overall-timeout").finally(() => cleanup().finally(() => process.exit(2)));
}, OVERALL_S * 1000);

let failed = false;
try {
  await main();
  log(`PASS in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
} catch (error) {
  failed = true;
  console.error(`[e2e] FAIL: ${error.message}`);
  const serverLog = path.join(artifacts, "code-server.log");
  if (fs.existsSync(serverLog)) {
    const lines = fs.readFileSync(serverLog, "utf8").trimEnd().split("\n");
    console.error(`--- last lines of ${serverLog}:\n${lines.slice(-30).join("\n")}`);
  }
  const logs = path.join(scratch, "user-data", "logs");
  if (fs.existsSync(logs)) {
    for (const file of fs.readdirSync(logs, { recursive: true })) {
      if (/Warp Harness|exthost\.log/.test(String(file))) {
        const full = path.join(logs, String(file));
        const lines = fs.readFileSync(full, "utf8").trimEnd().split("\n");
        console.error(`--- last lines of ${full}:\n${lines.slice(-40).join("\n")}`);
      }
    }
  }
  console.error(`[e2e] screenshots and logs kept in ${artifacts} (scratch: ${scratch})`);
} finally {
  clearTimeout(overall);
  await cleanup();
}
if (!failed) {
  fs.rmSync(scratch, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
