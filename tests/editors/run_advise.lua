-- Driven by tests/editors/test_neovim_advisor.py: Neovim's own LSP client asks jax-lsp for the advisor's
-- code lens, runs it, and reads the lens and the inlay hints again; writes $JAX_LSP_RESULT.
local result = { log = {} }
local function finish()
  local f = io.open(os.getenv('JAX_LSP_RESULT'), 'w')
  f:write(vim.json.encode(result))
  f:close()
  vim.cmd('qall!')
end

local buf = vim.api.nvim_get_current_buf()
local client
if not vim.wait(30000, function()
  client = vim.lsp.get_clients({ bufnr = buf, name = 'jax_lsp' })[1]
  return client ~= nil and client.initialized
end, 50) then
  result.error = 'jax-lsp did not attach'
  return finish()
end
result.offset_encoding = client.offset_encoding

local function advise_lenses()
  local answer = client:request_sync('textDocument/codeLens', { textDocument = vim.lsp.util.make_text_document_params(buf) }, 30000, buf)
  local found = {}
  for _, lens in ipairs((answer and answer.result) or {}) do
    if lens.command and lens.command.command:match('^jax%-lsp%.[ac][do][vm]') then
      table.insert(found, lens)
    end
  end
  return found
end

local lenses
if not vim.wait(30000, function() lenses = advise_lenses(); return #lenses > 0 end, 200) then
  result.error = 'no advisor lens'
  return finish()
end
result.before = lenses[1].command.title
result.lens_line = lenses[1].range.start.line
local answer = client:request_sync('workspace/executeCommand', lenses[1].command, 120000, buf)
if not answer or answer.err then
  result.error = 'advise failed: ' .. vim.inspect(answer and answer.err)
  return finish()
end
result.policies = #answer.result.policies
result.after = advise_lenses()[1].command.title

-- The advisor's warnings (JAX191) as Neovim holds them, once the advice has published them.
vim.wait(5000, function()
  return #vim.diagnostic.get(buf, { severity = vim.diagnostic.severity.WARN }) > 0
end, 50)
result.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(result.diagnostics, { code = d.code, message = d.message, severity = d.severity, line = d.lnum, source = d.source })
end

-- The lenses as Neovim shows them.
vim.lsp.codelens.refresh({ bufnr = buf })
vim.wait(10000, function() return #vim.lsp.codelens.get(buf) > 0 end, 50)
result.shown = {}
for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
  if lens.command then table.insert(result.shown, lens.command.title) end
end

local lines = vim.api.nvim_buf_line_count(buf)
local hints = client:request_sync('textDocument/inlayHint', {
  textDocument = vim.lsp.util.make_text_document_params(buf),
  range = { start = { line = 0, character = 0 }, ['end'] = { line = lines, character = 0 } },
}, 30000, buf)
result.hints = {}
for _, hint in ipairs((hints and hints.result) or {}) do
  local tooltip = type(hint.tooltip) == 'table' and hint.tooltip.value or hint.tooltip
  table.insert(result.hints, {
    line = hint.position.line, character = hint.position.character, label = hint.label, tooltip = tooltip,
  })
end
vim.lsp.inlay_hint.enable(true, { bufnr = buf })
vim.wait(10000, function() return #vim.lsp.inlay_hint.get({ bufnr = buf }) > 0 end, 50)
result.shown_hints = #vim.lsp.inlay_hint.get({ bufnr = buf })

-- "Compare policies" through the shipped lsp/jax_lsp.lua's client-side command, twice: one
-- scratch buffer, reused, beside the code; the chart written to an SVG file.
local compare_lens = advise_lenses()[1]
if compare_lens and compare_lens.command.command == 'jax-lsp.comparePolicies' then
  for _ = 1, 2 do
    client:exec_cmd(compare_lens.command, { bufnr = buf })
    vim.wait(30000, function()
      local shown = vim.fn.bufnr('jax-lsp://compare-policies')
      return shown ~= -1 and #vim.api.nvim_buf_get_lines(shown, 0, -1, false) > 3
    end, 50)
  end
  local shown = vim.fn.bufnr('jax-lsp://compare-policies')
  if shown ~= -1 then
    local lines = vim.api.nvim_buf_get_lines(shown, 0, -1, false)
    local svg = lines[#lines]:match('^Chart: (.*)$')
    local count = 0
    for _, b in ipairs(vim.api.nvim_list_bufs()) do
      if vim.api.nvim_buf_get_name(b):match('compare%-policies') then count = count + 1 end
    end
    result.compare = {
      lines = lines, buffers = count, buftype = vim.bo[shown].buftype, modified = vim.bo[shown].modified,
      windows = #vim.fn.win_findbuf(shown), svg = svg and vim.fn.readfile(svg)[1] or nil,
      current = vim.api.nvim_get_current_buf() == buf,
    }
  end
end
-- With JAX_LSP_RUN_POLICIES: "Run policies on the device" (the server's jax-lsp.runPolicies; here
-- the CPU). The site keeps that advice: the Compare buffer refreshes and shows each step's time.
if result.compare and os.getenv('JAX_LSP_RUN_POLICIES') then
  local command = { command = 'jax-lsp.runPolicies', arguments = compare_lens.command.arguments }
  local ran = client:request_sync('workspace/executeCommand', command, 100000, buf)
  result.ran_columns = ran and ran.result and ran.result.view.columns or vim.inspect(ran)
  local shown = vim.fn.bufnr('jax-lsp://compare-policies')
  local function header()
    for _, line in ipairs(vim.api.nvim_buf_get_lines(shown, 0, -1, false)) do
      if line:match('^policy .* step$') then return line end
    end
  end
  vim.wait(30000, function() return header() ~= nil end, 50)
  result.header_after_run = header()
  result.lines_after_run = vim.api.nvim_buf_get_lines(shown, 0, -1, false)
end
result.messages = vim.fn.execute('messages')
finish()
