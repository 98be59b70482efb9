"""The example's meshes on the target's chips: how a step traced on this machine's CPU devices is
compiled for a TPU slice.

The advise child sees as many CPU devices as the target has chips (`see_chips`), so an example
builds its mesh as users write it (``jax.make_mesh((8,), ("fsdp",))``, ``jax.sharding.Mesh``)
or names an ``AbstractMesh``. Each mesh of the step (its arguments' shardings, and the shardings
inside it: ``with_sharding_constraint``, ``shard_map``, ``device_put``) is mapped onto the slice's
chips with the same axis names, sizes and types; a mesh of fewer devices than the slice has chips
takes the first of them, and says so; arguments on no mesh (or on a mesh larger than the slice)
are replicated on every chip, and that is said too (`Placement.note`).
"""

from __future__ import annotations

import math

import jax
import numpy as np
from jax._src import core as jax_core
from jax.sharding import Mesh, NamedSharding, PartitionSpec, SingleDeviceSharding

# JAX 0.4.30 has no AbstractMesh: there no value is one.
ABSTRACT_MESH = tuple(kind for kind in (getattr(jax.sharding, "AbstractMesh", None),) if kind)


def see_chips(count):
    """Have this process's CPU backend, not started yet, hold ``count`` devices: the target's
    chips, for the example to build its mesh over."""
    if count is None or int(count) <= 1:
        return
    try:
        jax.config.update("jax_num_cpu_devices", int(count))
    except Exception:  # a release without the option: XLA's flag, read as the backend starts
        import os

        flag = f"--xla_force_host_platform_device_count={int(count)}"
        os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}".strip()


class Placement:
    """The meshes of one step mapped onto ``topology``'s chips (``name``: the target's)."""

    def __init__(self, topology, name):
        self.devices = list(topology.devices)
        self.name = name
        self.meshes = {}  # (axis names, sizes, types) -> the mesh over the slice's chips
        self.smaller = set()  # sizes of the example's meshes smaller than the slice
        self.larger = set()  # sizes of the example's meshes larger than the slice
        self.replicated = 0  # arguments placed on no mesh of the example's
        self.sharded = 0  # arguments sharded over a mesh of the example's
        self.whole = Mesh(np.array(self.devices).reshape(len(self.devices)), ("chips",))

    def mesh(self, mesh):
        """``mesh`` (the example's, concrete or abstract) over the slice's chips; None where it has
        more devices than the slice has chips."""
        sizes = tuple(mesh.axis_sizes)
        size = math.prod(sizes)
        if size > len(self.devices):
            self.larger.add(size)
            return None
        if size < len(self.devices):
            self.smaller.add(size)
        key = (tuple(mesh.axis_names), sizes, tuple(getattr(mesh, "axis_types", None) or ()))
        if key not in self.meshes:
            self.meshes[key] = _mesh_over(self.devices[:size], *key)
        return self.meshes[key]

    def sharding(self, sharding):
        """``sharding`` on the slice's chips: a `NamedSharding` of a mesh, mapped (an abstract
        mesh of this machine's devices, as types carry it, too); a single CPU device's, the first
        chip's; another as it is (an abstract mesh of no device needs no chip)."""
        if isinstance(sharding, NamedSharding):
            mesh = (
                self.abstract(sharding.mesh)
                if isinstance(sharding.mesh, ABSTRACT_MESH)
                else self.mesh(sharding.mesh)
            )
            if mesh is None:
                return None
            return NamedSharding(mesh, sharding.spec, memory_kind=sharding.memory_kind)
        if isinstance(sharding, SingleDeviceSharding) and _on_cpu(sharding):
            return SingleDeviceSharding(self.devices[0], memory_kind=sharding.memory_kind)
        return sharding

    def abstract(self, mesh):
        """An abstract mesh of this machine's devices (a type's: the example's concrete mesh, seen
        by JAX's sharding in types) as the slice's; one of no device as it is."""
        if getattr(mesh, "abstract_device", None) is None:
            return mesh
        mapped = self.mesh(mesh)
        return mapped.abstract_mesh if mapped is not None else mesh

    def aval(self, aval):
        """``aval`` with its sharding's mesh mapped (`abstract`)."""
        sharding = getattr(aval, "sharding", None)
        if isinstance(sharding, NamedSharding) and isinstance(sharding.mesh, ABSTRACT_MESH):
            mapped = self.abstract(sharding.mesh)
            if mapped is not sharding.mesh:
                return aval.update(
                    sharding=NamedSharding(mapped, sharding.spec, memory_kind=sharding.memory_kind)
                )
        return aval

    def leaf(self, leaf):
        """The step's argument ``leaf`` as a ``ShapeDtypeStruct`` on the slice's chips."""
        given = getattr(leaf, "sharding", None)
        placed = None
        if isinstance(given, NamedSharding):
            mesh = self.mesh(given.mesh)
            if mesh is not None:
                placed = NamedSharding(mesh, given.spec, memory_kind=given.memory_kind)
        if placed is None or all(axis is None for axis in placed.spec):
            self.replicated += placed is None
            placed = placed or NamedSharding(self.whole, PartitionSpec())
        else:
            self.sharded += 1
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=placed)

    def context(self, ctx):
        """An equation's context with the mesh it was traced under mapped (private: JAX keeps
        the context's abstract mesh there; feature-detected)."""
        mesh = getattr(ctx, "cur_abstract_mesh", None)
        create = getattr(type(ctx), "_create", None)
        if mesh is None or create is None or self.abstract(mesh) is mesh:
            return ctx
        try:
            return create(
                ctx.compute_type,
                ctx.threefry_partitionable,
                self.abstract(mesh),
                ctx.remove_size_one_mesh_axis,
                ctx.xla_metadata,
            )
        except (AttributeError, TypeError):  # another release's fields
            return ctx

    def params(self, value):
        """An equation's parameter with its shardings, meshes, types and inner jaxprs mapped."""
        if isinstance(value, jax_core.ClosedJaxpr):
            return jax_core.ClosedJaxpr(self.jaxpr(value.jaxpr), value.consts)
        if isinstance(value, jax_core.Jaxpr):
            return self.jaxpr(value)
        if isinstance(value, ABSTRACT_MESH):
            return self.abstract(value)
        if isinstance(value, Mesh):
            return self.mesh(value) or value
        if isinstance(value, jax.sharding.Sharding):
            return self.sharding(value) or value
        if isinstance(value, jax_core.ShapedArray):
            return self.aval(value)
        if type(value) in (tuple, list):  # not a NamedTuple's fields (GatherDimensionNumbers)
            return type(value)(self.params(item) for item in value)
        return value

    def jaxpr(self, jaxpr):
        """``jaxpr`` with every variable's type and every equation's parameters mapped."""
        renamed = {}

        def var(v):
            if isinstance(v, jax_core.Literal):
                return v
            if v not in renamed:
                made = jax_core.DropVar if isinstance(v, jax_core.DropVar) else jax_core.Var
                renamed[v] = made(self.aval(v.aval))
            return renamed[v]

        eqns = [
            eqn.replace(
                invars=[var(v) for v in eqn.invars],
                outvars=[var(v) for v in eqn.outvars],
                params={k: self.params(v) for k, v in eqn.params.items()},
                ctx=self.context(eqn.ctx),
            )
            for eqn in jaxpr.eqns
        ]
        return jaxpr.replace(
            constvars=[var(v) for v in jaxpr.constvars],
            invars=[var(v) for v in jaxpr.invars],
            outvars=[var(v) for v in jaxpr.outvars],
            eqns=eqns,
        )

    @property
    def sharding_kind(self):
        """``"example"`` where some argument was sharded over the example's mesh, else
        ``"replicated"``."""
        return "example" if self.sharded else "replicated"

    def note(self):
        """What the table says of how the step was placed on the slice, where the example's
        meshes do not match its chips; None where they do (or it has one chip)."""
        chips = len(self.devices)
        if chips == 1:
            return None
        parts = []
        for size in sorted(self.smaller):
            parts.append(
                f"the example's mesh has {size} devices and {self.name} has {chips} chips: its step "
                f"was compiled over {size} of them, sharded as the example gives it (figures per chip "
                "of those)"
            )
        for size in sorted(self.larger):
            parts.append(
                f"the example's mesh has {size} devices, more than the {chips} chips of {self.name}: "
                "the arguments on it were replicated on every chip"
            )
        if self.replicated and not self.larger:
            parts.append(
                f"{self.replicated} of the step's arguments are on no mesh of the example's: they "
                f"were replicated on each of the {chips} chips (give them a NamedSharding over a mesh "
                "of as many devices as the target has chips: docs/advise.md)"
            )
        return "; ".join(parts) or None


def _mesh_over(devices, names, sizes, types):
    try:
        from jax.experimental import mesh_utils

        grid = mesh_utils.create_device_mesh(sizes, devices)
    except Exception:  # a shape the slice's layout does not take: the devices in order
        grid = np.array(devices).reshape(sizes)
    return Mesh(grid, names, axis_types=types or None)


def _on_cpu(sharding):
    return all(device.platform == "cpu" for device in sharding.device_set)


def context_mesh(placement):
    """The context to lower the step in: the example's mesh set for the process (``jax.set_mesh``,
    as a training script sets it before it jits), mapped onto the slice's chips; else none."""
    import contextlib

    given = jax.sharding.get_mesh()
    if getattr(given, "empty", True) or isinstance(given, ABSTRACT_MESH):
        return contextlib.nullcontext()
    mapped = placement.mesh(given)
    return jax.set_mesh(mapped) if mapped is not None else contextlib.nullcontext()


def placed_step(step, leaves, placement):
    """``step`` traced at ``leaves`` with the shardings inside it mapped by ``placement``, and
    ``leaves`` placed on the slice's chips: what `jax.jit` lowers for the target."""
    closed = jax.make_jaxpr(step)(*leaves)
    mapped = jax_core.ClosedJaxpr(placement.jaxpr(closed.jaxpr), closed.consts)
    return jax_core.jaxpr_as_fun(mapped), [placement.leaf(leaf) for leaf in leaves]
