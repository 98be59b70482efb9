-- jax-lsp with nvim-lspconfig (Neovim 0.10 and older setups that use require('lspconfig')).
-- jax-lsp is not in lspconfig's list, so it is declared once as a custom server.
local configs = require('lspconfig.configs')
local util = require('lspconfig.util')

if not configs.jax_lsp then
  configs.jax_lsp = {
    default_config = {
      cmd = { 'jax-lsp', 'serve' },
      filetypes = { 'python' },
      root_dir = util.root_pattern('pyproject.toml', 'setup.py', 'setup.cfg', '.git'),
      single_file_support = true,
      settings = { ['jax-lsp'] = vim.empty_dict() },
    },
  }
end

require('lspconfig').jax_lsp.setup({})
