// The status-bar item: the daemon's state, fed by the server's `warp-harness/daemonState`.
import * as vscode from "vscode";

export type DaemonStateName =
  | "off"
  | "starting"
  | "idle"
  | "compiling"
  | "validating"
  | "benchmarking"
  | "failed"
  | "untrusted";

/** Params of the `warp-harness/daemonState` notification. */
export interface DaemonState {
  state: DaemonStateName;
  message?: string | null;
  path?: string | null;
}

export const DAEMON_STATE_NOTIFICATION = "warp-harness/daemonState";

interface Look {
  icon: string;
  label: string;
  color?: string;
  meaning: string;
}

const LOOKS: Record<DaemonStateName, Look> = {
  off: { icon: "$(circle-slash)", label: "daemon off", meaning: "static checks only; the daemon is not running" },
  starting: { icon: "$(loading~spin)", label: "starting", meaning: "the daemon is starting" },
  idle: { icon: "$(check)", label: "idle", meaning: "the daemon is waiting for a save" },
  compiling: { icon: "$(sync~spin)", label: "compiling", meaning: "compiling the saved kernels" },
  validating: { icon: "$(sync~spin)", label: "validating", meaning: "checking kernels against their references" },
  benchmarking: { icon: "$(sync~spin)", label: "benchmarking", meaning: "timing kernels" },
  failed: {
    icon: "$(error)",
    label: "failed",
    color: "statusBarItem.errorBackground",
    meaning: "the daemon failed",
  },
  untrusted: {
    icon: "$(shield)",
    label: "untrusted",
    color: "statusBarItem.warningBackground",
    meaning: "static checks only: the workspace is not trusted to run code (setting warpHarness.trust)",
  },
};

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.StatusBarItem;
  private current: DaemonState | undefined;

  constructor(command: string) {
    this.item = vscode.window.createStatusBarItem("warpHarness.status", vscode.StatusBarAlignment.Left, 10);
    this.item.name = "Warp Harness";
    this.item.command = command;
    this.serverStarting();
    this.item.show();
  }

  get state(): DaemonState | undefined {
    return this.current;
  }

  serverStarting(): void {
    this.current = undefined;
    this.render("$(loading~spin)", "Warp: server starting", "Starting `warp-harness serve`", undefined);
  }

  serverStopped(reason: string): void {
    this.current = undefined;
    this.render("$(debug-disconnect)", "Warp: server stopped", reason, "statusBarItem.warningBackground");
  }

  serverDisabled(): void {
    this.current = undefined;
    this.render(
      "$(circle-slash)",
      "Warp: disabled",
      "`warpHarness.enable` is off for this workspace: the language server is not running.",
      undefined,
    );
  }

  /** A `warp-harness/daemonState` notification, or the `{"state": ...}` an executeCommand returned. */
  update(state: DaemonState): void {
    const look = LOOKS[state.state] ?? { icon: "$(question)", label: String(state.state), meaning: "" };
    this.current = state;
    const lines = [`**Warp Harness** — daemon ${look.label}: ${look.meaning}`];
    if (state.message) {
      lines.push("", escapeMarkdown(state.message));
    }
    if (state.path) {
      lines.push("", `\`${state.path}\``);
    }
    lines.push("", "Click for actions.");
    this.render(look.icon, `Warp: ${look.label}`, lines.join("\n"), look.color);
  }

  private render(icon: string, text: string, tooltip: string, color: string | undefined): void {
    this.item.text = `${icon} ${text}`;
    this.item.tooltip = new vscode.MarkdownString(tooltip);
    this.item.backgroundColor = color === undefined ? undefined : new vscode.ThemeColor(color);
    this.item.accessibilityInformation = { label: text };
  }

  dispose(): void {
    this.item.dispose();
  }
}

function escapeMarkdown(text: string): string {
  return text.replace(/[\\`*_{}[\]()#+\-.!|<>]/g, (c) => `\\${c}`);
}
