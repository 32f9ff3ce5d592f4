"""dispatch_count: PyTorch operators and host reads per labelled part, counted on a CPU."""

from __future__ import annotations

import torch

from mjlab_microduck.runtime.dispatch_count import (
    OTHER,
    DispatchCounter,
    host_reads,
    reads_host_tensor,
)


def test_counts_operators_and_host_reads_per_label_innermost_first():
    counter = DispatchCounter()
    x = torch.arange(6.0)

    def inner() -> None:
        torch.add(x, 1)  # 1 op
        x.sum().item()  # sum + _local_scalar_dense: 2 ops, 1 read

    def outer() -> None:
        torch.mul(x, 2)  # 1 op for "outer"
        labelled_inner()
        if (x > 3).any():  # gt, any, is_nonzero: 3 ops, 1 read for "outer"
            torch.nonzero(x)  # 1 op, 1 read

    labelled_inner = counter.wrap("inner", inner)
    labelled_outer = counter.wrap("outer", outer)
    with counter:
        labelled_outer()
        torch.neg(x)  # outside every label
    assert counter.take() == {
        "ops/outer": 5.0, "ops/inner": 3.0, f"ops/{OTHER}": 1.0,
        "reads/outer": 2.0, "reads/inner": 1.0,
    }  # fmt: skip
    assert counter.take() == {}  # take() starts the next count


def test_nothing_is_counted_outside_the_with_block():
    counter = DispatchCounter()
    labelled = counter.wrap("part", lambda: torch.ones(3).sum().item())
    labelled()
    with counter:
        pass
    labelled()
    assert counter.take() == {}


def test_host_reads_counts_only_the_reads():
    x = torch.ones(4)
    assert host_reads(lambda: x + x) == 0
    assert host_reads(lambda: (x.sum().item(), bool(x.all()), x.nonzero())) == 3


def test_boolean_mask_indexing_is_a_host_read_and_integer_indexing_is_not():
    x = torch.arange(6.0)
    mask = x > 2
    ids = torch.tensor([0, 2])
    assert host_reads(lambda: x[mask]) == 1
    assert host_reads(lambda: x.clone().__setitem__(mask, 0.0)) == 1
    assert host_reads(lambda: torch.masked_select(x, mask)) == 1
    assert host_reads(lambda: (x[ids], x.clone().index_put_((ids,), torch.zeros(2)))) == 0
    assert host_reads(lambda: torch.where(mask, x, 0.0)) == 0


def test_a_host_tensor_is_seen_beside_device_tensors_wherever_it_sits_in_the_arguments():
    host, device = torch.zeros(2, dtype=torch.long), torch.zeros(2, device="meta")
    assert reads_host_tensor(((device, host), {}))
    assert reads_host_tensor(((device, [None, host]), {}))  # an index list
    assert reads_host_tensor(((device,), {"other": host}))
    assert not reads_host_tensor(((host, [host]), {}))
    assert not reads_host_tensor(((device, 2.0), {}))
