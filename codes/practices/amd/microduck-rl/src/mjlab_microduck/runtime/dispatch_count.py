"""Count the PyTorch operators code dispatches, and those that hand a value back to Python.

Problem: on a GPU every PyTorch operator is a kernel the CPU launches, and an operator whose
value Python needs (``.item()``, ``if tensor.any():``, ``nonzero``) is a host sync: the CPU
stops queueing work until the GPU has caught up. Neither shows on a CPU's clock, yet both are
the same on every backend, so a CPU can count them. Indexing with a boolean mask (``x[mask]``,
``x[mask] = v``) is a host read too: a GPU must count the mask's true entries before it can size
or place the result, which PyTorch does with ``nonzero``, yet a CPU dispatches no such operator,
so the mask is recognised by its dtype. They are counted at PyTorch's dispatcher
(``TorchDispatchMode``), per labelled part of the code; Warp's kernels (MuJoCo Warp's physics)
are not PyTorch operators and are not counted.

No-op: importing this module does nothing (it imports nothing from the package, so the
compatibility hooks can use it); counting happens only inside ``with DispatchCounter():``.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable
from typing import Any

HOST_READS = frozenset({
    "aten.is_nonzero.default",
    "aten._local_scalar_dense.default",
    "aten.item.default",
    "aten.nonzero.default",
})  # fmt: skip
"""Operators that hand a tensor's value to Python (or size their output by its values)."""

MASK_INDEXING = frozenset({
    "aten.index.Tensor",
    "aten.index_put.default",
    "aten.index_put_.default",
    "aten._index_put_impl_.default",
})  # fmt: skip
"""Operators that read their index tensors' values on the host when an index is a boolean mask."""

MASK_SIZED = frozenset({"aten.masked_select.default"})
"""Operators whose output is sized by a mask's values, whatever its dtype."""


def reads_host(operator: str, args: tuple[Any, ...]) -> bool:
    """Whether dispatching ``operator`` with ``args`` hands a value to the host on a GPU."""
    if operator in HOST_READS or operator in MASK_SIZED:
        return True
    if operator in MASK_INDEXING and len(args) > 1:
        import torch

        return any(
            isinstance(index, torch.Tensor) and index.dtype in (torch.bool, torch.uint8)
            for index in args[1]
            if index is not None
        )
    return False


def copies_to_device(operator: str, out: Any) -> bool:
    """Whether ``operator`` made a tensor of one or more entries from Python data
    (``torch.tensor([...])``, or a Python list used as an index): on a GPU that tensor is copied
    from host memory on every call, which a CUDA capture refuses. A single number
    (``buf[:] = 0.0``) is filled in on the device and does not count."""
    import torch

    made = operator.startswith("aten.lift_fresh")
    return made and isinstance(out, torch.Tensor) and out.dim() > 0


def reads_host_tensor(args: Any) -> bool:
    """Whether an operator's arguments put a tensor in host memory beside one on a device (a
    CPU scalar tensor in arithmetic on the GPU, a CPU index into a GPU tensor). PyTorch accepts
    that and reads the host tensor when the operator is launched, so a CUDA graph keeps the
    value it had at capture, while the plain call reads the current one."""
    import torch
    from torch.utils._pytree import tree_flatten

    devices = {leaf.device.type for leaf in tree_flatten(args)[0]
               if isinstance(leaf, torch.Tensor)}  # fmt: skip
    return "cpu" in devices and len(devices) > 1


OTHER = "other"
"""The label of what runs outside every labelled part."""


class DispatchCounter:
    """Operators and host reads per label, inside ``with counter:``.

    :meth:`wrap` labels a function: what it dispatches counts for its label, except what a
    labelled function called inside it dispatches (that counts for the inner label, as
    :class:`mjlab_microduck.jobs.bench.SectionTimer` counts time). :meth:`take` returns the
    counts since the last call, as ``{"ops/<label>": n, "reads/<label>": n}``.
    """

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()
        self._labels: list[str] = []
        self._mode: Any = None

    def wrap(self, label: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def labelled(*args: Any, **kwargs: Any) -> Any:
            self._labels.append(label)
            try:
                return fn(*args, **kwargs)
            finally:
                self._labels.pop()

        return labelled

    def count(self, operator: str, args: tuple[Any, ...] = ()) -> None:
        label = self._labels[-1] if self._labels else OTHER
        self.ops[label] += 1
        if reads_host(operator, args):
            self.reads[label] += 1

    def take(self) -> dict[str, float]:
        counts = {f"ops/{k}": float(v) for k, v in self.ops.items()}
        counts.update({f"reads/{k}": float(v) for k, v in self.reads.items()})
        self.ops.clear()
        self.reads.clear()
        return counts

    def __enter__(self) -> DispatchCounter:
        from torch.utils._python_dispatch import TorchDispatchMode

        counter = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
                counter.count(str(func), args)
                return func(*args, **(kwargs or {}))

        self._mode = Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        mode, self._mode = self._mode, None
        mode.__exit__(*exc)


def host_reads(run: Callable[[], Any]) -> int:
    """How many times ``run()`` hands a tensor's value to the host (:func:`reads_host`)."""
    with DispatchCounter() as counter:
        run()
    return sum(counter.reads.values())
