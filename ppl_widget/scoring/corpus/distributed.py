"""torch.distributed, as torchrun and ``accelerate launch`` set it up.

Nothing is launched or communicated by hand: the launcher sets ``WORLD_SIZE``,
``RANK``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``; this module joins the
process group through ``env://`` (NCCL when the ranks run on CUDA GPUs, gloo on CPU)
and offers the two collective steps a corpus run needs (barrier, broadcast of a small
object).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

#: How long a rank waits for the others at a barrier (ranks that finish their shard
#: early wait for the slowest one before the output is consolidated).
BARRIER_TIMEOUT = timedelta(hours=12)


@dataclass(frozen=True)
class Ranks:
    """Where this process sits: ``rank`` of ``world_size``, ``local_rank`` on its node."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    initialized_here: bool = False

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def shard(self, n: int) -> range:
        """This rank's documents among ``n``: every ``world_size``-th from ``rank``
        (round robin spreads long and short documents evenly)."""
        return range(self.rank, n, self.world_size)


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name} must be an integer, got "
                         f"{value!r}") from None


def device_for_rank(device: str, local_rank: int, world_size: int) -> str:
    """Each rank its own GPU: ``auto``/``cuda`` become ``cuda:LOCAL_RANK`` under a
    launcher; an explicit ``cuda:N`` or ``cpu`` is kept."""
    if world_size <= 1 or device not in ("auto", "cuda"):
        return device
    import torch

    if device == "auto" and not torch.cuda.is_available():
        return "cpu"
    if torch.cuda.is_available() and local_rank >= torch.cuda.device_count():
        raise ValueError(f"LOCAL_RANK {local_rank} has no GPU: this node has "
                         f"{torch.cuda.device_count()}; start at most that many processes "
                         "per node (--nproc-per-node)")
    return f"cuda:{local_rank}"


def init(device: str = "auto") -> tuple[Ranks, str]:
    """Join the process group when launched with ``WORLD_SIZE > 1`` (``env://``); returns
    this process's ranks and the device it should score on."""
    world = _env_int("WORLD_SIZE", 1)
    _env_int("RANK", 0)  # checked here; the process group reads it
    local = _env_int("LOCAL_RANK", 0)
    if world <= 1:
        return Ranks(), device
    import torch
    import torch.distributed as dist

    device = device_for_rank(device, local, world)
    on_cuda = device.startswith("cuda")
    if dist.is_initialized():  # the caller (or accelerate) already did it
        return Ranks(dist.get_rank(), dist.get_world_size(), local, False), device
    if on_cuda:
        torch.cuda.set_device(torch.device(device))
    backend = "nccl" if on_cuda else "gloo"
    kwargs: dict[str, Any] = {"backend": backend, "init_method": "env://",
                              "timeout": BARRIER_TIMEOUT}
    if on_cuda:
        kwargs["device_id"] = torch.device(device)
    dist.init_process_group(**kwargs)
    return Ranks(dist.get_rank(), dist.get_world_size(), local, True), device


def barrier(ranks: Ranks) -> None:
    if ranks.distributed:
        import torch.distributed as dist

        dist.barrier()


def broadcast(ranks: Ranks, obj: Any) -> Any:
    """Rank 0's ``obj`` on every rank (e.g. an error seen by rank 0 only)."""
    if not ranks.distributed:
        return obj
    import torch.distributed as dist

    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def all_gather(ranks: Ranks, obj: Any) -> list[Any]:
    """Every rank's ``obj``, in rank order."""
    if not ranks.distributed:
        return [obj]
    import torch.distributed as dist

    out: list[Any] = [None] * ranks.world_size
    dist.all_gather_object(out, obj)
    return out


def finish(ranks: Ranks) -> None:
    """Leave the process group if this module joined it."""
    if ranks.initialized_here:
        import torch.distributed as dist

        dist.destroy_process_group()
