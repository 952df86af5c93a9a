// serverPath.test.js -- Node test-runner tests (no VS Code needed) for the
// lookup of the `netc.serverPath` executable, on the compiled out/serverPath.js
// (`npm test` compiles first).
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { resolveExecutable, isExecutableFile } = require('../../out/serverPath.js');

const posix = process.platform !== 'win32';

function scratch() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'netc-serverpath-'));
  const bin = path.join(dir, 'bin');
  fs.mkdirSync(bin);
  const exe = path.join(bin, 'netc');
  fs.writeFileSync(exe, '#!/bin/sh\n');
  fs.chmodSync(exe, 0o755);
  const plain = path.join(bin, 'notes');
  fs.writeFileSync(plain, 'not a program\n');
  fs.chmodSync(plain, 0o644);
  return { dir, bin, exe, plain };
}

test('a bare name is looked up on PATH', () => {
  const s = scratch();
  const env = { PATH: ['/nonexistent', s.bin].join(path.delimiter) };
  assert.strictEqual(resolveExecutable('netc', env, s.dir), s.exe);
  assert.strictEqual(resolveExecutable('netc-missing', env, s.dir), undefined);
  assert.strictEqual(resolveExecutable('netc', { PATH: '' }, s.dir), undefined);
});

test('absolute and relative paths are taken as they are', () => {
  const s = scratch();
  assert.strictEqual(resolveExecutable(s.exe, { PATH: '' }, '/'), s.exe);
  assert.strictEqual(resolveExecutable('bin/netc', { PATH: '' }, s.dir), s.exe);
  assert.strictEqual(resolveExecutable('./bin/netc', { PATH: '' }, s.dir), s.exe);
  assert.strictEqual(resolveExecutable('bin/none', { PATH: '' }, s.dir), undefined);
});

test('directories, empty names and (on POSIX) non-executable files are refused', { skip: !posix }, () => {
  const s = scratch();
  assert.strictEqual(isExecutableFile(s.bin), false);
  assert.strictEqual(isExecutableFile(s.plain), false);
  assert.strictEqual(resolveExecutable(s.plain, { PATH: '' }, s.dir), undefined);
  assert.strictEqual(resolveExecutable('notes', { PATH: s.bin }, s.dir), undefined);
  assert.strictEqual(resolveExecutable('   ', { PATH: s.bin }, s.dir), undefined);
});
