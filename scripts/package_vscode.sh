#!/usr/bin/env bash
# package_vscode.sh -- builds the VS Code extension (editors/vscode) into a
# .vsix: `npm ci` when node_modules is missing or older than package-lock.json,
# then `npm run compile` and `npm run package`. Prints the path of the .vsix;
# install it with `code --install-extension <that path>` (docs/editors.md).
set -euo pipefail

dir=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/editors/vscode
cd "$dir"

if ! command -v npm >/dev/null 2>&1; then
  echo "package_vscode: npm is not installed (scripts/setup.sh installs it)" >&2
  exit 1
fi
if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "package_vscode: npm ci"
  npm ci --no-audit --no-fund
fi
npm run compile
version=$(node -p "require('./package.json').version")
name=$(node -p "require('./package.json').name")
vsix=$dir/$name-$version.vsix
rm -f "$vsix"
npm run package -- --out "$vsix"
if [[ ! -f $vsix ]]; then
  echo "package_vscode: npm run package did not write $vsix" >&2
  exit 1
fi
echo "package_vscode: wrote $vsix"
echo "package_vscode: install it with: code --install-extension $vsix"
