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
} from "vscode-languageclient/node";

import { type CommandLine, cliCommand, resolveServerCommand } from "./command";
import { RESTART_SETTINGS, type ServerSettings, serverSettings } from "./settings";
import { DAEMON_STATE_NOTIFICATION, type DaemonState, StatusItem } from "./status";

const SECTION = "warpHarness";
const NAME = "Warp Harness";
const STATUS_MENU = "warpHarness.statusMenu";

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
  serverLine = resolution.line;
  output.info(`starting ${[resolution.line.command, ...resolution.line.args].join(" ")} (from ${resolution.how})`);

  const executable = {
    command: resolution.line.command,
    args: resolution.line.args,
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
        `Warp Harness: \`${[resolution.line.command, ...resolution.line.args].join(" ")}\` did not start ` +
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

async function statusMenu(): Promise<void> {
  const items: (vscode.QuickPickItem & { command: string })[] = [
    { label: "$(play) Start Daemon", command: "warpHarness.startDaemon" },
    { label: "$(debug-stop) Stop Daemon", command: "warpHarness.stopDaemon" },
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
