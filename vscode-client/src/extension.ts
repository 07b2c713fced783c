// VS Code client for the warp-harness language server (`warp-harness serve`, LSP over stdio).
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  ExecuteCommandRequest,
  LanguageClient,
  type LanguageClientOptions,
  type ServerOptions,
  State,
  TransportKind,
  vsdiag,
} from "vscode-languageclient/node";

import { type CommandLine, cliCommand, resolveServerCommand, withLogLevel } from "./command";
import { adjustDiagnostics, serverWanted } from "./diagnostics";
import {
  RESTART_SETTINGS,
  type RuleSeverities,
  type ServerSettings,
  logLevel,
  ruleSeverities,
  serverSettings,
} from "./settings";
import { DAEMON_STATE_NOTIFICATION, type DaemonState, StatusItem } from "./status";

const SECTION = "warpHarness";
const NAME = "Warp Harness";
const STATUS_MENU = "warpHarness.statusMenu";
const FIX_ALL_KIND = vscode.CodeActionKind.SourceFixAll.append("warp-harness");

let client: LanguageClient | undefined;
let serverLine: CommandLine | undefined;
let output: vscode.LogOutputChannel;
let status: StatusItem;
let starting: Promise<void> | undefined;
let pyprojectWatcher: vscode.FileSystemWatcher;

function folders(): string[] {
  return (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath);
}

function currentSettings(): ServerSettings {
  const config = vscode.workspace.getConfiguration(SECTION);
  return serverSettings((key) => config.inspect(key), vscode.workspace.isTrusted);
}

function currentRuleSeverities(): RuleSeverities {
  const config = vscode.workspace.getConfiguration(SECTION);
  return ruleSeverities(config.get<Record<string, string>>("severity"));
}

/** Rules set to "off" when the server was started or last sent its settings. */
let hiddenRules = "";

function reportInvalidSeverities(rules: RuleSeverities): void {
  if (rules.invalid.length > 0) {
    output.warn(
      `warpHarness.severity: ignoring ${rules.invalid.join(", ")} (use a rule id and one of error, warning, info, hint, off)`,
    );
  }
}

/** `warpHarness.enable` for the folder of `uri` (the window's value outside every folder). */
function enabledFor(uri: vscode.Uri): boolean {
  const folder = vscode.workspace.getWorkspaceFolder(uri);
  return vscode.workspace.getConfiguration(SECTION, folder?.uri ?? uri).get<boolean>("enable", true);
}

function serverEnabled(): boolean {
  const all = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file");
  const perFolder = all.map((f) => vscode.workspace.getConfiguration(SECTION, f.uri).get<boolean>("enable", true));
  return serverWanted(perFolder, vscode.workspace.getConfiguration(SECTION).get<boolean>("enable", true));
}

/** A document the client keeps from the server: its folder has `warpHarness.enable` off. */
function disabledDocument(document: vscode.TextDocument | vscode.Uri): boolean {
  return !enabledFor(document instanceof vscode.Uri ? document : document.uri);
}

/** One file of a workspace diagnostic report as the editor shows it (see `provideDiagnostics`). */
function shownWorkspaceReport(report: vsdiag.WorkspaceDocumentDiagnosticReport): vsdiag.WorkspaceDocumentDiagnosticReport {
  if (disabledDocument(report.uri)) {
    return { kind: vsdiag.DocumentDiagnosticReportKind.full, uri: report.uri, version: report.version, items: [] };
  }
  if (report.kind === vsdiag.DocumentDiagnosticReportKind.full) {
    report.items = adjustDiagnostics(report.items, currentRuleSeverities());
  }
  return report;
}

async function reportNotInstalled(reason: string): Promise<void> {
  output.error(reason);
  status.serverStopped(reason);
  const choice = await vscode.window.showErrorMessage(
    `Warp Harness: the language server could not be started. ${reason}`,
    "Open Settings",
    "Retry",
    "Show Output",
  );
  if (choice === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "warpHarness.server");
  } else if (choice === "Retry") {
    await restart();
  } else if (choice === "Show Output") {
    output.show();
  }
}

async function startClient(): Promise<void> {
  const config = vscode.workspace.getConfiguration(SECTION);
  if (!serverEnabled()) {
    serverLine = undefined;
    output.info("warpHarness.enable is off for every folder: the server is not started");
    status.serverDisabled();
    return;
  }
  const resolution = resolveServerCommand(
    {
      command: config.get<string[]>("server.command") ?? [],
      interpreter: config.get<string>("server.interpreter") ?? "",
    },
    folders(),
    vscode.workspace.isTrusted,
  );
  if (!resolution.ok) {
    serverLine = undefined;
    void reportNotInstalled(resolution.reason);
    return;
  }
  const line = withLogLevel(resolution.line, logLevel((key) => config.inspect(key)));
  serverLine = line;
  output.info(`starting ${[line.command, ...line.args].join(" ")} (from ${resolution.how})`);
  const rules = currentRuleSeverities();
  reportInvalidSeverities(rules);
  hiddenRules = rules.off.join(",");

  const executable = {
    command: line.command,
    args: line.args,
    transport: TransportKind.stdio,
    options: { cwd: folders()[0], env: { ...process.env, PYTHONUNBUFFERED: "1" } },
  };
  const serverOptions: ServerOptions = { run: executable, debug: executable };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
      // Python cells of Jupyter notebooks: synced as notebooks (LSP 3.17 notebookDocument/*)
      { notebook: { notebookType: "jupyter-notebook" }, language: "python" },
    ],
    outputChannel: output,
    diagnosticCollectionName: "warp-harness",
    initializationOptions: () => ({ settings: currentSettings() }),
    synchronize: { fileEvents: pyprojectWatcher },
    middleware: {
      // a folder with warpHarness.enable off: its documents are not sent, nothing is shown for them
      didOpen: (document, next) => (disabledDocument(document) ? Promise.resolve() : next(document)),
      didChange: (event, next) => (disabledDocument(event.document) ? Promise.resolve() : next(event)),
      didSave: (document, next) => (disabledDocument(document) ? Promise.resolve() : next(document)),
      didClose: (document, next) => (disabledDocument(document) ? Promise.resolve() : next(document)),
      handleDiagnostics: (uri, diagnostics, next) => {
        next(uri, disabledDocument(uri) ? [] : adjustDiagnostics(diagnostics, currentRuleSeverities()));
      },
      provideDiagnostics: async (document, previousResultId, token, next) => {
        if (disabledDocument(document)) {
          return { kind: vsdiag.DocumentDiagnosticReportKind.full, items: [] };
        }
        const report = await next(document, previousResultId, token);
        if (report?.kind === vsdiag.DocumentDiagnosticReportKind.full) {
          report.items = adjustDiagnostics(report.items, currentRuleSeverities());
        }
        return report;
      },
      provideWorkspaceDiagnostics: async (resultIds, token, resultReporter, next) => {
        const shown = (items: vsdiag.WorkspaceDocumentDiagnosticReport[]) => items.map(shownWorkspaceReport);
        const report = await next(resultIds, token, (chunk) =>
          resultReporter(chunk === null ? null : { items: shown(chunk.items) }),
        );
        return report ? { items: shown(report.items) } : report;
      },
      workspace: {
        // A server that pulls its settings gets the same table the extension pushes (with the
        // trust policy applied), never VS Code's raw camelCase section.
        configuration: async (params, token, next) => {
          const answers = await next(params, token);
          if (!Array.isArray(answers)) {
            return answers;
          }
          return params.items.map((item, index) =>
            item.section === SECTION ? currentSettings() : (answers[index] as unknown),
          );
        },
      },
    },
    initializationFailedHandler: (error) => {
      output.error(`initialize failed: ${String(error)}`);
      return false;
    },
  };

  const next = new LanguageClient("warpHarness", NAME, serverOptions, clientOptions);
  client = next;
  status.serverStarting();
  next.onDidChangeState((event) => {
    if (event.newState === State.Stopped && client === next) {
      status.serverStopped("The language server is not running. Run “Warp Harness: Restart Server”.");
    } else if (event.newState === State.Running && status.state === undefined) {
      status.update({ state: "off" });
    }
  });
  // registered before start(), so a state sent during initialization is not missed
  next.onNotification(DAEMON_STATE_NOTIFICATION, (params: DaemonState) => {
    if (client === next) {
      status.update(params);
    }
  });
  try {
    await next.start();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    output.error(`the server did not start: ${message}`);
    status.serverStopped(message);
    // not awaited: a restart must not wait for someone to dismiss the notification
    void vscode.window
      .showErrorMessage(
        `Warp Harness: \`${[line.command, ...line.args].join(" ")}\` did not start ` +
          `(${message}). Is a recent warp-harness installed there?`,
        "Show Output",
        "Open Settings",
      )
      .then((choice) => {
        if (choice === "Show Output") {
          output.show();
        } else if (choice === "Open Settings") {
          void vscode.commands.executeCommand("workbench.action.openSettings", "warpHarness.server");
        }
      });
  }
}

async function stopClient(): Promise<void> {
  const old = client;
  client = undefined;
  if (old !== undefined && old.state !== State.Stopped) {
    try {
      await old.stop(5000);
    } catch (error) {
      output.warn(`stopping the server: ${String(error)}`);
    }
  }
}

async function restart(): Promise<void> {
  if (starting !== undefined) {
    await starting;
  }
  starting = (async () => {
    await stopClient();
    await startClient();
  })();
  try {
    await starting;
  } finally {
    starting = undefined;
  }
}

function sendSettings(): void {
  const rules = currentRuleSeverities();
  reportInvalidSeverities(rules);
  if (rules.off.join(",") !== hiddenRules) {
    // diagnostics already shown for a rule turned off (or back on) change only when the server
    // publishes them again: a new server does, for every open document
    void restart();
    return;
  }
  if (client?.state === State.Running) {
    void client.sendNotification(DidChangeConfigurationNotification.type, {
      settings: { [SECTION]: currentSettings() },
    });
  }
}

async function pickFolder(placeHolder: string): Promise<vscode.WorkspaceFolder | undefined> {
  const all = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === "file");
  if (all.length <= 1) {
    return all[0];
  }
  const active = vscode.window.activeTextEditor?.document.uri;
  const owner = active ? vscode.workspace.getWorkspaceFolder(active) : undefined;
  return (await vscode.window.showWorkspaceFolderPick({ placeHolder })) ?? owner;
}

function isDaemonState(value: unknown): value is DaemonState {
  return typeof value === "object" && value !== null && typeof (value as { state?: unknown }).state === "string";
}

async function daemonCommand(which: "start" | "stop"): Promise<void> {
  if (client?.state !== State.Running) {
    void vscode.window.showWarningMessage("Warp Harness: the language server is not running.");
    return;
  }
  const folder = await pickFolder(`Folder whose daemon to ${which}`);
  try {
    const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, {
      command: which === "start" ? "warp-harness.startDaemon" : "warp-harness.stopDaemon",
      arguments: folder ? [folder.uri.fsPath] : [],
    });
    const state = isDaemonState(result) ? result.state : undefined;
    if (isDaemonState(result)) {
      status.update(result);
      if (state === "untrusted") {
        void vscode.window.showWarningMessage(
          "Warp Harness: the daemon runs workspace code, so it needs a trusted workspace: trust it in VS Code " +
            "and turn on `warpHarness.trust` in your user settings (a workspace's own pyproject.toml cannot trust itself).",
        );
      }
    }
  } catch (error) {
    void vscode.window.showErrorMessage(`Warp Harness: ${which} daemon failed: ${String(error)}`);
  }
}

async function runCiCheck(): Promise<void> {
  const folder = await pickFolder("Folder to check");
  if (folder === undefined) {
    void vscode.window.showWarningMessage("Warp Harness: open a folder to run the CI check on.");
    return;
  }
  if (serverLine === undefined) {
    void vscode.window.showErrorMessage("Warp Harness: warp-harness was not found (see the output).");
    return;
  }
  const trusted = vscode.workspace.isTrusted && currentSettings().trust === true;
  // both tiers when trusted; the static tier only otherwise (the dynamic one executes workspace code)
  const line = cliCommand(serverLine, "ci", [folder.uri.fsPath, trusted ? "--trust" : "--static-only"]);
  const task = new vscode.Task(
    { type: "process", task: "warp-harness ci" },
    folder,
    `ci ${folder.name}`,
    "warp-harness",
    new vscode.ProcessExecution(line.command, line.args, { cwd: folder.uri.fsPath }),
    [],
  );
  task.presentationOptions = { reveal: vscode.TaskRevealKind.Always, clear: true };
  await vscode.tasks.executeTask(task);
}

/** "Fix all": the server's `source.fixAll.warp-harness` action on the active document, applied. */
async function fixAll(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.languageId !== "python") {
    void vscode.window.showWarningMessage("Warp Harness: open a Python file to fix.");
    return;
  }
  if (client?.state !== State.Running) {
    void vscode.window.showWarningMessage("Warp Harness: the language server is not running.");
    return;
  }
  const document = editor.document;
  const whole = new vscode.Range(document.positionAt(0), document.positionAt(document.getText().length));
  const actions =
    (await vscode.commands.executeCommand<vscode.CodeAction[]>(
      "vscode.executeCodeActionProvider",
      document.uri,
      whole,
      FIX_ALL_KIND.value,
    )) ?? [];
  const ours = actions.filter((a) => a.kind !== undefined && FIX_ALL_KIND.contains(a.kind));
  let applied = 0;
  for (const action of ours) {
    if (action.edit !== undefined && (await vscode.workspace.applyEdit(action.edit))) {
      applied++;
    }
    if (action.command !== undefined) {
      const args: unknown[] = action.command.arguments ?? [];
      await vscode.commands.executeCommand(action.command.command, ...args);
    }
  }
  if (applied === 0) {
    void vscode.window.showInformationMessage("Warp Harness: nothing to fix automatically in this file.");
  }
}

async function statusMenu(): Promise<void> {
  const items: (vscode.QuickPickItem & { command: string })[] = [
    { label: "$(play) Start Daemon", command: "warpHarness.startDaemon" },
    { label: "$(debug-stop) Stop Daemon", command: "warpHarness.stopDaemon" },
    { label: "$(wrench) Fix All in This File", command: "warpHarness.fixAll" },
    { label: "$(checklist) Run CI Check on Workspace", command: "warpHarness.runCiCheck" },
    { label: "$(output) Show Output", command: "warpHarness.showOutput" },
    { label: "$(debug-restart) Restart Server", command: "warpHarness.restartServer" },
  ];
  const chosen = await vscode.window.showQuickPick(items, { placeHolder: "Warp Harness" });
  if (chosen) {
    await vscode.commands.executeCommand(chosen.command);
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel(NAME, { log: true });
  status = new StatusItem(STATUS_MENU);
  pyprojectWatcher = vscode.workspace.createFileSystemWatcher("**/pyproject.toml");
  context.subscriptions.push(
    output,
    status,
    pyprojectWatcher,
    vscode.commands.registerCommand("warpHarness.restartServer", restart),
    vscode.commands.registerCommand("warpHarness.startDaemon", () => daemonCommand("start")),
    vscode.commands.registerCommand("warpHarness.stopDaemon", () => daemonCommand("stop")),
    vscode.commands.registerCommand("warpHarness.runCiCheck", runCiCheck),
    vscode.commands.registerCommand("warpHarness.fixAll", fixAll),
    vscode.commands.registerCommand("warpHarness.showOutput", () => output.show()),
    vscode.commands.registerCommand(STATUS_MENU, statusMenu),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (!event.affectsConfiguration(SECTION)) {
        return;
      }
      if (RESTART_SETTINGS.some((key) => event.affectsConfiguration(key))) {
        void restart();
      } else {
        sendSettings();
      }
    }),
    // the server command may change (a workspace .venv may be run only now); the new server gets
    // the trusted settings at initialize
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restart()),
    vscode.workspace.onDidChangeWorkspaceFolders(() => {
      if (serverLine === undefined) {
        void restart();
      }
    }),
  );
  await restart();
}

export async function deactivate(): Promise<void> {
  await stopClient();
}
