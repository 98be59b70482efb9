"""Hypothesis strategies for Python modules written the way real code writes remat policies.

Each strategy draws source text, never ASTs: the point is to feed the checker what a user's
file holds (comments, unicode names, odd signatures, decorators), combined in ways no
hand-written example covers. Policies are defined as `def`s, named lambdas, class attributes,
dict values and factories; sites pass them to every wrapper that takes `policy=`, directly,
through partials, conditionals, walrus and save_from_both_policies, at module level and inside
functions, classes, comprehensions and match statements.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field

from hypothesis import strategies as st

# Always present, so that most names resolve.
BASE_IMPORTS = [
    "import functools",
    "from functools import partial",
    "import jax",
    "import jax.numpy as jnp",
    "import numpy as np",
    "from jax import checkpoint as ckpt, lax",
    "from jax import remat",
    "from jax.ad_checkpoint import Offloadable, Recompute, Saveable",
    "import jax.ad_checkpoint as adc",
    "import flax.linen as nn",
    "from flax import nnx",
    "import equinox as eqx",
    "cp = jax.checkpoint_policies",
]
# Drawn: star imports, and imports that shadow the names above.
IMPORTS = [
    "from jax.ad_checkpoint import *",
    "from jax.checkpoint_policies import *",
    "from jax import *",
    "from jax.checkpoint_policies import dots_saveable, save_from_both_policies, save_only_these_names",
    "import jax.ad_checkpoint as cp",
    "from jax._src.interpreters.partial_eval import Offloadable",
]

# Identifiers of policies: ASCII, accented, CJK, and names that shadow JAX's own.
# "ﬁ_policy" and "𝐩𝐨𝐥𝐢𝐜𝐲" are not what Python calls them: identifiers are NFKC-normalised
# ("fi_policy", "policy"), so the source text and the AST disagree.
POLICY_NAMES = [
    "policy",
    "save_dots",
    "política",
    "策略",
    "pölicy_ß",
    "_p",
    "P1",
    "dots_saveable",
    "ckpt",
    "Ω",
    "ﬁ_policy",
    "𝐩𝐨𝐥𝐢𝐜𝐲",
]
PRIM_NAMES = ["prim", "p", "primitive", "прим"]

SIGNATURES = [
    "{prim}, *avals, **params",
    "{prim}, *_, **__",
    "{prim}",
    "{prim}, *avals",
    "*args, **kwargs",
    "{prim}, /, *a, **k",
    "self, {prim}, *a, **k",
    "{prim}, limit=lambda: None, *a, **k",
    '{prim}: "Primitive", *avals: int, **params: object',
    "",
    "{prim}, *, key, **k",
    "{prim}, *a, key=1, **k",
    "**params",
    "{prim}=None, *a, **k",
    "{prim}, a, b, /, c, *d, e, f=2, **g",
]

STRINGS = ['"dot_general"', '"sin"', "'cos'", '"😀"', '"中文"', '""', 'f"{{1}}"']


def condition(prim: str) -> st.SearchStrategy[str]:
    string = st.sampled_from(STRINGS)
    return st.one_of(
        string.map(lambda s: f"{prim}.name == {s}"),
        string.map(lambda s: f"{prim} == {s}"),
        string.map(lambda s: f"{prim} in ({s}, 'cos')"),
        st.sampled_from(
            [
                f"{prim} not in NAMES",
                "avals",
                "len(a) > 1",
                f"(m := {prim}.name).startswith('dot')",
                "True",
                "False",
                "k.get('x')",
                f"str({prim}) == 'cos'",
                f"{prim} is lax.exp_p",
                "np.prod(avals[0].shape) > 1024",
                f"any({prim}.name == n for n in NAMES)",
            ]
        ),
    )


def simple_value(prim: str) -> st.SearchStrategy[str]:
    return st.sampled_from(
        [
            "True",
            "False",
            "None",
            "0",
            "1",
            '"save"',
            "[]",
            "()",
            "{}",
            "...",
            'Offloadable(src="device", dst="pinned_host")',
            'Offloadable(src="host", dst="cpu")',
            'adc.Offloadable("pinned_host", "device")',
            'Offloadable(source="device", dst="pinned_host")',
            "Offloadable(*KINDS)",
            "Offloadable(**KINDS)",
            'Offloadable("device", dst="pinned_host", extra=1)',
            "Offloadable(src=KIND, dst=KIND)",
            "Offloadable",
            "Saveable",
            "Recompute",
            "adc.Recompute",
            f'{prim}.name == "dot_general"',
            f'{prim} == "sin"',
            f"{prim} in ('sin', 'cos')",
            f"{prim} != 'x'",
            f"str({prim}) == 'cos'",
            f"{prim} is lax.exp_p",
            "np.prod(avals[0].shape) > 1024",
            "jnp.any(avals[0])",
            "np.asarray(1).any()",
            f"any({prim}.name == n for n in NAMES)",
            f"(n := {prim}.name) in NAMES",
            f"[n for n in NAMES if {prim}.name == n]",
            f"{{n: True for n in NAMES}}.get({prim}.name)",
            f"dots_saveable({prim}, *a, **k)",
            "jax.checkpoint_policies.nothing_saveable",
            f"cp.everything_saveable({prim})",
            f'f"{{{prim}}}"',
            "await thing()",
            f"(lambda: {prim})",
            "-np.sum(1) + 2 * np.max(3)",
            "not avals",
        ]
    )


def returned(prim: str) -> st.SearchStrategy[str]:
    """A returned expression: a simple value, or conditional/boolean combinations of them."""
    return st.recursive(
        simple_value(prim),
        lambda inner: st.one_of(
            st.tuples(inner, condition(prim), inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
            st.tuples(inner, st.sampled_from(["or", "and"]), inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            inner.map(lambda v: f"(not {v})"),
        ),
        max_leaves=4,
    )


def _block(lines: list[str]) -> list[str]:
    return ["    " + line if line else line for line in lines]


@st.composite
def statements(draw, prim: str, depth: int = 0, in_loop: bool = False) -> list[str]:
    """A policy body's statements (at least one line), nested up to a small depth."""
    count = draw(st.integers(1, 3))
    lines: list[str] = []
    for _ in range(count):
        lines += draw(statement(prim, depth, in_loop))
    return lines


@st.composite
def statement(draw, prim: str, depth: int, in_loop: bool) -> list[str]:
    def body(loop: bool = in_loop) -> list[str]:
        return _block(draw(statements(prim, depth + 1, loop)))

    simple = [
        lambda: [f"return {draw(returned(prim))}"],
        lambda: ["return"],
        lambda: ["pass"],
        lambda: [f"x = [n for n in NAMES if {draw(condition(prim))}]"],
        lambda: [f"assert {draw(condition(prim))}, 'message'"],
        lambda: ["raise ValueError(f'unexpected {a!r}')"],
        lambda: [f"q = lambda {prim}, *a, **k: {draw(returned(prim))}"],
        lambda: ["del x"],
        lambda: ["x: int = 1", "x += 1"],
        lambda: [f"if {draw(condition(prim))}: return {draw(returned(prim))}"],
        lambda: [f"return {draw(returned(prim))}  # noqa: JAX101"],
        lambda: ["import sys", "sys.exit(1)"],
        lambda: ["yield True"],
    ]
    if in_loop:
        simple += [lambda: ["break"], lambda: ["continue"]]
    if depth >= 2:
        return draw(st.sampled_from(simple))()
    compound = [
        lambda: (
            [f"if {draw(condition(prim))}:", *body()]
            + [
                line
                for _ in range(draw(st.integers(0, 2)))
                for line in [f"elif {draw(condition(prim))}:", *body()]
            ]
            + (["else:", *body()] if draw(st.booleans()) else [])
        ),
        lambda: [
            f"match {prim}.name:",
            *_block(['case "sin" | "cos":', *body()]),
            *_block(["case str(s) if s.startswith('dot'):", *body()]),
            *_block(["case {'k': v, **rest}:", *body()]),
            *_block(["case [first, *others]:", *body()]),
            *_block(["case Point(x=0) as pt:", *body()]),
            *(_block(["case _:", *body()]) if draw(st.booleans()) else []),
        ],
        lambda: ["for n in NAMES:", *body(True), *(["else:", *body()] if draw(st.booleans()) else [])],
        lambda: ["while True:", *body(True)],
        lambda: [f"while {draw(condition(prim))}:", *body(True)],
        lambda: ["try:", *body(), "except (TypeError, ValueError) as error:", *body(), "finally:", *body()],
    ]
    if sys.version_info >= (3, 11):
        compound.append(lambda: ["try:", *body(), "except* OSError:", *body()])
    compound += [
        lambda: ["with open('x') as handle, lock:", *body()],
        lambda: ["def helper(x, *a, **k):", *body(False), f"return helper({prim})"],
        lambda: ["class Local:", *_block([f"attr = lambda {prim}, *a, **k: {draw(returned(prim))}"])],
    ]
    return draw(st.sampled_from(simple + compound))()


@dataclass
class Definition:
    """Top-level lines that define a policy, and the expressions a site can name it by."""

    lines: list[str]
    refs: list[str]


def _signature(draw) -> tuple[str, str, str]:
    """(the primitive's parameter, a `def` signature, the same signature for a lambda)."""
    prim = draw(st.sampled_from(PRIM_NAMES))
    signature = draw(st.sampled_from(SIGNATURES)).format(prim=prim)
    return prim, signature, re.sub(r': ("Primitive"|int|object)', "", signature)


@st.composite
def policy_definition(draw, name: str, others: list[str]) -> Definition:
    prim, signature, bare = _signature(draw)
    value = draw(returned(prim))
    other = draw(st.sampled_from(others)) if others else "jax.checkpoint_policies.dots_saveable"
    kind = draw(st.integers(0, 11))
    if kind == 0:  # def, possibly async or decorated
        head = draw(st.sampled_from(["def", "async def"]))
        decorators = draw(
            st.sampled_from([[], ["@functools.lru_cache"], ["@staticmethod", "@functools.wraps(abs)"]])
        )
        return Definition(
            [*decorators, f"{head} {name}({signature}):", *_block(draw(statements(prim)))], [name]
        )
    if kind == 1:  # one-line def
        return Definition([f"def {name}({signature}): return {value}"], [name])
    if kind == 2:  # named lambda, plain or annotated
        annotation = draw(st.sampled_from(["", ": Callable[..., bool]"]))
        return Definition([f"{name}{annotation} = lambda {bare}: {value}"], [name])
    if kind == 3:  # class attributes: a lambda, a method, a staticmethod
        cls = f"C_{name}"
        lines = [
            f"class {cls}:",
            *_block(
                [
                    f"{name} = lambda {bare}: {value}",
                    "@staticmethod",
                    f"def static({signature}):",
                    *_block(draw(statements(prim))),
                    f"def method(self, {prim}, *a, **k):",
                    *_block(draw(statements(prim))),
                    f"inner = jax.checkpoint(abs, policy={name})",
                ]
            ),
        ]
        return Definition(lines, [f"{cls}.{name}", f"{cls}.static", f"{cls}().method", f"{cls}.method"])
    if kind == 4:  # a table of policies
        table = f"TABLE_{name}"
        lines = [
            f"{table} = {{",
            f'    "a": lambda {bare}: {value},',
            f'    "b": {other},',
            '    "c": jax.checkpoint_policies.save_only_these_names,',
            '    "d": jax.checkpoint_policies.dots_saveable,',
            "}",
        ]
        if draw(st.booleans()):
            lines = [f"{table} = dict(a=lambda {bare}: {value}, b={other}, c=dict, **{{'d': None}})"]
        return Definition(
            lines,
            [
                f'{table}["a"]',
                f'{table}["c"]',
                f'{table}["d"]',
                f'{table}.get("b")',
                f"{table}[key]",
                f"{table}[0]",
                f"{table}['a']['b']",
            ],
        )
    if kind == 5:  # a factory returning an inner def, a lambda or a conditional
        returns = draw(
            st.sampled_from(
                [
                    "inner",
                    f"lambda {bare}: {value}",
                    f"inner if n else {other}",
                    "functools.partial(inner, n)",
                    f"make_{name}(n - 1)",
                ]
            )
        )
        lines = [
            f"def make_{name}(n=0, *names):",
            *_block([f"def inner({signature}):", *_block(draw(statements(prim))), f"return {returns}"]),
        ]
        return Definition(lines, [f"make_{name}()", f"make_{name}(3)", f"make_{name}"])
    if kind == 6:  # partials of other policies, nested
        return Definition(
            [f"{name} = functools.partial(functools.partial({other}, 1), key=2)"],
            [name, f"functools.partial({name})"],
        )
    if kind == 7:  # walrus at module level
        return Definition([f"({name} := lambda {bare}: {value})"], [name])
    if kind == 8:  # conditional choice between policies
        return Definition([f"{name} = (lambda {bare}: {value}) if FLAG else {other}"], [name])
    if kind == 9:  # names of ready-made policies and factories, called or not
        member = draw(
            st.sampled_from(
                [
                    "dots_saveable",
                    "dots_saveable()",
                    "nothing_saveable",
                    "everything_saveable()",
                    "save_only_these_names",
                    'save_only_these_names("attn")',
                    "save_from_both_policies",
                    "offload_dot_with_no_batch_dims('device', 'pinned_host')",
                    "save_and_offload_only_these_names(names_which_can_be_saved=['a'], names_which_can_be_offloaded=['a'], "
                    "offload_src='device', offload_dst='host')",
                    "save_and_offload_only_these_names(names_which_can_be_saved=[], ofload_src='cpu', **extra)",
                    "offload_dot_with_no_batch_dims(src='device', dst='pinned_host')",
                    "offload_dot_with_no_batch_dims('pinned_host', *rest)",
                    "offload_dot_with_no_batch_dims(source='device')",
                ]
            )
        )
        via = draw(
            st.sampled_from(["jax.checkpoint_policies.", "cp.", "", "jax.ad_checkpoint.checkpoint_policies."])
        )
        return Definition([f"{name} = {via}{member}"], [name])
    if kind == 10:  # combinations through save_from_both_policies
        return Definition(
            [f"{name} = jax.checkpoint_policies.save_from_both_policies({other}, lambda {bare}: {value})"],
            [name],
        )
    # Bound in ways the checker must treat as unknown: unpacking, loops, several assignments.
    return Definition(
        [
            f"{name}, spare = (lambda {bare}: {value}), 1",
            f"for {name}_loop in (abs, min):",
            "    pass",
            f"if FLAG:\n    {name}_twice = abs\nelse:\n    {name}_twice = lambda {bare}: {value}",
        ],
        [name, f"{name}_loop", f"{name}_twice"],
    )


BUILTIN_REFS = [
    "jax.checkpoint_policies.dots_saveable",
    "jax.checkpoint_policies.dots_saveable()",
    "jax.checkpoint_policies.nothing_saveable()",
    'jax.checkpoint_policies.save_only_these_names("attn")',
    "jax.checkpoint_policies.save_only_these_names",
    "save_only_these_names",
    "cp.save_from_both_policies(cp.dots_saveable, cp.offload_dot_with_no_batch_dims('device', 'pinned_host'))",
    '"dots_saveable"',
    "True",
    "None",
    "[1]",
    'getattr(jax.checkpoint_policies, "dots_saveable")',
    "undefined_name",
    "self.policy",
    "obj.attr.chain.deep",
    "config['remat']['policy']",
    "lambda *a, **k: True",
    "Policy()",
    "staticmethod(abs)",
    "functools.partial(functools.partial, abs)",
    "C.Inner.attr",
    "p_self",
    "p_loop_a",
    "make_forever()",
    'TABLE_SELF["a"]',
]

# Definitions that refer to themselves or each other, and class-based policies.
TANGLES = [
    "p_self = p_self",
    "p_loop_a = p_loop_b",
    "p_loop_b = p_loop_a",
    "def make_forever():\n    return make_forever()",
    'TABLE_SELF = {"a": TABLE_SELF["a"]}',
    "class Policy:\n    def __call__(self, prim, *a, **k):\n        return None",
    "class C:\n    class Inner:\n        attr = lambda prim, *a, **k: None",
]


@st.composite
def site(draw, ref: str, second: str, index: int) -> list[str]:
    """Lines that pass `ref` (and maybe `second`) to a wrapper that takes a policy."""
    value = draw(
        st.sampled_from(
            [
                ref,
                ref,
                ref,
                f"jax.checkpoint_policies.save_from_both_policies({ref}, {second})",
                f"{ref} if FLAG else {second}",
                f"(q_{index} := {ref})",
                f"functools.partial({ref}, 1)",
            ]
        )
    )
    name = f"f_{index}"
    forms = [
        [f"{name} = jax.checkpoint(abs, policy={value})"],
        [f"{name} = jax.remat(abs, {value})"],
        [f"{name} = ckpt(abs, policy={value}, prevent_cse=False)"],
        [f"{name} = remat(abs, policy={value})"],
        ["@functools.partial(jax.checkpoint, policy=" + value + ")", f"def {name}(x):", "    return x"],
        [
            "@partial(jax.remat, policy=" + value + ", static_argnums=(1,))",
            f"def {name}(x, n):",
            "    return x",
        ],
        [f"@jax.checkpoint(policy={value})", f"def {name}(x):", "    return x"],
        ["@jax.checkpoint", f"def {name}(x):", "    return x"],
        [f"{name} = nn.remat(Block, policy={value})"],
        [f"{name} = nn.remat(Block, True, True, False, True, (), {value})"],
        [f"@nnx.remat(policy={value})", f"def {name}(x):", "    return x"],
        [f"{name} = eqx.filter_checkpoint(abs, policy={value})"],
        [f"@eqx.filter_checkpoint(policy={value})", f"def {name}(x):", "    return x"],
        [f"{name} = functools.partial(functools.partial(jax.checkpoint, policy={value}), prevent_cse=True)"],
        [f"{name} = [jax.checkpoint(g, policy={value}) for g in (abs, min) if g]"],
        [f"{name} = lambda fn: jax.checkpoint(fn, policy={value})"],
        [
            f"class Model_{index}(nn.Module):",
            "    policy = None",
            f"    step = jax.checkpoint(abs, policy={value})",
            "    def __call__(self, x):",
            "        return nn.remat(Block, policy=self.policy)(x)",
        ],
        [f"def build_{index}(fn, policy={value}):", "    return jax.checkpoint(fn, policy=policy)"],
        [f"def build_{index}(fn):", f"    p = {value}", "    return jax.checkpoint(fn, policy=p)"],
        [
            "match MODE:",
            "    case 'remat':",
            f"        {name} = jax.checkpoint(abs, policy={value})",
            "    case _:",
            "        pass",
        ],
        [f"{name} = jax.checkpoint(abs, *args, policy={value}, **kwargs)"],
        [f"{name} = jax.checkpoint(abs, policy={value})  # noqa: JAX101, JAX104"],
        [f"{name} = jax.checkpoint(policy={value}, fun=abs)"],
        [f"{name} = jax.checkpoint(fun=abs, policy=\\", f"    {value})"],
        [f"{name} = jax.checkpoint(abs, policy={value}, policy=None)"],  # ast.parse accepts it
        [f"{name} = jax.checkpoint(*args, **kwargs)"],
        [f"{name} = (lambda f, **k: f)(abs, policy={value})"],
        [f"{name} = CHECKPOINTS[0](abs, policy={value})"],
        [f"{name} = jax.checkpoint(abs, policy={value})(x)"],
        [f"{name} = jax.checkpoint(policy={value})(abs)"],
        [f"{name} = functools.partial(jax.checkpoint, abs, {value})"],
        [f"class M_{index}(nn.Module, policy={value}):", "    pass"],
        [f"@(lambda f: jax.checkpoint(f, policy={value}))", f"def {name}(x):", "    return x"],
    ]
    return draw(st.sampled_from(forms))


NOISE = [
    ['"""A module docstring with 中文 and 😀."""'],
    [
        "FLAG = True",
        "MODE = 'remat'",
        "NAMES = ('sin', 'cos')",
        "key = 'a'",
        "KIND = 'host'",
        "KINDS = ('device', 'pinned_host')",
    ],
    ["# -*- coding: utf-8 -*-  comment with tabs\tand é"],
    ["if TYPE_CHECKING:", "    from typing import Callable"],
    ["@dataclasses.dataclass", "class Config:", "    policy: object = None", "    remat: bool = True"],
    ["x = 1; y = 2  # two statements"],
    ["s = '''", "def not_code(:", "    policy=", "'''"],
    ["type_alias: TypeAlias = 'int'"],
    [
        "async def runner():",
        "    async with lock:",
        "        async for item in stream():",
        "            await item",
    ],
    ["print(*[i async for i in aiter()] if False else [])"],
    ["global_value = [*range(3), *(lambda: (yield))()]"],
    ["try:", "    import jax", "except ImportError:", "    jax = None"],
    ["global MODE", "del FLAG"],
    ["functools = __import__('functools')"],
]

# How a file is laid out: line endings, indentation, form feeds, the last line.
LAYOUTS = {
    "unix": lambda text: text,
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "cr": lambda text: text.replace("\n", "\r"),
    "tabs": lambda text: re.sub(r"(?m)^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), text),
    "form feeds": lambda text: text.replace("\n\n\n", "\n\n\x0c\n"),
    "no final newline": lambda text: text.rstrip("\n"),
}
# What an LSP client models the same way as the server (the harness splits lines at \n only).
EDITOR_LAYOUTS = ("unix", "tabs", "form feeds", "no final newline")


@dataclass
class Generated:
    """A module's text and the policy names it defines (for other modules to import)."""

    text: str
    names: list[str] = field(default_factory=list)


@st.composite
def module(
    draw, imported: list[str] = (), extra_imports: list[str] = (), layouts: tuple[str, ...] = tuple(LAYOUTS)
) -> Generated:
    """One module: imports, policy definitions, sites and noise, in a drawn order and layout."""
    drawn = draw(st.lists(st.sampled_from(IMPORTS), max_size=len(IMPORTS), unique=True))
    imports = BASE_IMPORTS + drawn + list(extra_imports)
    names = draw(st.lists(st.sampled_from(POLICY_NAMES), min_size=1, max_size=4, unique=True))
    definitions: list[Definition] = []
    for position, name in enumerate(names):
        definitions.append(draw(policy_definition(name, names[:position] + list(imported))))
    refs = [ref for d in definitions for ref in d.refs] + list(imported)
    blocks = [d.lines for d in definitions] + [
        [tangle] for tangle in draw(st.lists(st.sampled_from(TANGLES)))
    ]
    for index in range(draw(st.integers(1, 5))):
        candidates = st.sampled_from(refs) | st.sampled_from(refs) | st.sampled_from(BUILTIN_REFS)
        blocks.append(draw(site(draw(candidates), draw(candidates), index)))
    blocks += draw(st.lists(st.sampled_from(NOISE), max_size=3))
    blocks = draw(st.permutations(blocks))
    text = "\n".join(imports) + "\n\n\n" + "\n\n\n".join("\n".join(b) for b in blocks) + "\n"
    return Generated(LAYOUTS[draw(st.sampled_from(layouts))](text), names)


@st.composite
def package(draw, layouts: tuple[str, ...] = tuple(LAYOUTS)) -> dict[str, str]:
    """Files of a small package whose sites use policies from sibling modules (and cycles)."""
    policies = draw(
        module(
            extra_imports=draw(
                st.lists(
                    st.sampled_from(["from .model import f_0", "from . import model", "from pkg import *"]),
                    max_size=2,
                )
            ),
            layouts=layouts,
        )
    )
    name = draw(st.sampled_from(policies.names))
    how = draw(
        st.sampled_from(
            [
                (f"from .policies import {name}", name),
                (f"from pkg.policies import {name} as chosen", "chosen"),
                ("from . import policies", f"policies.{name}"),
                ("import pkg.policies as P", f"P.{name}"),
                (f"from pkg import {name}", name),
                ("from .policies import *", name),
                (f"from ..policies import {name}", name),
            ]
        )
    )
    init = draw(
        st.sampled_from(
            [
                "",
                f"from .policies import {name}",
                "from .policies import *",
                f"from .model import f_0\nfrom .policies import {name} as {name}",
            ]
        )
    )
    model = draw(module(imported=[how[1]], extra_imports=[how[0]], layouts=layouts))
    deep = draw(
        module(imported=[f"policies.{name}"], extra_imports=["from .. import policies"], layouts=layouts)
    )
    # Now and then a workspace module named like a library shadows it, and may import itself.
    shadow = draw(
        st.sampled_from(
            [{}] * 6
            + [
                {"jax.py": "from jax import *\nimport jax\ncheckpoint = lambda f, policy=None: f\n"},
                {"functools.py": "partial = None\n"},
                {"jax/__init__.py": "from . import *\n"},
            ]
        )
    )
    return {
        **shadow,
        "pkg/__init__.py": init + "\n",
        "pkg/policies.py": policies.text,
        "pkg/model.py": model.text,
        "pkg/sub/__init__.py": "",
        "pkg/sub/deep.py": deep.text,
    }
