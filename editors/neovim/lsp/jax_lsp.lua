-- jax-lsp for Neovim 0.11+: put this file on your runtimepath as lsp/jax_lsp.lua
-- (e.g. ~/.config/nvim/lsp/jax_lsp.lua) and call vim.lsp.enable('jax_lsp') in init.lua.
-- It runs beside your main Python server (basedpyright, pyright, ruff): it reports JAX remat
-- policy mistakes, and completes, finds and describes checkpoint names (nothing else).
return {
  cmd = { 'jax-lsp', 'serve' },
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
