-- Driven by test_neovim.py: checkpoint names through Neovim's own LSP client (completion,
-- go to definition, references, hover) in train.py; writes what happened to $JAX_LSP_RESULT.
local result = {}
local function finish()
  local f = io.open(os.getenv('JAX_LSP_RESULT'), 'w')
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qall!')
end

local buf = vim.api.nvim_get_current_buf()
if not vim.wait(30000, function() return #vim.lsp.get_clients({ bufnr = buf, name = 'jax_lsp' }) > 0 end, 50) then
  result.error = 'jax_lsp did not attach'
  return finish()
end
local client = vim.lsp.get_clients({ bufnr = buf, name = 'jax_lsp' })[1]
result.offset_encoding = client.offset_encoding

local function cursor_on(pattern)
  vim.api.nvim_win_set_cursor(0, { 1, 0 })
  local row, col = unpack(vim.fn.searchpos(pattern, 'cW'))
  return row, col
end

local function at_cursor()
  return vim.lsp.util.make_position_params(0, client.offset_encoding)
end

-- Hover on the name string, asked again until the server's index has it.
cursor_on('attn_out')
local hover
vim.wait(30000, function()
  local responses = vim.lsp.buf_request_sync(buf, 'textDocument/hover', at_cursor(), 5000) or {}
  for _, response in pairs(responses) do
    if response.result then hover = response.result.contents.value end
  end
  return hover ~= nil
end, 200)
result.hover = hover

-- Completion: type the start of a name in a new call, ask at the end of the line, apply the item.
local typed = 'G = cp.save_only_these_names("at'
vim.api.nvim_buf_set_lines(buf, -1, -1, false, { typed })
local row = vim.api.nvim_buf_line_count(buf)
local params = { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = row - 1, character = #typed } }
local responses = vim.lsp.buf_request_sync(buf, 'textDocument/completion', params, 20000) or {}
result.completion = {}
for _, response in pairs(responses) do
  local items = response.result and (response.result.items or response.result) or {}
  for _, item in ipairs(items) do
    table.insert(result.completion, item.label)
    if item.label == 'attn_out' then
      vim.lsp.util.apply_text_edits({ item.textEdit }, buf, client.offset_encoding)
    end
  end
end
result.completed_line = vim.api.nvim_buf_get_lines(buf, row - 1, row, false)[1]
vim.api.nvim_buf_set_lines(buf, row - 1, row, false, {})

-- References, listed as Neovim's quickfix items.
cursor_on('attn_out')
vim.lsp.buf.references(nil, { on_list = function(list) result.references = list.items end })
vim.wait(20000, function() return result.references ~= nil end, 50)
for _, item in ipairs(result.references or {}) do
  item.filename = vim.fn.fnamemodify(item.filename, ':t')
  item.user_data = nil
end

-- Go to definition: Neovim jumps to the tag in model.py.
cursor_on('attn_out')
vim.lsp.buf.definition()
vim.wait(20000, function() return vim.api.nvim_buf_get_name(0):match('model%.py$') ~= nil end, 50)
local cursor = vim.api.nvim_win_get_cursor(0)
result.definition = {
  file = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ':t'),
  row = cursor[1],
  col = cursor[2],
  line = vim.api.nvim_get_current_line(),
}
result.messages = vim.fn.execute('messages')
finish()
