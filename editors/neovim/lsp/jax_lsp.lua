-- jax-lsp for Neovim 0.11+: put this file on your runtimepath as lsp/jax_lsp.lua
-- (e.g. ~/.config/nvim/lsp/jax_lsp.lua) and call vim.lsp.enable('jax_lsp') in init.lua.
-- It runs beside your main Python server (basedpyright, pyright, ruff): it reports JAX remat
-- policy mistakes, and completes, finds and describes checkpoint names (nothing else).

-- "Compare policies" (the advisor's lens): the server's comparison as text (the policies
-- abbreviated, with a legend, as VS Code's panel shows them) in one scratch buffer that never asks
-- to be saved, reused and redrawn from the comparison the server sends when the advice changes
-- (no second request); the chart as an SVG file, named at the buffer's end.
local COMPARE = 'jax-lsp.comparePolicies'
local RENDERINGS = { answer = { 'text', 'chart' } } -- what this buffer reads of the comparison
local BUFFER = 'jax-lsp://compare-policies'
local shown -- { client_id, uri, position } of the comparison in the buffer

local function show_comparison(result)
  local svg = vim.fn.stdpath('cache') .. '/jax-lsp-compare.svg'
  vim.fn.mkdir(vim.fn.fnamemodify(svg, ':h'), 'p')
  local file = io.open(svg, 'w')
  if file then
    file:write(result.chart or '')
    file:close()
  end
  local lines = vim.split(result.text or '', '\n', { plain = true })
  local fix = result.quick_fix
  if fix and fix ~= vim.NIL and fix.note and fix.note ~= vim.NIL then
    vim.list_extend(lines, { '', 'To use the suggestion: ' .. fix.note })
  end
  if result.stale and result.stale ~= vim.NIL then
    table.insert(lines, 1, '> Outdated: ' .. result.stale)
    table.insert(lines, 2, '')
  end
  vim.list_extend(lines, { '', 'Chart: ' .. svg })
  local buf = vim.fn.bufnr(BUFFER)
  if buf == -1 then
    buf = vim.api.nvim_create_buf(false, true) -- unlisted scratch: buftype nofile
    vim.api.nvim_buf_set_name(buf, BUFFER)
    vim.bo[buf].filetype = 'text'
    vim.bo[buf].bufhidden = 'hide'
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if vim.fn.bufwinid(buf) == -1 then
    local from = vim.api.nvim_get_current_win()
    vim.cmd('botright vsplit')
    vim.api.nvim_win_set_buf(0, buf)
    vim.api.nvim_set_current_win(from)
  end
end

local function compare(client_id, arguments, bufnr)
  local client = vim.lsp.get_client_by_id(client_id)
  if not client then
    return
  end
  local asked = { arguments[1], arguments[2], RENDERINGS }
  client:request('workspace/executeCommand', { command = COMPARE, arguments = asked }, function(err, result)
    if err or not result then
      vim.notify('jax-lsp: Compare policies: ' .. (err and err.message or 'no answer'), vim.log.levels.WARN)
      return
    end
    shown = { client_id = client_id, uri = arguments[1], line = arguments[2].line }
    show_comparison(result)
  end, bufnr)
end

return {
  cmd = { 'jax-lsp', 'serve' },
  commands = {
    [COMPARE] = function(command, ctx)
      compare(ctx.client_id, command.arguments, ctx.bufnr)
    end,
  },
  handlers = {
    -- The advice of a site changed: redraw the comparison shown, if it is that site's, from the
    -- one the notification carries (a server that sends none is asked again).
    ['jax-lsp/adviceChanged'] = function(_, params, ctx)
      if not shown or shown.uri ~= params.uri or vim.fn.bufwinid(vim.fn.bufnr(BUFFER)) == -1 then
        return
      end
      if params.stale and params.stale ~= vim.NIL then
        shown.line = params.position.line
        local buf = vim.fn.bufnr(BUFFER)
        vim.bo[buf].modifiable = true
        vim.api.nvim_buf_set_lines(buf, 0, 0, false, { '> Outdated: ' .. params.stale, '' })
        vim.bo[buf].modifiable = false
        vim.bo[buf].modified = false
      elseif params.position.line == shown.line and params.comparison and params.comparison ~= vim.NIL then
        show_comparison(params.comparison)
      elseif params.position.line == shown.line then
        compare(ctx.client_id, { params.uri, params.position })
      end
    end,
  },
  filetypes = { 'python' },
  root_markers = { 'pyproject.toml', 'setup.py', 'setup.cfg', '.git' },
  -- Answered to workspace/configuration (section "jax-lsp"); every key is optional.
  settings = {
    -- vim.empty_dict(): an empty Lua table would be sent as a JSON array.
    ['jax-lsp'] = vim.empty_dict(),
    -- For example:
    -- ['jax-lsp'] = {
    --   select = { 'JAX1' },
    --   ignore = { 'JAX104' },
    --   severity = { JAX104 = 'error' },
    --   interpreter = '/path/to/project/.venv/bin/python',
    -- },
  },
}
