"""Seeds, device and dtype: one policy for the whole book.

Every chapter starts with :func:`setup`. Random numbers are drawn on the CPU from an
explicit :class:`torch.Generator` and only then moved to the device, so that a chapter
draws the same samples on a laptop and on a GPU (``CLBOOK_DEVICE=cuda``). Only :func:`setup`
changes global state (seeds, thread count, default dtype, deterministic kernels); the draws
before any setup use the device policy and float64 and change nothing.

Used by every chapter.
"""
from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass

import numpy as np
import torch

from ._validate import check_choice, check_int

__all__ = ["Setup", "setup", "current", "generator", "stream", "randn", "rand", "randint", "to_device", "defaults", "draws"]

DTYPES = {torch.float64, torch.float32}


@dataclass(frozen=True)
class Setup:
    """The state :func:`setup` established."""

    seed: int
    device: torch.device
    dtype: torch.dtype
    threads: int
    started: float

    def __str__(self) -> str:
        return f"clbook: seed {self.seed}, {str(self.dtype).replace('torch.', '')}"


_current: Setup | None = None
_override: tuple[torch.device, torch.dtype] | None = None


def resolve_device(device) -> torch.device:
    """``device`` (``None``: ``CLBOOK_DEVICE``, else CUDA when available, else the CPU) as a torch device, checked."""
    if device is None:
        device = os.environ.get("CLBOOK_DEVICE") or ("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device must name a torch device such as 'cpu' or 'cuda'; got device = {device!r}.") from exc
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device = 'cuda' was requested (CLBOOK_DEVICE or argument) but torch sees no CUDA device.")
    return device


def setup(seed: int = 0, device=None, dtype: torch.dtype = torch.float64, *, threads: int | None = None) -> Setup:
    """Seed every generator, choose the device and the default dtype.

    Parameters
    ----------
    seed : int
        Seed for torch, numpy and :mod:`random` (``0 <= seed < 2**32``).
    device : str or torch.device, optional
        Where tensors live. Default: the ``CLBOOK_DEVICE`` environment variable, else CUDA
        when available, else the CPU.
    dtype : torch.dtype
        Default floating dtype; float64 for every theory check.
    threads : int, optional
        Torch CPU threads. Default: ``CLBOOK_THREADS`` or 1 (small linear algebra is much
        faster with one thread on a 2-core machine).

    Returns
    -------
    Setup
        The state in force, also available from :func:`current`.
    """
    global _current
    seed = check_int("seed", seed, 0, 2**32 - 1)
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {dtype!r}.")
    if threads is None:
        threads = int(os.environ.get("CLBOOK_THREADS", "1"))
    threads = check_int("threads", threads, 1, 256)
    dev = resolve_device(device)
    torch.set_num_threads(threads)
    torch.set_default_dtype(dtype)
    _deterministic(dev)
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)
    _current = Setup(seed=seed, device=dev, dtype=dtype, threads=threads, started=time.perf_counter())
    return _current


def _deterministic(device: torch.device) -> None:
    """Full-precision, deterministic kernels: float64 stays float64 and float32 is never TF32 on a GPU.

    ``CUBLAS_WORKSPACE_CONFIG`` must be set before cuBLAS starts for deterministic GPU matrix products; a kernel
    without a deterministic version warns instead of failing (``warn_only``), so the warning shows in the output.
    """
    if device.type == "cuda":
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    torch.set_float32_matmul_precision("highest")
    torch.use_deterministic_algorithms(True, warn_only=True)


def current() -> Setup:
    """The state of the last :func:`setup` call; a clear error if there was none (nothing is set up silently)."""
    if _current is None:
        raise RuntimeError("call clbook.setup(seed=...) first: it seeds the generators and chooses the device and dtype.")
    return _current


def defaults() -> tuple[torch.device, torch.dtype]:
    """The device and dtype of draws: those of :func:`setup`, or, before any setup, the device policy and float64.

    Reading them changes no global state (no seed, thread count or default dtype is set here).
    """
    if _override is not None:
        return _override
    if _current is not None:
        return _current.device, _current.dtype
    return resolve_device(None), torch.float64


class draws:
    """``with draws(device="cpu", dtype=torch.float64):`` the device and dtype of :func:`defaults` inside the block.

    For code that must compute the same numbers whatever :func:`setup` a caller made (a job of
    :mod:`clbook.experiments`): unlike :func:`setup` it changes no seed, thread count, default dtype or
    deterministic-kernel flag, and the previous policy is back after the block.
    """

    def __init__(self, device="cpu", dtype: torch.dtype = torch.float64):
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {dtype!r}.")
        self.policy = (resolve_device(device), dtype)

    def __enter__(self):
        global _override
        self._previous, _override = _override, self.policy
        return self

    def __exit__(self, *exc):
        global _override
        _override = self._previous
        return False


def generator(seed: int) -> torch.Generator:
    """A fresh CPU generator seeded with ``seed``; pass it to the draws below."""
    seed = check_int("seed", seed, 0, 2**63 - 1)
    return torch.Generator(device="cpu").manual_seed(seed)


def stream(seed: int, name: str, streams: dict[str, int]) -> torch.Generator:
    """The generator of stream ``name`` of run ``seed``: ``generator(streams[name] + seed)``.

    A module that draws several independent things per run (data, initial weights, batches) names its streams in a
    module-level dict of offsets, e.g. ``STREAMS = {"init": 10_000, "batches": 20_000}``, and asks for
    ``stream(seed, "init", STREAMS)``: the same numbers as a hand-written ``10_000 + seed``, with the offset named
    once (CONTRIBUTING.md, 'Where things go').
    """
    check_choice("name (the stream)", name, tuple(streams))
    return generator(streams[name] + check_int("seed", seed, 0))


def target_device_dtype(device, dtype):
    """The device and dtype a draw lands on: the arguments where given, else those of :func:`setup`."""
    default_device, default_dtype = defaults()
    if dtype is not None and dtype not in DTYPES:
        raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {dtype!r}.")
    return (default_device if device is None else resolve_device(device)), (default_dtype if dtype is None else dtype)


def check_generator(gen):
    """Raise unless ``gen`` is a CPU :class:`torch.Generator` (clbook draws on the CPU, then moves the result)."""
    if not isinstance(gen, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (see clbook.generator); got {type(gen).__name__}.")
    if gen.device.type != "cpu":
        raise ValueError("generator must live on the CPU: clbook draws on the CPU, then moves the result.")


def _shape(shape) -> tuple[int, ...]:
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    return tuple(check_int(f"shape[{k}]", s, 0) for k, s in enumerate(shape))


def randn(*shape, generator: torch.Generator, device=None, dtype=None) -> torch.Tensor:
    """Standard normal samples drawn on the CPU with ``generator``, then moved to ``device``."""
    check_generator(generator)
    dev, dt = target_device_dtype(device, dtype)
    return torch.randn(_shape(shape), generator=generator, dtype=torch.float64).to(device=dev, dtype=dt)


def rand(*shape, generator: torch.Generator, device=None, dtype=None) -> torch.Tensor:
    """Uniform [0, 1) samples drawn on the CPU with ``generator``, then moved to ``device``."""
    check_generator(generator)
    dev, dt = target_device_dtype(device, dtype)
    return torch.rand(_shape(shape), generator=generator, dtype=torch.float64).to(device=dev, dtype=dt)


def randint(low: int, high: int, shape, *, generator: torch.Generator, device=None) -> torch.Tensor:
    """Integers in ``[low, high)`` drawn on the CPU with ``generator``, then moved to ``device``."""
    check_generator(generator)
    low, high = check_int("low", low), check_int("high", high)
    if high <= low:
        raise ValueError(f"need low < high; got low = {low}, high = {high}.")
    dev, _ = target_device_dtype(device, None)
    return torch.randint(low, high, _shape((shape,) if isinstance(shape, int) else shape), generator=generator).to(dev)


def to_device(x, device=None, dtype=None) -> torch.Tensor:
    """Move an array or tensor (or a list of numbers) to the current device and dtype.

    Raises a TypeError naming ``x`` for input that is not real numbers (strings, objects, complex values).
    """
    dev, dt = target_device_dtype(device, dtype)
    if not isinstance(x, torch.Tensor):
        try:
            kind = np.asarray(x).dtype.kind
        except (TypeError, ValueError) as exc:  # ragged lists and the like
            raise TypeError(f"x must be a tensor, an array or a (nested) list of real numbers; got {type(x).__name__} "
                            f"({exc}).") from exc
        if kind not in "biuf":
            raise TypeError(f"x must hold real numbers; got {type(x).__name__} {x!r:.60} (numpy dtype kind {kind!r}).")
    elif x.is_complex():
        raise TypeError(f"x must be real; got a complex tensor of dtype {x.dtype}.")
    return torch.as_tensor(x).to(device=dev, dtype=dt)
