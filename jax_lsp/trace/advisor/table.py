"""The advice as one table, which every view renders: the terminal's (`cli/output/advisor_table.py`),
the Markdown (`report.format_markdown`), the editor's Compare (`comparison.py`: VS Code's panel and
Neovim's buffer) and the chart's names (`chart.py`).

- A **column** is one entry of `COLUMNS`, in the order every view shows them: the one word its
  header reads everywhere, the abbreviation a narrow view may show instead (its legend gives the
  word), the unit its cells are in, what it means (the legend), its cell for a candidate and
  whether the advice shows it. Adding a column is adding an entry.
- A **row** is one candidate (`Row`): its marks (`MARKS`, `row_marks`: the current policy, the
  one suggested), its name in full (`policy_label`) and abbreviated (`abbreviate`, unique in the
  table), the policy as written, its first error line and its cells, one per column shown. A
  candidate JAX rejected has ``-`` in every cell. A new kind of row is a mark in `MARKS` and
  `MARK_WORDS` and its rule in `row_marks`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from jax_lsp.trace.advisor import fastest, runs
from jax_lsp.trace.advisor.advice import Advice
from jax_lsp.trace.advisor.policy_advice import PolicyAdvice
from jax_lsp.trace.advisor.sizes import format_bytes, format_flops
from jax_lsp.trace.advisor.user_call import UserCall

# A row's mark: its symbol where a view marks rows by a character, and its words in the legend.
MARKS = {"current": "*", "suggested": "+"}
MARK_WORDS = {"current": "current policy", "suggested": "suggested"}
REJECTED = "-"  # every cell of a candidate JAX rejected

PREFIX = "jax.checkpoint_policies."
SHORT_NAMES = {
    "nothing_saveable": "nothing",
    "everything_saveable": "everything",
    "dots_saveable": "dots",
    "checkpoint_dots": "dots",
    "dots_with_no_batch_dims_saveable": "dots, no batch",
    "checkpoint_dots_with_no_batch_dims": "dots, no batch",
    "save_only_these_names": "names",
    "save_and_offload_only_these_names": "offload names",
    "offload_dot_with_no_batch_dims": "offload dots",
    "save_anything_except_these_names": "all but names",
    "save_any_names_but_these": "names but",
    "save_from_both_policies": "both",
}
MAX_SHORT = 28  # characters of an abbreviated policy, before its key
_MEMORIES = ("device", "pinned_host", "unpinned_host")  # an offload's source and target, not names


def short_policy(policy: str) -> str:
    """``save_only_these_names('h')`` for ``jax.checkpoint_policies.save_only_these_names('h')``."""
    return policy.removeprefix(PREFIX)


def abbreviate(policy: str) -> str:
    """A short name for a policy expression: ``names(h, y)``, ``offload dots``, ``dots``."""
    text = policy.removeprefix(PREFIX)
    call = re.match(r"^([A-Za-z_][\w.]*)\(([\s\S]*)\)$", text)
    name = call[1] if call else text
    label = SHORT_NAMES.get(name.removeprefix(PREFIX), name.rpartition(".")[2])
    if call and "names" in name:
        names = [n for n in re.findall(r"['\"]([^'\"]*)['\"]", call[2]) if n not in _MEMORIES]
        label += f"({', '.join(names)})"
    return label[: MAX_SHORT - 1] + "…" if len(label) > MAX_SHORT else label


def policy_label(
    policy: PolicyAdvice, user_call: UserCall | None = None, name: Callable[[str], str] = short_policy
) -> str:
    """The policy by ``name``, and the key that selects it where a key chooses the site's policy:
    ``dots_saveable (remat_policy='checkpoint_dots')``; JAX's default (a site without a policy)
    says what JAX makes of it. The current policy of a site in a library that makes it from the
    ``user_call``'s value: ``nothing_saveable (gradient_checkpointing="recompute")``."""
    if policy.policy == "None":
        return f"None (default: {name(PREFIX + 'nothing_saveable')})"
    written = name(policy.policy)
    if policy.current and user_call is not None and policy.policy != user_call.written:
        return written if user_call.carries_policy else f"{written} ({user_call.written})"
    select = policy.select
    return written if select is None else f"{written} ({select.name}={select.key!r})"


def short_labels(advice: Advice) -> list[str]:
    """Each candidate's abbreviated label (`policy_label` by `abbreviate`), unique: a second
    ``dots`` is ``dots #2``."""
    seen: dict[str, int] = {}
    found = []
    for policy in advice.policies:
        label = policy_label(policy, advice.user_call, abbreviate)
        seen[label] = seen.get(label, 0) + 1
        found.append(label if seen[label] == 1 else f"{label} #{seen[label]}")
    return found


# -- cells ------------------------------------------------------------------------------------
STOPPED = {"memory": "out of memory", "timeout": "timed out", "crashed": "crashed"}


def size_cell(count: int | None) -> str:
    """A size in a cell: ``1.5 KiB``, ``0`` for none, ``?`` where unknown."""
    if count is None:
        return "?"
    return format_bytes(count) if count else "0"


def not_compiled(policy: PolicyAdvice) -> str:
    """The compiled figure's cell of a step that did not compile: what stopped it."""
    return STOPPED.get(policy.compile_stopped or "", "failed")


def compiled_cell(policy: PolicyAdvice) -> str:
    """The compiled temporaries; "" where the step was not compiled (the budget did not need it)."""
    if policy.compiled is not None:
        return size_cell(policy.compiled.temp_bytes)
    return not_compiled(policy) if policy.was_compiled else ""


def chip_memory(count: int) -> str:
    """A chip's memory as XLA states it: ``15.75 GiB`` (not rounded to three digits)."""
    return f"{count / 2**30:.4g} GiB"


def compiled_peak_cell(advice: Advice, policy: PolicyAdvice) -> str:
    """``14.2 GiB``, ``> 15.75 GiB`` for a step larger than the chip, or what stopped its compile."""
    if policy.exhausted is not None:
        return f"> {chip_memory(policy.exhausted.available_bytes)}"
    compiled = policy.compiled
    return size_cell(compiled.device_peak_bytes) if compiled is not None else not_compiled(policy)


def fit_cell(advice: Advice, policy: PolicyAdvice) -> str:
    """``fits``, ``does not fit by 4.1 GiB``, ``?`` (compiled, no peak) or ``-`` (not compiled)."""
    fits = advice.fits(policy)
    if fits is None:
        return "?" if policy.compiled is not None else "-"
    return "fits" if fits else f"does not fit by {format_bytes(advice.over_bytes(policy))}"


def steps_ran(advice: Advice) -> bool:
    """Whether the candidates' steps ran (--run) and any answered."""
    return advice.run is not None and any(p.run is not None for p in advice.policies)


def target_words(advice: Advice) -> str:
    """``v5e-1 (v5e:1x1, 1 chip of 15.75 GiB; inputs replicated)``: what the steps were compiled
    for, and how the example's inputs were placed on the chips."""
    target = advice.target
    if target is None or not target.is_tpu:
        return "cpu"
    memory = chip_memory(target.memory_bytes) if target.memory_bytes is not None else "?"
    chips = f"{target.chips} chip{'s' if target.chips != 1 else ''} of {memory}"
    sharding = next((p.compiled.sharding for p in advice.policies if p.compiled is not None), None)
    placed = {"example": "; inputs sharded as the example gives them", "replicated": "; inputs replicated"}
    return f"{target.name} ({target.topology}, {chips}{placed.get(sharding or '', '')})"


def device_words(advice: Advice) -> str:
    """``TPU v5 lite (tpu)``: where the steps ran (--run)."""
    ran = advice.run
    if ran is None or not ran.device:
        return "the device"
    return ran.device if ran.device == ran.platform else f"{ran.device} ({ran.platform})"


def _facts(advice: Advice) -> dict[str, str]:
    """What the columns' words and meanings name: the target, the chip, where the steps ran."""
    target = advice.target
    runs_each = next((p.run.runs for p in advice.policies if p.run is not None and p.run.runs), None)
    memory = target.memory_bytes if target is not None else None
    return {
        "target": target_words(advice),
        "chip": target.name if target is not None else "the target",
        "memory": chip_memory(memory) if memory is not None else "its memory",
        "device": device_words(advice),
        "runs": str(runs_each or "several"),
    }


# -- columns ----------------------------------------------------------------------------------
COUNT, BYTES, FLOPS, SECONDS, WORDS = "count", "bytes", "flops", "seconds", "words"


def _always(advice: Advice) -> bool:
    return True


def _compiled_for_cpu(advice: Advice) -> bool:
    return advice.compiled and not advice.on_tpu


def _on_tpu(advice: Advice) -> bool:
    return advice.on_tpu


def _peak_in_use_known(advice: Advice) -> bool:
    return steps_ran(advice) and any(runs.peak_in_use_text(p.run) != "?" for p in advice.policies)


Words = str | Callable[[Advice], str]  # a format string of `_facts`, or the words for an advice


@dataclass(frozen=True)
class Column:
    """One column of the table, as every view shows it."""

    word: Words  # its header, the same in every view; "{chip}" is the target's name
    short: str  # its header where a view is narrow (the legend gives the word)
    unit: str  # what its cells are: COUNT, BYTES, FLOPS, SECONDS or WORDS
    meaning: Words  # the legend's words; {target}, {chip}, {memory}, {device}, {runs}: `_facts`
    cell: Callable[[Advice, PolicyAdvice], str]
    shown: Callable[[Advice], bool] = _always

    def header(self, advice: Advice, facts: dict[str, str]) -> Header:
        """The column as ``advice`` shows it: its words filled in."""
        word = self.word(advice) if callable(self.word) else self.word.format(**facts)
        meaning = self.meaning(advice) if callable(self.meaning) else self.meaning.format(**facts)
        return Header(word, self.short, self.unit, meaning)


COLUMNS = (
    Column(
        "saves",
        "saves",
        COUNT,
        "the arrays JAX keeps for the backward pass",
        lambda a, p: str(len(p.residuals)),
    ),
    Column(
        "computed",
        "comp.",
        BYTES,
        "what the policy keeps on the device",
        lambda a, p: size_cell(p.computed_bytes),
    ),
    Column(
        "arguments",
        "args",
        BYTES,
        "the parameters, inputs and constants the step holds anyway",
        lambda a, p: size_cell(p.argument_bytes),
    ),
    Column(
        "host",
        "host",
        BYTES,
        "what an offloading policy keeps in the host's memory: moved there in the forward pass and back "
        "in the backward pass, every step",
        lambda a, p: size_cell(p.host_bytes),
    ),
    Column(
        "peak (est.)",
        "peak est.",
        BYTES,
        "the step's temporary device memory at its peak, estimated from its trace",
        lambda a, p: size_cell(p.peak_bytes),
    ),
    Column(
        "compiled temp",
        "XLA temp",
        BYTES,
        "XLA's temporaries for the compiled step (memory_analysis)",
        lambda a, p: compiled_cell(p),
        _compiled_for_cpu,
    ),
    Column(
        "compiled peak",
        "XLA peak",
        BYTES,
        "all the step holds at once in one chip's HBM (arguments, gradients, temporaries), XLA's "
        "peak_memory_in_bytes less its host temporaries for the step compiled for {target}",
        compiled_peak_cell,
        _on_tpu,
    ),
    Column(
        "on {chip}", "fits", WORDS, "whether the compiled peak fits one chip's {memory}", fit_cell, _on_tpu
    ),
    Column(
        "recompute",
        "recomp.",
        FLOPS,
        "the dot_general and convolution FLOPs done again in the backward pass",
        lambda a, p: format_flops(p.recompute_flops),
    ),
    Column(
        fastest.estimate_column,
        "step est.",
        SECONDS,
        fastest.estimate_meaning,
        fastest.estimate_cell,
        fastest.estimated,
    ),
    Column(
        "step",
        "step",
        SECONDS,
        "the compiled step's median time over {runs} runs on {device}, on random inputs",
        lambda a, p: runs.step_text(p.run),
        steps_ran,
    ),
    Column(
        "peak in use",
        "in use",
        BYTES,
        "the device's memory_stats() peak_bytes_in_use, the step's own where it raised the high-water "
        "mark (smallest compiled peak ran first), else ≤ the mark; on a TPU, buffers only, not XLA's "
        "temporaries",
        lambda a, p: runs.peak_in_use_text(p.run),
        _peak_in_use_known,
    ),
)


@dataclass(frozen=True)
class Header:
    """A column as one advice shows it: its words filled in."""

    word: str
    short: str
    unit: str
    meaning: str


@dataclass(frozen=True)
class Row:
    marks: tuple[str, ...]  # the keys of MARKS that apply: ("current", "suggested") where both
    name: str  # the policy named in full (`policy_label`)
    short: str  # abbreviated (`short_labels`), unique in the table
    policy: str  # the expression as written
    error: str | None  # the first line of what JAX raised, for a candidate it rejected
    cells: tuple[str, ...]  # one per column shown

    @property
    def mark(self) -> str:
        """The row's one mark, as the table shows it: the first that applies, or ""."""
        return self.marks[0] if self.marks else ""

    @property
    def symbol(self) -> str:
        return MARKS.get(self.mark, "")


@dataclass(frozen=True)
class Table:
    headers: tuple[Header, ...]
    rows: tuple[Row, ...]
    suggested: PolicyAdvice | None

    @property
    def words(self) -> tuple[str, ...]:
        return tuple(h.word for h in self.headers)

    def marks(self) -> str:
        """``* current policy, + suggested``: the marks the rows carry."""
        used = {row.mark for row in self.rows}
        return ", ".join(f"{MARKS[m]} {MARK_WORDS[m]}" for m in MARKS if m in used)

    def legend(self) -> list[str]:
        """``computed: what the policy keeps on the device``, a line per column shown."""
        return [f"{h.word}: {h.meaning}" for h in self.headers]


def columns(advice: Advice) -> list[Column]:
    """The columns ``advice`` shows, in order."""
    return [column for column in COLUMNS if column.shown(advice)]


def row_marks(policy: PolicyAdvice, suggested: PolicyAdvice | None) -> tuple[str, ...]:
    """The marks (`MARKS`) of ``policy``'s row."""
    return tuple(m for m, on in (("current", policy.current), ("suggested", policy is suggested)) if on)


def first_line(error: str | None) -> str | None:
    return (error.strip().splitlines() or [""])[0] if error is not None else None


Suggest = Callable[[Advice, int | None], PolicyAdvice | None]  # the candidate to mark suggested


def suggested_for(advice: Advice, budget: int | None) -> PolicyAdvice | None:
    """What `advise --budget` suggests: the advice's pick for ``budget`` (`Advice.suggest`);
    none without a budget. The editor marks what its quick fix offers instead."""
    return advice.suggest(budget) if budget is not None and advice.ok else None


def policy_table(advice: Advice, budget: int | None, suggest: Suggest = suggested_for) -> Table:
    """The table of ``advice`` with the candidate ``suggest`` picks for ``budget`` marked."""
    suggested = suggest(advice, budget) if advice.ok else None
    shown = columns(advice)
    facts = _facts(advice)
    headers = tuple(column.header(advice, facts) for column in shown)
    rows = []
    for policy, short in zip(advice.policies, short_labels(advice)):
        if policy.error is not None:
            cells = tuple(REJECTED for _ in shown)
        else:
            cells = tuple(column.cell(advice, policy) for column in shown)
        name = policy_label(policy, advice.user_call)
        rows.append(
            Row(row_marks(policy, suggested), name, short, policy.policy, first_line(policy.error), cells)
        )
    return Table(headers, tuple(rows), suggested)
