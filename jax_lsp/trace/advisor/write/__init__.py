"""A policy written for a budget (`jax-lsp advise --write-policy`, the editor's "Write a policy
for B"): the search (`search.py`), the values it decides on and their tags (`values.py`), its
requests (`requests.py`), the edit of the site (`site_edit.py`) and its outcome (`written.py`)."""
