-- Driven by test_neovim.py: wait for jax-lsp's diagnostics, apply its quick fix through
-- Neovim's own LSP client, write what happened to $JAX_LSP_RESULT as JSON.
local result = { diagnostics = {}, log = {} }
local function finish()
  local f = io.open(os.getenv('JAX_LSP_RESULT'), 'w')
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qall!')
end

local buf = vim.api.nvim_get_current_buf()
local function ours()
  return vim.tbl_filter(function(d) return d.source == 'jax-lsp' end, vim.diagnostic.get(buf))
end

if not vim.wait(30000, function() return #ours() > 0 end, 50) then
  result.error = 'no diagnostics from jax-lsp'
  return finish()
end
local client = vim.lsp.get_clients({ bufnr = buf, name = 'jax_lsp' })[1]
result.offset_encoding = client.offset_encoding
for _, d in ipairs(ours()) do
  table.insert(result.diagnostics, { code = d.code, lnum = d.lnum, col = d.col, end_col = d.end_col, message = d.message })
end

local first = ours()[1]
vim.api.nvim_win_set_cursor(0, { first.lnum + 1, first.col })
local before = vim.api.nvim_buf_get_changedtick(buf)
vim.lsp.buf.code_action({
  apply = true,
  filter = function(action) return action.title:match('^jax%-lsp %(' .. first.code .. '%)') ~= nil end,
})
if not vim.wait(20000, function() return vim.api.nvim_buf_get_changedtick(buf) ~= before end, 50) then
  result.error = 'the quick fix did not change the buffer'
  return finish()
end
result.text = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), '\n') .. '\n'
-- The server re-checks the fixed text: the finding goes away.
result.cleared = vim.wait(20000, function() return #ours() == 0 end, 50)
result.messages = vim.fn.execute('messages')
finish()
