"""Files whose only trigger words are `policy=` keywords passed to functions the project
defines: easydel's models call `auto_remat(Block, policy=config.gradient_checkpointing)`, with
`auto_remat` imported from `easydel.infra.utils`, where `def auto_remat(` is written. The
analysis names such a callee by its definition (`easydel.infra.utils.auto_remat`), which is no
checkpoint function: the call is no policy site, and the file holds none (75 of easydel's 87
files that could hold a site, each costing a whole-tree check as much as a file with sites).

Read from the text (`core.text.keyword_calls`) as the analysis would resolve the callee: a name
bound in the file only by one `from X import name` at its top level and otherwise only called;
`X` a module outside the workspace (then the name is `X.name`), or a workspace module that binds
it by `def` alone. Anything else leaves the file to be parsed.
"""

from __future__ import annotations

from jax_lsp.core.jax_api import CHECKPOINT_FUNCTION_NAMES
from jax_lsp.core.notebooks.files import is_notebook
from jax_lsp.core.text.triggers import policy_keywords_alone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from jax_lsp.engine.workspace import Workspace

# Callees that may take a checkpoint function and a policy (`partial(jax.checkpoint, policy=p)`).
_MAY_WRAP = frozenset({"partial"})


def files_showing_no_site(workspace: Workspace, key: str) -> list[str] | None:
    """When the file at `key` holds no policy site for the reason the module docstring gives:
    the workspace files that show it (where its callees are defined), for the result cache to
    depend on; None when the file may hold one, and is to be parsed."""
    data = workspace.read(key)
    if data is None or is_notebook(key):
        return None
    keywords = policy_keywords_alone(data)
    if keywords is None:
        return None
    # Here: its expressions are compiled on import, and most files hold another trigger word.
    from jax_lsp.core.text.keyword_calls import NO_CALL, blanked, callees, defines, imported_from

    code = blanked(data)
    if code is None:
        return None
    called = callees(code, keywords)
    if called is None:
        return None
    shown: list[str] = []
    for callee in called:
        if callee == NO_CALL:  # an assignment, or a parameter of a `def` or `class`
            continue
        if callee is None or b"." in callee or callee.decode() in CHECKPOINT_FUNCTION_NAMES | _MAY_WRAP:
            return None
        module = imported_from(code, callee)
        if module is None:
            return None
        defining = workspace.imports.find(module.decode(), key)
        if defining is None:  # outside the workspace: the callee is `module.callee`
            continue
        defined = workspace.read(defining)
        if defined is None or not defines(defined, callee):
            return None
        shown.append(defining)
    return sorted(set(shown))
