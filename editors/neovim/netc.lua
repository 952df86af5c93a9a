-- netc.lua -- Neovim support for Net# files: the `netsharp` file type for
-- *.net and the netc language server (`netc lsp`) for it, using only what
-- Neovim 0.7 already has (vim.lsp.start_client and vim.lsp.buf_attach_client;
-- no nvim-lspconfig, no vim.lsp.start, no vim.fs). Tested headless with
-- Debian 12's Neovim 0.7.2 (tests/editors/neovim_test.lua); Neovim 0.11 and
-- later can use the shorter recipe in docs/editors.md instead.
--
-- Use: copy this file to ~/.config/nvim/lua/netc.lua and put in init.lua
--
--   require('netc').setup({ cmd = { '/path/to/netc', 'lsp' } })
--
-- or load it from a netc checkout without copying:
--
--   dofile('/path/to/netc/editors/neovim/netc.lua').setup({})
--
-- Options (all optional):
--   cmd        the server command; default { 'netc', 'lsp' } (netc on PATH)
--   root_markers  files or folders that mark a project's root; default { '.git' }
--   on_attach  function(client, bufnr) called after the default key maps are set
--   keymaps    false to set no key maps
local M = {}

-- The clients started so far, one per project root.
local clients = {}

-- The folder holding one of `markers`, searched upward from `file`'s folder;
-- the file's own folder when none does.
local function root_of(file, markers)
  local folder = vim.fn.fnamemodify(file, ':p:h')
  for _, marker in ipairs(markers) do
    local found = vim.fn.finddir(marker, folder .. ';')
    if found == '' then
      found = vim.fn.findfile(marker, folder .. ';')
    end
    if found ~= '' then
      local marker_path = (vim.fn.fnamemodify(found, ':p'):gsub('/$', ''))
      return vim.fn.fnamemodify(marker_path, ':h')
    end
  end
  return folder
end

-- Buffer-local key maps for the LSP features (Neovim 0.7 sets none itself).
local function set_keymaps(bufnr)
  local function map(lhs, rhs, desc)
    vim.keymap.set('n', lhs, rhs, { buffer = bufnr, desc = desc })
  end
  map('K', vim.lsp.buf.hover, 'netc: hover')
  map('gd', vim.lsp.buf.definition, 'netc: go to definition')
  map('gr', vim.lsp.buf.references, 'netc: references')
  map('<leader>rn', vim.lsp.buf.rename, 'netc: rename')
  map('<leader>ca', vim.lsp.buf.code_action, 'netc: quick fixes')
  map('<leader>f', function()
    if vim.lsp.buf.format then
      vim.lsp.buf.format()
    else
      vim.lsp.buf.formatting() -- Neovim 0.7
    end
  end, 'netc: format')
  map('[d', vim.diagnostic.goto_prev, 'previous diagnostic')
  map(']d', vim.diagnostic.goto_next, 'next diagnostic')
end

-- Starts (or reuses) the client for `bufnr`'s project and attaches it.
local function attach(bufnr, options)
  local file = vim.api.nvim_buf_get_name(bufnr)
  local root = root_of(file ~= '' and file or vim.fn.getcwd() .. '/x', options.root_markers)
  local id = clients[root]
  if not id or not vim.lsp.get_client_by_id(id) then
    local capabilities = vim.lsp.protocol.make_client_capabilities()
    -- Neovim declares relatedInformation but does not show it; without it
    -- the server puts each note ("note: 2:8: previous definition is here")
    -- into the diagnostic's message, where Neovim shows it.
    capabilities.textDocument.publishDiagnostics.relatedInformation = false
    id = vim.lsp.start_client({
      name = 'netc',
      cmd = options.cmd,
      root_dir = root,
      capabilities = capabilities,
      on_attach = function(client, attached)
        if options.keymaps ~= false then
          set_keymaps(attached)
        end
        if options.on_attach then
          options.on_attach(client, attached)
        end
      end,
    })
    if not id then
      vim.notify('netc: could not start ' .. table.concat(options.cmd, ' '), vim.log.levels.ERROR)
      return
    end
    clients[root] = id
  end
  vim.lsp.buf_attach_client(bufnr, id)
end

function M.setup(user_options)
  local options = vim.tbl_extend('force', {
    cmd = { 'netc', 'lsp' },
    root_markers = { '.git' },
  }, user_options or {})
  local group = vim.api.nvim_create_augroup('netc', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufRead', 'BufNewFile' }, {
    group = group,
    pattern = '*.net',
    callback = function(args)
      vim.bo[args.buf].filetype = 'netsharp'
    end,
  })
  vim.api.nvim_create_autocmd('FileType', {
    group = group,
    pattern = 'netsharp',
    callback = function(args)
      vim.bo[args.buf].commentstring = '// %s'
      vim.bo[args.buf].omnifunc = 'v:lua.vim.lsp.omnifunc' -- completion with <C-x><C-o>
      attach(args.buf, options)
    end,
  })
end

return M
