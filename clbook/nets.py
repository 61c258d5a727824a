r"""Small encoders used by the chapters.

:class:`MLP` is a fully connected encoder :math:`z = W_L h(\cdots h(W_1 x))` (the paper's Eq. 28)
with an optional :math:`\ell_2` normalisation of the output, initialised from an explicit
CPU generator so that its weights do not depend on the device.

Used in Chapter 1 (and the Part I chapters that follow).
"""
from __future__ import annotations

import functools
import math

import torch
from torch import nn

from . import activations
from ._validate import check_choice, check_int
from .config import DTYPES, check_generator, defaults, randn, resolve_device

__all__ = ["MLP"]

# torch's modules for the registry's activations (clbook.activations): leaky ReLU with the registry's slope
_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "linear": nn.Identity,
                "leaky_relu": functools.partial(nn.LeakyReLU, activations.LEAKY_SLOPE)}
activations.supported(*_ACTIVATIONS)


class MLP(nn.Module):
    r"""A fully connected encoder.

    Parameters
    ----------
    sizes : sequence of int
        Layer widths ``[d_in, h_1, ..., d_out]`` (at least two entries, each >= 1).
    generator : torch.Generator
        CPU generator for the initial weights (He-style scale :math:`\sqrt{2/\text{fan-in}}`).
    activation : {"relu", "tanh", "linear", "leaky_relu"}
        Hidden nonlinearity :math:`h`.
    normalize : bool
        Whether to :math:`\ell_2`-normalise the output, :math:`\hat z = z/\|z\|_2`.
    bias : bool
        Whether the layers have biases.
    device, dtype : optional
        Where the weights live and their dtype (float64 or float32); default those of :func:`clbook.setup`.
        A CUDA device without a GPU is a ValueError.

    Notes
    -----
    Building the network draws only from ``generator``: torch's global random stream is left where it was.
    :meth:`forward` takes a finite floating-point tensor ``[n, d_in]`` on the model's device and of its dtype, and
    says which of these it is not (a TypeError or ValueError naming ``x``), instead of an error from inside torch.
    """

    def __init__(self, sizes, *, generator: torch.Generator, activation: str = "relu",
                 normalize: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        sizes = list(sizes)
        if len(sizes) < 2:
            raise ValueError(f"sizes must list at least an input and an output width; got sizes = {sizes}.")
        sizes = [check_int(f"sizes[{k}]", s, 1) for k, s in enumerate(sizes)]
        check_choice("activation", activation, _ACTIVATIONS)
        check_generator(generator)
        default_device, default_dtype = defaults()
        device = default_device if device is None else resolve_device(device)
        dtype = default_dtype if dtype is None else dtype
        if dtype not in DTYPES:
            raise ValueError(f"dtype must be torch.float64 or torch.float32; got dtype = {dtype!r}.")
        layers = []
        for k, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            # skip_init: no draw from torch's global stream (every weight is set from ``generator`` just below)
            linear = nn.utils.skip_init(nn.Linear, fan_in, fan_out, bias=bias, device=device, dtype=dtype)
            with torch.no_grad():
                linear.weight.copy_(randn(fan_out, fan_in, generator=generator, device=device, dtype=dtype)
                                    * math.sqrt(2.0 / fan_in))
                if bias:
                    linear.bias.copy_(0.1 * randn(fan_out, generator=generator, device=device, dtype=dtype))
            layers.append(linear)
            if k < len(sizes) - 2:
                layers.append(_ACTIVATIONS[activation]())
        self.body = nn.Sequential(*layers)
        self.normalize = bool(normalize)
        self.sizes = sizes

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The network's output for a batch ``x [n, sizes[0]]`` (checked: tensor, dtype, device, finite)."""
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"x must be a torch.Tensor; got {type(x).__name__} (convert it with clbook.to_device(x)).")
        if x.ndim != 2 or x.shape[1] != self.sizes[0]:
            raise ValueError(f"x must have shape [n, {self.sizes[0]}]; got {tuple(x.shape)}.")
        weight = self.body[0].weight
        if x.dtype != weight.dtype:
            raise TypeError(f"x must have the model's dtype {weight.dtype}; got {x.dtype} (convert it with "
                            f"x.to({weight.dtype}), or build the model with dtype={x.dtype} if it is floating point).")
        if x.device != weight.device:
            raise ValueError(f"x must be on the model's device {weight.device}; got {x.device} (move it with x.to(device)).")
        if not bool(torch.isfinite(x.detach()).all()):
            raise ValueError("x must contain only finite values; it has NaN or infinite entries.")
        z = self.body(x)
        return nn.functional.normalize(z, dim=1) if self.normalize else z

    def flat_grad(self) -> torch.Tensor:
        """All parameter gradients as one vector (zeros where a gradient is missing)."""
        return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in self.parameters()])
