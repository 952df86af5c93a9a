-- neovim_test.lua -- drives the real Neovim, headless, through the recipe in
-- editors/neovim/netc.lua: opens a .net file with an error, waits for netc's
-- diagnostic (code, range, the note in the message), hovers a layer (the raw
-- response and the floating window Neovim opens), and renames a layer.
-- Run by run_editor_test.sh as
--   nvim --headless -u NONE -c 'luafile neovim_test.lua'
-- with NETC (the netc binary), NETC_RECIPE (netc.lua) and NETC_TEST_FILE
-- (a scratch .net file to create) in the environment. Exits 0 when every
-- check passes, 1 with a message otherwise.

-- The one time limit: how long to wait for the server's answers.
local SERVER_WAIT_MS = 60000

local function fail(message)
  error({ check = message })
end

local function check(condition, message)
  if not condition then
    fail(message)
  end
end

local function wait_for(what, condition)
  local ok = vim.wait(SERVER_WAIT_MS, condition, 50)
  check(ok, string.format('no %s from netc lsp within %d s', what, SERVER_WAIT_MS / 1000))
end

local function say(text)
  io.stdout:write('neovim_test: ' .. text .. '\n')
end

local function run()
  local netc, recipe, file = os.getenv('NETC'), os.getenv('NETC_RECIPE'), os.getenv('NETC_TEST_FILE')
  check(netc and recipe and file, 'NETC, NETC_RECIPE and NETC_TEST_FILE must be set')
  say('Neovim ' .. tostring(vim.version().major) .. '.' .. vim.version().minor .. '.' .. vim.version().patch)

  -- A second definition of H: error NS0301 at line 3, with a note at line 2.
  local source = {
    'input X [4];',
    'hidden H [2] from X all;',
    'hidden H [3] from X all;',
    'output O [1] from H all;',
  }
  vim.fn.writefile(source, file)

  dofile(recipe).setup({ cmd = { netc, 'lsp' } })
  vim.cmd('edit ' .. vim.fn.fnameescape(file))
  local buf = vim.api.nvim_get_current_buf()
  check(vim.bo[buf].filetype == 'netsharp', 'the .net file has file type "' .. vim.bo[buf].filetype .. '"')

  -- Diagnostics.
  wait_for('diagnostics', function()
    return #vim.diagnostic.get(buf) > 0
  end)
  local diagnostics = vim.diagnostic.get(buf)
  check(#diagnostics == 1, 'expected 1 diagnostic, got ' .. vim.inspect(diagnostics))
  local d = diagnostics[1]
  check(d.code == 'NS0301', 'diagnostic code: ' .. tostring(d.code))
  check(d.severity == vim.diagnostic.severity.ERROR, 'diagnostic severity: ' .. tostring(d.severity))
  check(d.lnum == 2 and d.col == 7 and d.end_lnum == 2 and d.end_col == 8,
    string.format('diagnostic range %d:%d-%d:%d, expected 2:7-2:8', d.lnum, d.col, d.end_lnum, d.end_col))
  -- The recipe declares no relatedInformation, so the note is in the message.
  check(d.message == "redefinition of layer 'H'\nnote: 2:8: previous definition is here",
    'diagnostic message: ' .. vim.inspect(d.message))
  say('diagnostic ok: ' .. d.code .. ' ' .. vim.inspect(d.message))

  -- Hover on `X` in `from X` (line 2, byte column 18): the raw response ...
  vim.api.nvim_win_set_cursor(0, { 2, 18 })
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/hover', vim.lsp.util.make_position_params(),
    SERVER_WAIT_MS)
  check(responses, 'no hover response from netc lsp within ' .. SERVER_WAIT_MS / 1000 .. ' s')
  local _, response = next(responses)
  check(response and response.result, 'hover: ' .. vim.inspect(response))
  local contents = response.result.contents
  -- Neovim lists markdown first in hover.contentFormat, so it gets markdown.
  check(contents.kind == 'markdown', 'hover kind: ' .. vim.inspect(contents.kind))
  check(contents.value == '**input** layer `X` [4]\n\n- nodes: 4\n', 'hover value: ' .. vim.inspect(contents.value))
  -- ... and what Neovim shows for K: a floating window with that text.
  local windows_before = #vim.api.nvim_list_wins()
  vim.lsp.buf.hover()
  wait_for('hover window', function()
    return #vim.api.nvim_list_wins() > windows_before
  end)
  local float
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      float = win
    end
  end
  check(float, 'no floating window for the hover')
  local shown = table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(float), 0, -1, false), '\n')
  check(shown:find('layer', 1, true) and shown:find('nodes: 4', 1, true), 'hover window shows: ' .. vim.inspect(shown))
  vim.api.nvim_win_close(float, true)
  say('hover ok: ' .. vim.inspect(contents.value))

  -- Rename X (the declaration, line 1 column 6) to Pixels: all three places change.
  vim.api.nvim_set_current_buf(buf)
  vim.api.nvim_win_set_cursor(0, { 1, 6 })
  vim.lsp.buf.rename('Pixels')
  local expected = {
    'input Pixels [4];',
    'hidden H [2] from Pixels all;',
    'hidden H [3] from Pixels all;',
    'output O [1] from H all;',
  }
  local ok = vim.wait(SERVER_WAIT_MS, function()
    return vim.deep_equal(vim.api.nvim_buf_get_lines(buf, 0, -1, false), expected)
  end, 50)
  check(ok, 'after the rename the buffer reads ' .. vim.inspect(vim.api.nvim_buf_get_lines(buf, 0, -1, false)))
  say('rename ok')
end

local ok, message = xpcall(run, function(e)
  if type(e) == 'table' and e.check then
    return e.check
  end
  return tostring(e) .. '\n' .. debug.traceback()
end)
for _, client in ipairs(vim.lsp.get_active_clients()) do
  client.stop()
end
if ok then
  say('all checks passed')
  vim.cmd('qall!')
else
  io.stderr:write('neovim_test: FAILED: ' .. tostring(message) .. '\n')
  vim.cmd('cquit 1')
end
