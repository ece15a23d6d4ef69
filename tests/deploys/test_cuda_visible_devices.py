"""CUDA_VISIBLE_DEVICES read the way CUDA reads it, by GPU-clean and by the unit's wait.

The oracle is tests/doubles/cuda_visible.py, a model written from the measurements alone
(docs/architecture.md, "Operations"); the product's reading is `linting.cuda`. GPU-clean
must check at least every GPU CUDA would use, and every GPU where the model cannot tell;
so must the rendered wait's `nvidia-smi -i`.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hostops.channel.base import GpuInfo
from hostops.gpu_clean import needed_gpus
from linting.cuda import nvidia_smi_ids, read_visible_devices
from tests.doubles import gpu_state, nvidia_smi_double
from tests.doubles.cuda_visible import UNKNOWN, cuda_gpus, entry_index

UUID0 = "GPU-48825cad-9cc0-19ee-ff24-a69383065aa4"


def host(count: int, *, models: tuple[str, ...] | None = None) -> list[GpuInfo]:
    """`count` idle GPUs with the double's UUIDs (GPU 0 of a one-GPU host: UUID0)."""
    config = gpu_state.GpuConfig(gpu_count=count)
    uuids = [UUID0] if count == 1 else [config.uuid(i) for i in range(count)]
    names = models or ("NVIDIA H200",) * count
    return [GpuInfo(i, names[i], uuids[i], 0, 143771) for i in range(count)]


def checked(gpus: list[GpuInfo], value: str | None, order: str | None = None) -> list[int]:
    return [g.index for g in needed_gpus(gpus, value, order)[0]]


# The examples measured on a one-GPU host (H200, driver 580): value → GPUs CUDA used.
ONE_GPU = {
    **dict.fromkeys(["0", "00", "000", " 0", "0 ", "+0", "0a", "0x1", "0.5", "0-1", "0;1"], (0,)),
    **dict.fromkeys(["00,1", "0,a", "GPU-48825cad", "-0", "\t0", " +0", "0,5,0"], (0,)),
    **dict.fromkeys(["0,", "0,,0", "4294967296", "GPU-48825CAD", "GPU-4"], (0,)),
    **dict.fromkeys(["01", "1a", "08", "1,0", "0,0", "0,00", "-1", "", "GPU-"], ()),
    **dict.fromkeys(["+ 0", "+", ",0", "gpu-48825cad", " GPU-48825cad", "GPU-48825cadx"], ()),
}


@pytest.mark.parametrize(("value", "gpus"), sorted(ONE_GPU.items()))
def test_the_model_gives_what_was_measured_on_one_gpu(value: str, gpus: tuple[int, ...]) -> None:
    assert cuda_gpus(value, [UUID0]) == gpus


@pytest.mark.parametrize(("value", "gpus"), sorted(ONE_GPU.items()))
def test_gpu_clean_checks_exactly_the_measured_gpus_where_they_can_be_mapped(
    value: str, gpus: tuple[int, ...]
) -> None:
    if value in ("4294967296", "GPU-48825cadx"):  # beyond 32 bits; a UUID it cannot map
        assert checked(host(1), value) == [0]
        return
    assert checked(host(1), value) == list(gpus)


def test_leading_zeros_are_the_gpu_cuda_reads_not_none() -> None:
    """The bug: GPU-clean found no GPU for `01` and called the host clean; CUDA uses GPU 1."""
    eight = host(8)
    assert checked(eight, "01") == [1]
    assert checked(eight, "00,01") == [0, 1]
    assert checked(eight, "1a") == [1]
    assert checked(eight, "1,0") == [1, 0]
    assert checked(eight, "08") == []  # GPU 8: an 8-GPU host has 0-7
    assert checked(eight, None) == list(range(8))


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("MIG-48825cad", "“MIG-48825cad” names a MIG device"),
        ("0,MIG-GPU-48825cad/1/0", "names a MIG device"),
        ("GPU-deadbeef", "“GPU-deadbeef” matches no GPU of this host"),
        ("99999999999", "beyond 32 bits"),
        ("GPU-48825cad,0", "GPU 0 is named twice, once by UUID"),
    ],
)
def test_what_cannot_be_mapped_checks_every_gpu_and_says_why(value: str, why: str) -> None:
    gpus, said = needed_gpus(host(1), value)
    assert [g.index for g in gpus] == [0]
    assert why in said and said.endswith("checking every GPU")


def test_mixed_gpu_models_check_every_gpu_unless_cuda_orders_by_pci_bus() -> None:
    mixed = host(2, models=("NVIDIA H200", "NVIDIA A100 80GB PCIe"))
    gpus, why = needed_gpus(mixed, "1")
    assert [g.index for g in gpus] == [0, 1] and "CUDA_DEVICE_ORDER" in why
    assert checked(mixed, "1", "PCI_BUS_ID") == [1]
    assert checked(mixed, f"{mixed[1].uuid[:12]}") == [1]  # a UUID needs no order


def test_the_step_log_names_the_gpus_and_where_cuda_stopped() -> None:
    assert needed_gpus(host(8), "2,3")[1] == "CUDA_VISIBLE_DEVICES='2,3' selects GPUs 2,3"
    assert "CUDA stops reading at “a”" in needed_gpus(host(8), "0,a,1")[1]
    assert "no GPU 9 (8 GPUs)" in needed_gpus(host(8), "0,9,1")[1]
    assert "makes no GPU visible" in needed_gpus(host(8), "3,03")[1]


# -- for any string --------------------------------------------------------------------

PIECES = ["0", "1", "2", "7", "8", "01", "00", " ", "\t", "+", "-", "a", "x", ".", ";"]
PIECES += ["GPU-", "MIG-", "4294967296", "2147483648", ","]


@st.composite
def values(draw: st.DrawFn, uuids: list[str]) -> str:
    """Strings built from the pieces CUDA's reading turns on, UUID prefixes of the host,
    and arbitrary text."""
    prefixes = [u[: draw(st.integers(5, len(u)))] for u in uuids] or ["GPU-0"]
    piece = st.sampled_from(PIECES) | st.sampled_from(prefixes) | st.text(max_size=3)
    return "".join(draw(st.lists(piece, max_size=8)))


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[GpuInfo], str | None]:
    gpus = host(draw(st.integers(0, 8)))
    value = draw(st.none() | values([g.uuid for g in gpus]))
    return gpus, value


@settings(max_examples=600, deadline=None)
@given(cases())
def test_gpu_clean_checks_every_gpu_cuda_would_use(case: tuple[list[GpuInfo], str | None]) -> None:
    gpus, value = case
    expected = cuda_gpus(value, [g.uuid for g in gpus])
    got = checked(gpus, value)
    if expected == UNKNOWN:
        assert got == [g.index for g in gpus], "unknown to the model: every GPU"
    else:
        assert set(expected) <= set(got)


@settings(max_examples=600, deadline=None)
@given(st.integers(1, 8).flatmap(lambda n: st.tuples(st.just(n), values(_uuids(n)))))
def test_the_waits_nvidia_smi_ids_cover_every_gpu_cuda_would_use(case: tuple[int, str]) -> None:
    """`nvidia-smi -i IDS` as the double answers it (tests/test_doubles.py holds it to
    real nvidia-smi) covers what CUDA uses; no `-i`: every GPU."""
    count, value = case
    uuids = _uuids(count)
    ids = nvidia_smi_ids(read_visible_devices(value)).ids
    if ids is None:
        return  # no `-i`: every GPU
    looked_at = nvidia_smi_double.select_gpus(gpu_state.GpuConfig(gpu_count=count), ids)
    assert isinstance(looked_at, list)
    expected = cuda_gpus(value, uuids)
    if expected == UNKNOWN:  # then every GPU the value names, whatever CUDA picks of them
        expected = _named(value, uuids)
        assert expected != UNKNOWN, "unknown to the model: the wait must check every GPU"
    assert set(expected) <= set(looked_at)


def _uuids(count: int) -> list[str]:
    config = gpu_state.GpuConfig(gpu_count=count)
    return [config.uuid(i) for i in range(count)]


def _named(value: str, uuids: list[str]) -> tuple[int, ...] | str:
    """Every GPU of the host the entries name up to where CUDA stops reading."""
    named: list[int] = []
    for entry in value.split(","):
        index = entry_index(entry, uuids)
        if index == UNKNOWN:
            return UNKNOWN
        assert isinstance(index, int)
        if index < 0:
            break
        named.append(index)
    return tuple(i for i in named if i < len(uuids))
