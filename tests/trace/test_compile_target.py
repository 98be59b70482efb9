"""The names of the machines `advise --compile` compiles for, as `get_topology_desc` takes them,
and the local TPU read from the PCI bus as JAX reads it (a sysfs tree written here)."""

from pathlib import Path

import pytest

from jax_lsp.trace.compile_target import CompileTargetError, GiB, choose_target, local_target, parse_target


@pytest.mark.parametrize(
    ("name", "topology", "chips", "config", "bounds", "memory"),
    [
        ("v5e-1", "v5e:1x1", 1, "default", [1, 1, 1], 15.75),
        ("v5litepod-8", "v5e:2x4", 8, "default", [2, 4, 1], 15.75),
        ("v5e:2x2", "v5e:2x2", 4, "default", [2, 2, 1], 15.75),
        ("v5e-16", "v5e:4x4", 16, "default", [2, 2, 1], 15.75),
        ("v4-8", "v4:2x2x1", 4, "megacore", [2, 2, 1], 30.75),
        ("v5p-8", "v5:2x2x1", 4, "megacore", [2, 2, 1], 95.74),
        ("v6e-4", "v6e:2x2", 4, "default", [2, 2, 1], 31.25),
        ("V6E-1", "v6e:1x1", 1, "default", [1, 1, 1], 31.25),
    ],
)
def test_tpu_names_become_the_topology_jax_compiles_for(name, topology, chips, config, bounds, memory):
    target = parse_target(name)
    assert target.is_tpu and target.topology == topology and target.chips == chips
    assert target.memory_bytes == int(memory * GiB)
    assert target.to_params() == {
        "platform": "tpu",
        "topology_name": topology,
        "chip_config_name": config,
        "chips_per_host_bounds": bounds,
        "num_slices": 1,
        "chips": chips,
        "name": name,
    }


def test_cpu_is_the_local_device():
    target = parse_target("cpu")
    assert not target.is_tpu and target.to_params() is None and target.memory_bytes is None


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("v5e-3", "no v5e slice of that size"),
        ("v4-3", "no v4 slice of that size"),  # v4 counts TensorCores, two a chip
        ("v9x-8", "v9x is not a TPU generation"),
        ("v5e:2x2x1", "a v5e topology is AxB chips"),
        ("a100", "is not a target"),
    ],
)
def test_a_name_of_no_known_machine_says_what_would_be(name, says):
    with pytest.raises(CompileTargetError, match=says):
        parse_target(name)


def _pci(root: Path, devices: dict[str, tuple[str, str]]) -> str:
    for slot, (vendor, device) in devices.items():
        folder = root / "bus" / "pci" / "devices" / slot
        folder.mkdir(parents=True)
        (folder / "vendor").write_text(vendor + "\n")
        (folder / "device").write_text(device + "\n")
    return str(root)


def test_the_local_tpu_is_read_from_the_pci_bus_without_opening_it(tmp_path):
    four = {f"0000:00:0{i}.0": ("0x1ae0", "0x0063") for i in range(4)}
    sysfs = _pci(tmp_path / "v5e", {**four, "0000:00:10.0": ("0x8086", "0x1234")})
    devfs = str(tmp_path / "dev")  # no chip devices: nothing narrows what the bus says
    target = local_target({}, sysfs, devfs)
    assert (target.name, target.topology, target.chips) == ("v5e-4", "v5e:2x2", 4)
    assert "/sys/bus/pci" in target.source
    v4 = _pci(tmp_path / "v4", {f"0000:00:0{i}.0": ("0x1ae0", "0x005e") for i in range(4)})
    assert local_target({}, v4, devfs).name == "v4-8"
    # what the machine states comes first; no TPU at all is the CPU
    assert local_target({"TPU_ACCELERATOR_TYPE": "v6e-8"}, sysfs, devfs).topology == "v6e:2x4"
    assert not local_target({}, str(tmp_path / "none"), devfs).is_tpu


def _chip_devices(root: Path, *names: str) -> str:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).touch()
    return str(root)


def test_a_machine_given_some_chips_of_its_host_compiles_for_those(tmp_path):
    # As on the lent TPU: a v5litepod-4 host (its type, its 4 chips on the PCI bus) whose
    # sandbox opens one chip (/dev/vfio/0); JAX there sees one device.
    four = {f"0000:00:0{i}.0": ("0x1ae0", "0x0063") for i in range(4)}
    sysfs = _pci(tmp_path / "sys", four)
    one = _chip_devices(tmp_path / "one", "vfio/0", "vfio/vfio")
    stated = {"TPU_ACCELERATOR_TYPE": "v5litepod-4", "TPU_HOST_BOUNDS": "1,1,1"}
    for environ in (stated, {}):
        target = local_target(environ, sysfs, one)
        assert (target.name, target.topology, target.chips) == ("v5e-1", "v5e:1x1", 1)
        assert "1 of its 4 chips open here" in target.source
    all_four = _chip_devices(tmp_path / "all", *(f"vfio/{i}" for i in range(4)))
    assert local_target(stated, sysfs, all_four).name == "v5litepod-4"
    v4 = _chip_devices(tmp_path / "v4", "accel0")  # v4 chips show as /dev/accelN
    assert local_target({"TPU_ACCELERATOR_TYPE": "v4-16"}, sysfs, v4).name == "v4-16"  # no 1-chip v4
    assert local_target({"TPU_ACCELERATOR_TYPE": "v5litepod-8"}, sysfs, v4).name == "v5e-1"
    assert local_target({**stated, "TPU_VISIBLE_CHIPS": "0"}, sysfs, all_four).name == "v5e-1"
    # one host of a multi-host slice compiles for the whole slice
    pod = {"TPU_ACCELERATOR_TYPE": "v5litepod-16", "TPU_HOST_BOUNDS": "2,2,1"}
    assert local_target(pod, sysfs, all_four).name == "v5litepod-16"


def test_the_target_given_wins_over_the_project_setting_which_wins_over_the_machine(tmp_path):
    sysfs = _pci(tmp_path, {"0000:00:04.0": ("0x1ae0", "0x0063")})
    assert choose_target("v6e-4", "v4-8", sysfs).name == "v6e-4"
    chosen = choose_target(None, "v4-8", sysfs)
    assert chosen.name == "v4-8" and chosen.source == "[tool.jax-lsp] target"
    assert choose_target(None, None, sysfs).name == "v5e-1"
