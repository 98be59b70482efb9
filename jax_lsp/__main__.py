from jax_lsp.cli import main

raise SystemExit(main())
