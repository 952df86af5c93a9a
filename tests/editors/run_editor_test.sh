#!/usr/bin/env bash
# run_editor_test.sh -- runs one editor test (tests/editors) with the real
# editor, headless, against a netc binary, in a scratch folder:
#   run_editor_test.sh neovim NETC SOURCE_DIR   (nvim, editors/neovim/netc.lua)
#   run_editor_test.sh emacs  NETC SOURCE_DIR   (emacs, editors/emacs/netc-mode.el)
# Exits 77 (CTest's SKIP_RETURN_CODE for these tests) after saying why when
# the editor or Eglot is missing; scripts/setup.sh --test installs them (Debian's
# neovim, emacs-nox and elpa-eglot).
set -euo pipefail

readonly SKIP=77
editor=${1:?usage: run_editor_test.sh neovim|emacs NETC SOURCE_DIR}
netc=${2:?the netc binary}
source_dir=${3:?the source folder}
here="$source_dir/tests/editors"

skip() {
  echo "SKIPPED: $*" >&2
  echo "(scripts/setup.sh --test installs the editors the editor tests use: neovim, emacs-nox, elpa-eglot)" >&2
  exit "$SKIP"
}

scratch=$(mktemp -d "${TMPDIR:-/tmp}/netc-editor-test.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
# The editors keep their state (logs, shada, ELPA) in the scratch folder, not in $HOME.
export HOME="$scratch/home" XDG_CONFIG_HOME="$scratch/home/.config" XDG_DATA_HOME="$scratch/home/.local/share" \
  XDG_STATE_HOME="$scratch/home/.local/state" XDG_CACHE_HOME="$scratch/home/.cache"
mkdir -p "$HOME"
export NETC="$netc"
"$netc" lsp --help > /dev/null || { echo "FAILED: '$netc lsp --help' does not run" >&2; exit 1; }

case "$editor" in
neovim)
  command -v nvim > /dev/null || skip "nvim (Neovim) is not installed"
  # The recipe needs Neovim 0.7 (vim.api.nvim_create_autocmd, vim.keymap).
  version=$(nvim --version | head -n 1)
  if ! nvim --headless -u NONE -c 'lua if vim.fn.has("nvim-0.7") == 0 then vim.cmd("cquit 1") end' -c 'qall!' \
    > /dev/null 2>&1; then
    skip "$version is older than the 0.7 the recipe needs"
  fi
  echo "running the Neovim recipe test with $version"
  export NETC_RECIPE="$source_dir/editors/neovim/netc.lua" NETC_TEST_FILE="$scratch/bad.net"
  cd "$scratch"
  exec nvim --headless -u NONE -i NONE -c "luafile $here/neovim_test.lua"
  ;;
emacs)
  command -v emacs > /dev/null || skip "emacs is not installed"
  echo "running the Emacs recipe test with $(emacs --version | head -n 1)"
  export NETC_RECIPE="$source_dir/editors/emacs/netc-mode.el" NETC_TEST_FILE="$scratch/bad.net"
  cd "$scratch"
  # emacs_test.el exits 77 itself when Eglot cannot be loaded.
  exec emacs --batch -Q -l "$here/emacs_test.el"
  ;;
*)
  echo "run_editor_test.sh: unknown editor '$editor' (neovim or emacs)" >&2
  exit 2
  ;;
esac
