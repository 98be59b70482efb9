"""The machine `advise --compile` compiles each candidate's step for: a TPU slice, by the names
TPU users know (``v5e-1``, ``v5litepod-8``, ``v4-8``, ``v5p-8``, ``v6e-4``) or JAX's own form
(``v5e:2x2``), or ``cpu`` (the local CPU). A TPU target is compiled for without a TPU, from its
topology (`jax.experimental.topologies.get_topology_desc`, as MaxText's ``train_compile.py``
does): `CompileTarget.to_params` gives that call's arguments.

Without a target named, it is the local TPU's type where the machine has one, read as JAX reads
it without opening the chip (`local_target`: ``TPU_ACCELERATOR_TYPE``, else the PCI devices of
Google's vendor id in ``/sys/bus/pci``), else ``cpu``. docs/accelerators.md lists the names.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from jax_lsp.core.record import Record

GiB = 2**30


class Generation(Record):
    """A TPU generation: how JAX's topology names it, how its chips are laid out and counted."""

    __slots__ = ("name", "topology_prefix", "dims", "chip_config", "cores_per_chip", "memory_bytes")
    name: str  # "v5e"
    topology_prefix: str  # "v5e" in "v5e:2x2" (v5p's is "v5")
    dims: int  # 2 (a v5e slice is AxB chips) or 3 (v4, v5p: AxBxC)
    chip_config: str  # "default", or "megacore" (two TensorCores of a chip as one device)
    cores_per_chip: int  # what the number in "v4-8" counts: TensorCores (2 a chip) or chips (1)
    memory_bytes: int  # the HBM of a chip that XLA lets a program use

    def __init__(
        self,
        name: str,
        topology_prefix: str,
        dims: int,
        chip_config: str,
        cores_per_chip: int,
        memory_bytes: int,
    ) -> None:
        self._assign(name, topology_prefix, dims, chip_config, cores_per_chip, memory_bytes)


# The HBM XLA lets a program use, per chip, as its compiler reports when a step exceeds it
# ("exceeds available HBM (15.75G)"), measured by compiling for each topology (docs/accelerators.md).
GENERATIONS = {
    "v4": Generation("v4", "v4", 3, "megacore", 2, int(30.75 * GiB)),
    "v5p": Generation("v5p", "v5", 3, "megacore", 2, int(95.74 * GiB)),
    "v5e": Generation("v5e", "v5e", 2, "default", 1, int(15.75 * GiB)),
    "v6e": Generation("v6e", "v6e", 2, "default", 1, int(31.25 * GiB)),
}
ALIASES = {"v5litepod": "v5e", "v5lite": "v5e", "v5": "v5p"}

# The shape of a slice of N chips, as Cloud TPU lays it out.
SHAPES_2D = {1: (1, 1), 4: (2, 2), 8: (2, 4), 16: (4, 4), 32: (4, 8), 64: (8, 8), 128: (8, 16), 256: (16, 16)}
SHAPES_3D = {
    4: (2, 2, 1),
    8: (2, 2, 2),
    16: (2, 2, 4),
    32: (2, 4, 4),
    64: (4, 4, 4),
    128: (4, 4, 8),
    256: (4, 8, 8),
    512: (8, 8, 8),
}

# TPU chips by PCI device id (Google's vendor id 0x1ae0), as `jax._src.hardware_utils` reads them.
GOOGLE_PCI_VENDOR = "0x1ae0"
PCI_DEVICES = {"0x005e": "v4", "0x0062": "v5p", "0x0063": "v5e", "0x006f": "v6e"}

FORMS = (
    "a TPU type (v5e-1, v5litepod-8, v4-8, v5p-8, v6e-4), a topology as JAX writes it (v5e:2x2, "
    "v4:2x2x1), or cpu"
)


class CompileTargetError(ValueError):
    """A target that names no machine this knows; its message says what would."""


class CompileTarget(Record):
    """A machine to compile for: ``cpu`` (``generation`` None), or a TPU slice of ``chips``
    chips laid out as ``shape``."""

    __slots__ = ("name", "generation", "shape", "source")
    name: str  # as the user wrote it, or as it was found ("v5litepod-8", "v5e:2x2", "cpu")
    generation: Generation | None
    shape: tuple[int, ...]  # chips per dimension: (2, 4); () for cpu
    source: str  # where it came from: "--target", "[tool.jax-lsp] target", "this machine's TPU"...

    def __init__(self, name: str, generation: Generation | None, shape: tuple[int, ...], source: str) -> None:
        self._assign(name, generation, shape, source)

    @property
    def is_tpu(self) -> bool:
        return self.generation is not None

    @property
    def chips(self) -> int:
        count = 1
        for size in self.shape:
            count *= size
        return count

    @property
    def topology(self) -> str | None:
        """JAX's name of the slice: ``v5e:2x4``; None for cpu."""
        if self.generation is None:
            return None
        return f"{self.generation.topology_prefix}:{'x'.join(str(n) for n in self.shape)}"

    @property
    def memory_bytes(self) -> int | None:
        """The HBM a program may use on one chip; None for cpu (the host's memory is not known)."""
        return self.generation.memory_bytes if self.generation is not None else None

    def to_params(self) -> dict[str, object] | None:
        """The agent's ``target`` parameter: `get_topology_desc`'s arguments and the number of
        chips; None for cpu (the local device compiles)."""
        generation = self.generation
        if generation is None:
            return None
        return {
            "platform": "tpu",
            "topology_name": self.topology,
            "chip_config_name": generation.chip_config,
            "chips_per_host_bounds": list(_host_bounds(generation, self.shape)),
            "num_slices": 1,
            "chips": self.chips,
            "name": self.name,
        }


def _host_bounds(generation: Generation, shape: tuple[int, ...]) -> tuple[int, int, int]:
    """The chips of one host in each dimension: the whole slice where it fits on one host (a
    v5e or v6e host holds up to 2x4 chips), else 2x2x1 (a v4 or v5p host; MaxText's bounds for
    the larger v5e and v6e slices)."""
    if generation.dims == 2 and shape[0] <= 2 and shape[0] * shape[1] <= 8:
        return shape[0], shape[1], 1
    return 2, 2, 1


def parse_target(text: str, source: str = "--target") -> CompileTarget:
    """``text`` as a `CompileTarget`; raises `CompileTargetError` saying what a target looks like."""
    name = text.strip()
    lowered = name.lower()
    if lowered in ("cpu", "local"):
        return CompileTarget("cpu", None, (), source)
    topology = re.fullmatch(r"(v\d+[a-z]*):(\d+(?:x\d+){1,2})", lowered)
    if topology:
        generation = _generation(topology[1], name)
        shape = tuple(int(n) for n in topology[2].split("x"))
        if len(shape) != generation.dims or 0 in shape:
            layout = "AxB" if generation.dims == 2 else "AxBxC"
            raise CompileTargetError(
                f"{name}: a {generation.name} topology is {layout} chips, e.g. {_example(generation)}"
            )
        return CompileTarget(name, generation, shape, source)
    typed = re.fullmatch(r"(v\d+[a-z]*)-(\d+)", lowered)
    if typed is None:
        raise CompileTargetError(f"{name!r} is not a target: give {FORMS}")
    generation = _generation(typed[1], name)
    count = int(typed[2])
    chips, odd = divmod(count, generation.cores_per_chip)
    shapes = SHAPES_2D if generation.dims == 2 else SHAPES_3D
    if odd or chips not in shapes:
        raise CompileTargetError(
            f"{name}: no {generation.name} slice of that size is known here; write its topology, "
            f"e.g. {_example(generation)}"
        )
    return CompileTarget(name, generation, shapes[chips], source)


def _generation(prefix: str, name: str) -> Generation:
    found = GENERATIONS.get(ALIASES.get(prefix, prefix))
    if found is None:
        known = ", ".join(GENERATIONS)
        raise CompileTargetError(
            f"{name}: {prefix} is not a TPU generation this knows ({known}); give {FORMS}"
        )
    return found


def _example(generation: Generation) -> str:
    return f"{generation.topology_prefix}:2x2" + ("x1" if generation.dims == 3 else "")


def local_target(
    environ: os._Environ[str] | dict[str, str] | None = None, sysfs: str = "/sys", devfs: str = "/dev"
) -> CompileTarget:
    """This machine's TPU, read without opening it: the accelerator type a Cloud TPU VM or GKE
    node states in ``TPU_ACCELERATOR_TYPE``, else its chips on the PCI bus (what JAX reads to
    count them), narrowed to the chips a process here may open; ``cpu`` where there is none."""
    environ = os.environ if environ is None else environ
    found = _stated_target(environ) or _pci_target(sysfs)
    if found is None:
        return CompileTarget("cpu", None, (), "no TPU on this machine")
    return _narrowed(found, environ, devfs)


def _stated_target(environ: os._Environ[str] | dict[str, str]) -> CompileTarget | None:
    stated = environ.get("TPU_ACCELERATOR_TYPE", "").strip()
    if stated:
        try:
            return parse_target(stated, "this machine's TPU (TPU_ACCELERATOR_TYPE)")
        except CompileTargetError:
            pass  # a type this does not know: the PCI bus may still say
    return None


def _pci_target(sysfs: str) -> CompileTarget | None:
    found: dict[str, int] = {}
    for device in sorted(Path(sysfs, "bus", "pci", "devices").glob("*")):
        try:
            if (device / "vendor").read_text().strip() != GOOGLE_PCI_VENDOR:
                continue
            generation = PCI_DEVICES.get((device / "device").read_text().strip())
        except OSError:
            continue
        if generation is not None:
            found[generation] = found.get(generation, 0) + 1
    if len(found) == 1:
        ((generation, chips),) = found.items()
        return _slice(GENERATIONS[generation], chips, "this machine's TPU (/sys/bus/pci)")
    return None


def _slice(generation: Generation, chips: int, source: str) -> CompileTarget | None:
    shapes = SHAPES_2D if generation.dims == 2 else SHAPES_3D
    if chips not in shapes:
        return None
    return CompileTarget(
        f"{generation.name}-{chips * generation.cores_per_chip}", generation, shapes[chips], source
    )


def chip_devices(devfs: str = "/dev") -> list[Path]:
    """The TPU chips a process here may open: ``/dev/accelN`` (v4) or ``/dev/vfio/N`` (v5e and
    later)."""
    return [*Path(devfs).glob("accel[0-9]*"), *Path(devfs, "vfio").glob("[0-9]*")]


def _narrowed(found: CompileTarget, environ: os._Environ[str] | dict[str, str], devfs: str) -> CompileTarget:
    """``found``, or the slice of the chips a process here may open where that is fewer on a
    one-host machine: a container or VM given one chip of a 4-chip host sees the host's type
    (``v5litepod-4``) but JAX, and the user's job, get one chip."""
    single_host = environ.get("TPU_HOST_BOUNDS", "1,1,1").replace(" ", "") in ("1,1,1", "1,1")
    visible = environ.get("TPU_VISIBLE_CHIPS", "").strip()
    if visible:
        openable = len([chip for chip in visible.split(",") if chip.strip()])
    else:
        openable = len(chip_devices(devfs))
    generation = found.generation
    if generation is None or not single_host or not 0 < openable < found.chips:
        return found
    source = f"{found.source}: {openable} of its {found.chips} chips open here"
    return _slice(generation, openable, source) or found


def choose_target(
    given: str | None, configured: str | None, sysfs: str = "/sys", given_by: str = "--target"
) -> CompileTarget:
    """The target: ``given`` (by ``given_by``: ``--target``, the editor's setting), else
    ``configured`` (``[tool.jax-lsp] target``), else `local_target`."""
    if given:
        return parse_target(given, given_by)
    if configured:
        return parse_target(configured, "[tool.jax-lsp] target")
    return local_target(sysfs=sysfs)
