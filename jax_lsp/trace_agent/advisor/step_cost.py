"""What a compiled step does, read from its optimized HLO: the work of every instruction the
program runs, loops counted as often as they run, and the bytes it moves to and from the host.

XLA's ``cost_analysis()`` counts a ``while`` loop's body once (an 8-layer ``lax.scan`` reports an
eighth of the work); here each loop whose trip count the HLO states (a counter from a constant,
compared with a constant: a scan, a ``fori_loop`` with static bounds) multiplies its body, and a
loop whose count is not static is counted once and said so (``uncounted_loops``).

Each instruction a computation runs (a fusion, a matrix product, a copy, a host transfer) is one
operation: its floating-point work (matrix products and convolutions: twice the multiply-adds),
the bytes it reads and writes in device memory, and its host bytes (data moved between the
device and ``pinned_host`` memory, memory space ``S(5)`` in the TPU's layouts). The answer is
independent of any chip's rates: operations are summed into buckets of like arithmetic intensity
(FLOPs per byte, a factor of two apart), so that a roofline per operation, max(FLOPs / rate,
bytes / bandwidth), can be taken for any chip from the buckets (`jax_lsp/trace/advisor/step_time.py`).
An asynchronous copy within the device (a ``copy-start``, ``slice-start``: XLA:TPU's prefetches
and relayouts, run by the chip's DMA engines beside the computation) is kept out of the buckets:
its bytes are summed apart, to be hidden under the computation's time.
"""

from __future__ import annotations

import math
import re

from .hlo_text import Instruction, arrays, bytes_of, called_computations, parse_module

HOST_SPACE = "5"  # the memory space of pinned host memory in XLA:TPU's layouts
# Instructions that move no data of their own.
_FREE = {
    "parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all", "partition-id",
    "replica-id", "iota", "opt-barrier", "add-dependency", "copy-done", "dynamic-slice-done",
    "dynamic-update-slice-done", "send-done", "recv-done", "all-reduce-done", "all-gather-done",
    "collective-permute-done", "slice-done", "async-done",
}  # fmt: skip
_ALLOCATION = 'custom_call_target="AllocateBuffer"'
ON_CHIP_SPACE = "1"  # memory space 1 of XLA:TPU's layouts: the chip's own fast memory
_MATMUL = ("convolution", "dot")
# Passes of the matrix unit a float32 product takes, by its operands' precision.
_PASSES = {"default": 1, "high": 3, "highest": 6}

_BRANCHES = re.compile(r"branch_computations=\{([^}]*)\}")
_DIRECTION = re.compile(r"direction=(\w+)")
_INDEX = re.compile(r"\bindex=(\d+)")
_KNOWN_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"')
_DIM_LABELS = re.compile(r"dim_labels=(\w+)_(\w+)->(\w+)")
_WINDOW = re.compile(r"window=\{([^}]*)\}")
_CONTRACTING = re.compile(r"lhs_contracting_dims=\{([\d,]*)\}")
_PRECISION = re.compile(r"operand_precision=\{(\w+)")
_SLICE_OPS = ("dynamic-slice", "dynamic-slice-start", "slice-start")
_UPDATE_OPS = ("dynamic-update-slice", "dynamic-update-slice-start")


def _window(attributes):
    """A convolution's window per spatial dimension: ``[(strides, 1), (low pads, 0), (high pads,
    0), (lhs dilations, 1), (rhs dilations, 1)]``, each a list by dimension (empty: the default)."""
    found = _WINDOW.search(attributes)
    text = found.group(1) if found else ""

    def field(name):
        match = re.search(rf"\b{name}=([\d_x-]+)", text)
        return match.group(1).split("x") if match else []

    pads = field("pad")
    return [
        ([int(v) for v in field("stride")], 1),
        ([int(p.split("_")[0]) for p in pads], 0),
        ([int(p.split("_")[1]) for p in pads], 0),
        ([int(v) for v in field("lhs_dilate")], 1),
        ([int(v) for v in field("rhs_dilate")], 1),
    ]


def _valid_pairs(size, kernel, output, stride, low, high, lhs_dilation, rhs_dilation):
    """The (output position, window position) pairs of one spatial dimension whose input is a real
    element, not padding nor a hole of a dilated input: each is a multiply-add."""
    del high  # the output's size says where the padded input ends
    last = (size - 1) * lhs_dilation  # the last real element in the dilated input
    count = 0
    for position in range(output):
        start = position * stride - low
        if lhs_dilation == 1:  # the window positions w with 0 <= start + w * rhs_dilation <= last
            first = max(0, -(start // rhs_dilation) if start < 0 else 0)
            if start < 0:
                first = (-start + rhs_dilation - 1) // rhs_dilation
            end = min(kernel - 1, (last - start) // rhs_dilation) if last >= start else -1
            count += max(0, end - first + 1)
        else:
            count += sum(
                1
                for w in range(kernel)
                if 0 <= start + w * rhs_dilation <= last and (start + w * rhs_dilation) % lhs_dilation == 0
            )
    return count


def _spaces(found, times):
    """``{memory space: bytes}`` of arrays, each counted ``times`` (read and written: 2)."""
    spaces = {}
    for array in found:
        spaces[array[2]] = spaces.get(array[2], 0) + times * bytes_of(array)
    return spaces


class Module:
    """A parsed HLO module and the cost of running its computations."""

    def __init__(self, text):
        self.computations, self.entry = parse_module(text)
        self.types = {
            name: {i.name: i.type for i in instructions} for name, instructions in self.computations.items()
        }
        self.by_name = {
            name: {i.name: i for i in instructions} for name, instructions in self.computations.items()
        }
        self.loops = []  # (trip count or None, body) of every while the program runs
        self._flops_cache = {}

    # -- the floating-point work of a matrix product, a fusion's included --------------------------

    def matmul_flops(self, computation):
        """``(flops, float32 flops times passes)`` of the products a fused computation makes."""
        if computation in self._flops_cache:
            return self._flops_cache[computation]
        total = f32 = 0
        types = self.types.get(computation, {})
        for instruction in self.computations.get(computation, ()):
            flops, passes = self.instruction_flops(instruction, types)
            total, f32 = total + flops, f32 + passes
        self._flops_cache[computation] = (total, f32)
        return total, f32

    def instruction_flops(self, instruction, types):
        """``(flops, float32 flops times passes)`` of one instruction: a product's, or a fusion's
        products'; float32 products are counted apart, each FLOP once per pass of the matrix unit
        its precision takes."""
        if instruction.opcode == "fusion":
            called = called_computations(instruction).get("calls")
            return self.matmul_flops(called) if called else (0, 0)
        if instruction.opcode not in _MATMUL:
            return 0, 0
        flops = self._product_flops(instruction, types)
        operand = arrays(types.get(instruction.operands[0], "")) if instruction.operands else []
        if operand and operand[0][0] in ("f32", "f64"):
            precision = _PRECISION.search(instruction.attributes)
            return 0, flops * _PASSES.get(precision.group(1) if precision else "default", 1)
        return flops, 0

    @staticmethod
    def _product_flops(instruction, types):
        out = arrays(instruction.type)
        if not out or len(instruction.operands) < 2:
            return 0
        elements = math.prod(out[0][1])
        lhs = arrays(types.get(instruction.operands[0], ""))
        rhs = arrays(types.get(instruction.operands[1], ""))
        if instruction.opcode == "dot":
            contracting = _CONTRACTING.search(instruction.attributes)
            if not lhs or contracting is None:
                return 0
            dims = [int(d) for d in contracting.group(1).split(",") if d]
            return 2 * elements * math.prod(lhs[0][1][d] for d in dims)
        labels = _DIM_LABELS.search(instruction.attributes)
        if not lhs or not rhs or labels is None:
            return 0
        lhs_labels, rhs_labels, out_labels = labels.groups()
        inputs = rhs[0][1][rhs_labels.index("i")] if "i" in rhs_labels else 1
        features = out[0][1][out_labels.index("f")] if "f" in out_labels else 1
        batch = out[0][1][out_labels.index("b")] if "b" in out_labels else 1
        window = _window(instruction.attributes)
        pairs = 1
        for index, label in enumerate(sorted(c for c in lhs_labels if c.isdigit())):
            size = lhs[0][1][lhs_labels.index(label)]
            kernel = rhs[0][1][rhs_labels.index(label)]
            output = out[0][1][out_labels.index(label)]
            pairs *= _valid_pairs(
                size, kernel, output, *(w[index] if index < len(w) else d for w, d in window)
            )
        return 2 * batch * features * inputs * pairs

    # -- bytes an instruction moves -----------------------------------------------------------------

    def moved_bytes(self, instruction, types):
        """``(device bytes, host bytes)`` an instruction of a running computation reads and
        writes; device bytes as ``{memory space: bytes}``."""
        if (
            instruction.opcode in _FREE
            or instruction.opcode == "while"
            or _ALLOCATION in instruction.attributes
        ):
            return {}, 0
        out = arrays(instruction.type)
        if instruction.opcode in _UPDATE_OPS:  # in place: the update is read and written
            update = arrays(types.get(instruction.operands[1], "")) if len(instruction.operands) > 1 else []
            to_host = any(a[2] == HOST_SPACE for a in out)
            return _spaces(update, 1 if to_host else 2), sum(map(bytes_of, update)) if to_host else 0
        if instruction.opcode in _SLICE_OPS or instruction.opcode.endswith("-start"):
            source = arrays(types.get(instruction.operands[0], "")) if instruction.operands else []
            # an asynchronous start's result is (operands, result, context); a copy-start's
            # (destination, source, context)
            if instruction.opcode == "copy-start":
                result = out[:1]
            elif instruction.opcode.endswith("-start"):
                result = out[-2:-1]
            else:
                result = out[-1:]
            from_host = bool(source) and source[0][2] == HOST_SPACE
            to_host = any(a[2] == HOST_SPACE for a in result)
            moved = sum(map(bytes_of, result))
            if from_host or to_host:
                return _spaces(result if from_host else source[:1], 1), moved
            return _spaces(result, 2), 0
        device, host = {}, 0
        read, out = self._fusion_reads(instruction, types, out)
        for found in read:
            for array in found:
                if array[2] == HOST_SPACE:
                    host += bytes_of(array)
                else:
                    device[array[2]] = device.get(array[2], 0) + bytes_of(array)
        for array in out:
            if array[2] == HOST_SPACE:
                host += bytes_of(array)
            else:
                device[array[2]] = device.get(array[2], 0) + bytes_of(array)
        return device, host

    def _fusion_reads(self, instruction, types, out):
        """What an instruction reads of each operand and what it writes: the operands whole and
        its result, but for a fusion, an operand it only slices is read as its slices, and one it
        updates in place (an output that is a ``dynamic-update-slice`` of it) is neither read
        nor written whole: the update is."""
        read = [arrays(types.get(operand, "")) for operand in instruction.operands]
        name = called_computations(instruction).get("calls")
        fused = self.by_name.get(name) if instruction.opcode == "fusion" and name else None
        if not fused:
            return read, out
        fused_types = self.types[name]
        users = _users_of(fused)
        parameters = {
            i.name: int(i.literal)
            for i in fused.values()
            if i.opcode == "parameter" and _is_number(i.literal)
        }
        for parameter, index in parameters.items():
            sliced = _slices(parameter, users, self)
            if sliced is not None and index < len(read):
                read[index] = sliced
        root = next((i for i in fused.values() if i.root), None)
        elements = (
            root.operands if root is not None and root.opcode == "tuple" else [root.name] if root else []
        )
        if len(elements) != len(out):
            return read, out
        written = []
        for element, array in zip(elements, out):
            update = _in_place(fused, element)
            if update is None:
                written.append(array)
                continue
            target, piece = update
            if target in parameters and parameters[target] < len(read):
                read[parameters[target]] = []
            written += arrays(fused_types.get(piece, ""))
        return read, written

    # -- loops --------------------------------------------------------------------------------------

    def trip_count(self, instruction, computation):
        """The number of times a ``while`` runs its body, where the HLO states it; else None."""
        known = _KNOWN_TRIPS.search(instruction.attributes)
        if known is not None:
            return int(known.group(1))
        called = called_computations(instruction)
        condition, body = called.get("condition"), called.get("body")
        root = next((i for i in self.computations.get(condition, ()) if i.root), None)
        if root is None or root.opcode != "compare" or len(root.operands) != 2:
            return None
        direction = _DIRECTION.search(root.attributes)
        conditions = self.by_name[condition]
        sides = [self._through_copies(conditions, o) for o in root.operands]
        index = limit = None
        for side, other in (sides, sides[::-1]):
            if side.opcode == "get-tuple-element" and other.opcode == "constant":
                index, limit = int(_INDEX.search(side.attributes).group(1)), _constant(other)
                flipped = side is sides[1]
        if index is None or limit is None or direction is None:
            return None
        start = self._initial(instruction, computation, index)
        step = self._increment(body, index)
        if start is None or not step:
            return None
        relation = direction.group(1)
        if flipped:
            relation = {"LT": "GT", "GT": "LT", "LE": "GE", "GE": "LE"}.get(relation, relation)
        if relation in ("LT", "NE") and step > 0:
            return max(math.ceil((limit - start) / step), 0)
        if relation == "LE" and step > 0:
            return max(math.floor((limit - start) / step) + 1, 0)
        if relation == "GT" and step < 0:
            return max(math.ceil((start - limit) / -step), 0)
        if relation == "GE" and step < 0:
            return max(math.floor((start - limit) / -step) + 1, 0)
        return None

    @staticmethod
    def _through_copies(instructions, name):
        instruction = instructions.get(name)
        while instruction is not None and instruction.opcode in ("copy", "bitcast") and instruction.operands:
            instruction = instructions.get(instruction.operands[0], instruction)
            if instruction.opcode not in ("copy", "bitcast"):
                break
        return instruction if instruction is not None else Instruction(name, "", "?", [], "", False)

    def _initial(self, loop, computation, index):
        instructions = self.by_name[computation]
        init = instructions.get(loop.operands[0]) if loop.operands else None
        if init is None or init.opcode != "tuple" or index >= len(init.operands):
            return None
        value = self._through_copies(instructions, init.operands[index])
        return _constant(value) if value.opcode == "constant" else None

    def _increment(self, body, index):
        instructions = self.by_name.get(body, {})
        root = next((i for i in self.computations.get(body, ()) if i.root), None)
        if root is None or root.opcode != "tuple" or index >= len(root.operands):
            return None
        value = self._through_copies(instructions, root.operands[index])
        if value.opcode not in ("add", "subtract") or len(value.operands) != 2:
            return None
        constants = [self._through_copies(instructions, o) for o in value.operands]
        amount = next((_constant(c) for c in constants if c.opcode == "constant"), None)
        if amount is None:
            return None
        return amount if value.opcode == "add" else -amount

    # -- the whole program ----------------------------------------------------------------------------

    def walk(self, computation, times, visit):
        """``visit(instruction, computation, times)`` for each instruction a running computation
        executes, ``times`` the number of times it runs; loops and calls followed."""
        for instruction in self.computations.get(computation, ()):
            called = called_computations(instruction)
            if instruction.opcode == "while":
                trips = self.trip_count(instruction, computation)
                self.loops.append((trips, called.get("body")))
                runs = times * (trips if trips is not None else 1)
                self.walk(called.get("body"), runs, visit)
                self.walk(called.get("condition"), runs + times, visit)
                continue
            if instruction.opcode in ("call", "async-start") and "to_apply" in called:
                self.walk(called["to_apply"], times, visit)
                continue
            if instruction.opcode == "conditional":
                branches = _BRANCHES.search(instruction.attributes)
                for branch in branches.group(1).split(",") if branches else ():
                    self.walk(branch.strip().lstrip("%"), times, visit)  # each branch counted: an upper bound
                continue
            visit(instruction, computation, times)


_VIEWS = ("bitcast", "reshape", "copy")


def _users_of(fused):
    users = {}
    for inner in fused.values():
        for operand in inner.operands:
            users.setdefault(operand, []).append(inner)
    return users


def _slices(name, users, module):
    """The arrays a fused computation reads of ``name`` where it only slices it (through views
    and nested fusions): the slices; None where something reads it whole."""
    found = []
    for user in users.get(name, []):
        if user.opcode in ("dynamic-slice", "slice", "gather") and user.operands[:1] == [name]:
            found += arrays(user.type)
        elif user.opcode in _VIEWS:
            inner = _slices(user.name, users, module)
            if inner is None:
                return None
            found += inner
        elif user.opcode == "dynamic-update-slice" and user.operands[:1] == [name]:
            continue  # updated in place: what it writes is counted as the output
        elif user.opcode == "fusion":
            inner = _nested_slices(user, name, module)
            if inner is None:
                return None
            found += inner
        else:
            return None
    return found if users.get(name) else None


def _nested_slices(fusion, name, module):
    """What a nested fusion reads of its operand ``name``: its slices, or None where whole."""
    called = called_computations(fusion).get("calls")
    fused = module.by_name.get(called) if called else None
    if not fused:
        return None
    positions = [index for index, operand in enumerate(fusion.operands) if operand == name]
    users = _users_of(fused)
    found = []
    for parameter in fused.values():
        if (
            parameter.opcode == "parameter"
            and _is_number(parameter.literal)
            and int(parameter.literal) in positions
        ):
            inner = _slices(parameter.name, users, module)
            if inner is None:
                return None
            found += inner
    return found


def _in_place(fused, name):
    """``(parameter, update)`` where the fused output ``name`` is (through views) a
    ``dynamic-update-slice`` of a parameter; else None."""
    instruction = fused.get(name)
    while instruction is not None and instruction.opcode in _VIEWS and instruction.operands:
        instruction = fused.get(instruction.operands[0])
    if instruction is None or instruction.opcode != "dynamic-update-slice" or len(instruction.operands) < 2:
        return None
    target = fused.get(instruction.operands[0])
    while target is not None and target.opcode in _VIEWS and target.operands:
        target = fused.get(target.operands[0])
    return (target.name, instruction.operands[1]) if target is not None else None


def _is_number(text):
    return text is not None and text.strip().isdigit()


def _constant(instruction):
    """The integer a scalar ``constant`` holds, else None."""
    try:
        return int(instruction.literal)
    except (TypeError, ValueError):
        return None


def _bucket(value, size):
    """A bucket of arithmetic intensity (FLOPs per byte, a factor of two apart); None for none."""
    if value <= 0:
        return None
    return round(math.log2(value / max(size, 1)))


def step_cost(text):
    """The cost of running the HLO module ``text`` (a compiled step's ``as_text()``), as the
    answer's ``cost``: ``flops`` (matrix products, loops counted by their trips; float32 ones
    also in ``f32_flops``), ``bytes`` (device memory read and written; ``on_chip_bytes`` those of the chip's own
    fast memory, XLA:TPU's memory space 1), ``host_bytes`` (moved
    between device and host memory; ``loop_host_bytes`` those moved in loops' bodies),
    ``async_bytes`` and ``async_on_chip_bytes`` (the device bytes of asynchronous copies, an
    ``...-start`` the chip's DMA engines run beside the computation: in ``bytes`` and
    ``on_chip_bytes``, not in ``buckets``), ``operations`` (instructions run), ``loop_trips`` (each
    loop's trip count, None where not static), ``uncounted_loops``, ``once`` (``flops`` and
    ``bytes`` with every loop's body once, as XLA counts them) and ``buckets``: ``[flops,
    float32 flops times passes, bytes, on-chip bytes, operations]`` of the synchronous operations
    of each intensity."""
    module = Module(text)
    totals = {
        "flops": 0,
        "f32_flops": 0,
        "bytes": 0,
        "on_chip_bytes": 0,
        "host_bytes": 0,
        "loop_host_bytes": 0,
        "async_bytes": 0,
        "async_on_chip_bytes": 0,
    }
    totals["operations"] = 0
    once = {"flops": 0, "bytes": 0}
    buckets = {}

    def visit(instruction, computation, times):
        types = module.types[computation]
        flops, f32 = module.instruction_flops(instruction, types)
        spaces, host = module.moved_bytes(instruction, types)
        on_chip = spaces.pop(ON_CHIP_SPACE, 0)
        device = sum(spaces.values())  # device memory (HBM)
        if not (flops or f32 or device or on_chip or host):
            return
        raw_f32 = f32 / _passes_of(instruction) if f32 else 0
        totals["flops"] += times * (flops + raw_f32)
        totals["f32_flops"] += times * raw_f32
        totals["bytes"] += times * device
        totals["on_chip_bytes"] += times * on_chip
        totals["host_bytes"] += times * host
        if times > 1:  # in a loop's body: a transfer each trip, between the trip's operations
            totals["loop_host_bytes"] += times * host
        totals["operations"] += times
        once["flops"] += flops + raw_f32
        once["bytes"] += device + on_chip
        if instruction.opcode.endswith("-start"):  # a DMA beside the computation, not in its order
            totals["async_bytes"] += times * device
            totals["async_on_chip_bytes"] += times * on_chip
            return
        key = (_bucket(flops, device), _bucket(f32, device))
        entry = buckets.setdefault(key, [0, 0, 0, 0, 0])
        for index, value in enumerate((flops, f32, device, on_chip, 1)):
            entry[index] += times * value

    if module.entry is not None:
        module.walk(module.entry, 1, visit)
    trips = [trips for trips, _ in module.loops]
    return {
        **{key: int(value) for key, value in totals.items()},
        "loop_trips": trips,
        "uncounted_loops": sum(1 for t in trips if t is None),
        "once": {key: int(value) for key, value in once.items()},
        "buckets": [[int(v) for v in entry] for entry in buckets.values()],
    }


def _passes_of(instruction):
    precision = _PRECISION.search(instruction.attributes)
    return _PASSES.get(precision.group(1) if precision else "default", 1)


def xla_cost(compiled):
    """XLA's own ``cost_analysis()`` of a compiled step (loop bodies once): ``flops``,
    ``bytes_accessed``, ``transcendentals``; None where this JAX or backend gives none."""
    try:
        analysis = compiled.cost_analysis()
    except Exception:
        return None
    if isinstance(analysis, (list, tuple)):  # older releases: one per program
        analysis = analysis[0] if analysis else None
    if not analysis:
        return None
    names = {"flops": "flops", "bytes_accessed": "bytes accessed", "transcendentals": "transcendentals"}
    return {key: float(analysis[name]) for key, name in names.items() if name in analysis}


def cost_of(compiled):
    """The answer's ``cost`` of a compiled step: `step_cost` of its optimized HLO with XLA's own
    figures as ``xla``; None where the HLO cannot be had or read."""
    try:
        cost = step_cost(compiled.as_text())
    except MemoryError:
        raise
    except Exception:
        return None
    cost["xla"] = xla_cost(compiled)
    return cost
