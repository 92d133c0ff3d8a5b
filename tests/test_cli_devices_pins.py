"""What :func:`longred_bench.cli.devices.check_device` takes and refuses, pinned on any machine
(the CUDA devices torch sees stood in for): a value that is no device name, a CUDA index past
the devices seen, ``cuda`` with no index, and a plan for another machine, which checks the name
alone."""

from __future__ import annotations

import pytest

from longred_bench.cli.devices import check_device
from longred_bench.errors import UserError


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Torch sees two CUDA devices."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """Torch sees no CUDA device, though it may count one."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)


def test_a_value_that_is_no_string_is_no_device_name() -> None:
    """A YAML number (``device: 0``) is refused as no device name, under the flag given."""
    with pytest.raises(UserError, match=r"^pairs p: settings.device 0 is not a device name: use "
                                        r"cpu, cuda or cuda:N$"):  # fmt: skip
        check_device(0, "pairs p: settings.device")  # type: ignore[arg-type]


def test_cuda_indices_are_checked_against_the_devices_torch_sees(two_gpus) -> None:
    """``cuda`` and each index below the count pass; the first past it is refused, naming the
    range seen."""
    for device in ("cuda", "cuda:0", "cuda:1"):
        check_device(device)
    with pytest.raises(UserError, match=r"^--device cuda:2: torch sees 2 CUDA device\(s\) "
                                        r"\(cuda:0 to cuda:1\)$"):  # fmt: skip
        check_device("cuda:2")


def test_no_cuda_device_where_torch_is_without_cuda(no_gpu) -> None:
    """Where CUDA is not available the devices torch counts are not asked: none is seen, and
    the message gives the way to run on the CPU that the caller names."""
    with pytest.raises(UserError, match=r"sees no CUDA device here; use --set device=cpu, or "):
        check_device("cuda:0", "train: device", "--set device=cpu")


def test_a_plan_for_another_machine_checks_the_name_alone(no_gpu) -> None:
    """``here=False`` takes a CUDA device this machine lacks, and still refuses a bad name."""
    check_device("cuda:3", here=False)
    with pytest.raises(UserError, match="'gpu' is not a device torch knows"):
        check_device("gpu", here=False)
