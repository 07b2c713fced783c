// Bundles src/extension.ts and its dependencies (vscode-languageclient) into dist/extension.js.
// `--production` minifies; otherwise a source map is written next to the bundle.
import * as esbuild from "esbuild";

const production = process.argv.includes("--production");

await esbuild.build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  platform: "node",
  format: "cjs",
  // the Node of the extension host VS Code 1.91 (engines.vscode) ships, not the Node 24 that builds and tests
  target: "node20",
  external: ["vscode"],
  minify: production,
  sourcemap: production ? false : "linked",
  logLevel: "info",
});
