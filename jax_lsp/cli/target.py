"""What `jax-lsp trace` and `jax-lsp advise` point at."""

from __future__ import annotations

import re

# A command line's target: FILE, FILE:LINE or FILE:LINE:COLUMN (1-based).
TARGET = re.compile(r"^(?P<path>.+?)(?::(?P<line>\d+))?(?::(?P<column>\d+))?$")
