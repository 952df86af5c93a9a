#!/usr/bin/env node
// sync-examples.js -- keeps test/snapshots/*.net identical to the repository's
// examples/*.net, the inputs of the grammar snapshot tests (each with its
// committed <name>.net.snap next to it).
//
//   node scripts/sync-examples.js          copy new or changed examples in and
//                                          remove copies (and snapshots) of deleted ones
//   node scripts/sync-examples.js --check  change nothing; exit 1 when a copy is
//                                          missing, stale or extra, or has no .snap
//
// `npm test` runs --check first; `npm run update-snapshots` syncs and then
// regenerates every snapshot.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const examplesDir = path.resolve(root, '..', '..', 'examples');
const snapshotsDir = path.join(root, 'test', 'snapshots');
const check = process.argv.includes('--check');

const netFiles = (dir) =>
  fs.existsSync(dir)
    ? fs.readdirSync(dir).filter((f) => f.endsWith('.net') && fs.statSync(path.join(dir, f)).isFile()).sort()
    : [];

const examples = netFiles(examplesDir);
if (examples.length === 0) {
  console.error(`sync-examples: no *.net files in ${examplesDir}`);
  process.exit(1);
}
const copies = new Set(netFiles(snapshotsDir));
const problems = [];

for (const name of examples) {
  const source = fs.readFileSync(path.join(examplesDir, name));
  const copyPath = path.join(snapshotsDir, name);
  const same = copies.has(name) && fs.readFileSync(copyPath).equals(source);
  copies.delete(name);
  if (!same) {
    if (check) {
      problems.push(`${name}: test/snapshots/${name} is ${fs.existsSync(copyPath) ? 'out of date' : 'missing'}`);
    } else {
      fs.mkdirSync(snapshotsDir, { recursive: true });
      fs.writeFileSync(copyPath, source);
      console.log(`sync-examples: copied examples/${name}`);
    }
  }
  if (check && same && !fs.existsSync(copyPath + '.snap')) {
    problems.push(`${name}: test/snapshots/${name}.snap is missing`);
  }
}
for (const name of copies) {
  if (check) {
    problems.push(`${name}: test/snapshots/${name} has no examples/${name}`);
  } else {
    for (const stale of [name, name + '.snap']) {
      fs.rmSync(path.join(snapshotsDir, stale), { force: true });
    }
    console.log(`sync-examples: removed test/snapshots/${name} (and its .snap)`);
  }
}

if (problems.length > 0) {
  for (const p of problems) {
    console.error(`sync-examples: ${p}`);
  }
  console.error('sync-examples: run `npm run update-snapshots` in editors/vscode, review the .snap diff, and commit it');
  process.exit(1);
}
console.log(`sync-examples: ${examples.length} examples ${check ? 'match test/snapshots/' : 'synced'}`);
