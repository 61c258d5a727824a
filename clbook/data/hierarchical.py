r"""The hierarchical token generator of Tian (2023), Sec. 5 (Fig. 3), batched over independent worlds.

A *world* is one draw of the generating structure: each of :math:`K` receptive fields (positions) gets
:math:`P` candidate tokens out of :math:`d`; each of :math:`G` generators fixes a candidate token at
``pattern_len`` random positions and leaves the others as wildcards ``*``. A sample picks a generator
uniformly and fills every wildcard with a uniformly random token; its positive partner is another
sample of the same generator, with ``aug_degree`` of its wildcards redrawn. Token :math:`a` is embedded
as :math:`\mathbf u_a = \mathrm{mag}_a\mathbf e_a` (orthogonal embeddings, the embedding dimension equals
the number of tokens), with magnitudes :math:`1/\zeta` for the first half of the tokens and :math:`\zeta`
for the second (App. E.2's non-uniformity; :math:`\zeta = 1` is uniform).

The construction follows the authors' code (``luckmatters/ssl/real-dataset/bn_gen_utils.py``), where
the paper is silent; every world, and every batch, is drawn with an explicit ``torch.Generator``.
Several worlds (one per seed) are stacked on a leading axis so that many runs train as one batched
computation. The matching scores :math:`\bar\chi_\pm` (Eq. 16) are in :func:`matching_scores`.

Used in Chapter 10 and by :mod:`clbook.experiments.hierarchical`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .._validate import check_int, check_positive, check_tensor

__all__ = ["TokenWorlds", "make_worlds", "sample_tokens", "sample_views", "matching_scores"]


@dataclass(frozen=True)
class TokenWorlds:
    r"""``S`` independent worlds of the hierarchical generator.

    Attributes
    ----------
    candidates : torch.Tensor, shape=[S, K, P], long
        The candidate tokens :math:`R_k^{\mathrm g}` of each position.
    patterns : torch.Tensor, shape=[S, G, K], long
        The generators; ``-1`` is a wildcard.
    magnitudes : torch.Tensor, shape=[d]
        :math:`\|\mathbf u_a\|` for each token.
    seeds : tuple of int
        The seed of each world.
    """

    candidates: torch.Tensor
    patterns: torch.Tensor
    magnitudes: torch.Tensor
    seeds: tuple[int, ...]

    @property
    def num_tokens(self) -> int:
        """The number of tokens (rows of ``magnitudes``)."""
        return int(self.magnitudes.shape[0])

    @property
    def num_positions(self) -> int:
        """The number of positions per pattern (last axis of ``patterns``)."""
        return int(self.patterns.shape[2])

    def select(self, index: int) -> "TokenWorlds":
        """The single world ``index`` (kept as a stack of one)."""
        index = check_int("index", index, 0, len(self.seeds) - 1)
        return TokenWorlds(self.candidates[index:index + 1], self.patterns[index:index + 1], self.magnitudes, self.seeds[index:index + 1])

    def used_tokens(self) -> torch.Tensor:
        """``[S, K, d]`` bool: token ``a`` is fixed at position ``k`` by at least one generator.

        These are the tokens the authors' metric scores (``counts[k]``); a candidate that no generator
        happens to use cannot be learned and is not scored.
        """
        S, G, K = self.patterns.shape
        used = torch.zeros(S, K, self.num_tokens + 1, dtype=torch.bool)
        index = torch.where(self.patterns < 0, self.num_tokens, self.patterns).transpose(1, 2)  # [S, K, G]
        used.scatter_(2, index, True)
        return used[..., : self.num_tokens]


def make_worlds(seeds, *, num_tokens: int = 20, num_positions: int = 10, candidates_per_position: int = 5,
                num_generators: int = 40, pattern_len: int = 5, zeta: float = 1.0) -> TokenWorlds:
    r"""Draw one world per seed (Tian 2023, Sec. 5; defaults: :math:`d = 20`, :math:`K = 10`, :math:`P = 5`, :math:`G = 40`).

    Parameters
    ----------
    seeds : sequence of int
        One world per seed, each drawn with ``clbook.generator(seed)``.
    num_tokens, num_positions, candidates_per_position, num_generators, pattern_len : int
        :math:`d`, :math:`K`, :math:`P \le d`, :math:`G`, and the number of fixed positions per generator (:math:`\le K`).
    zeta : float
        Non-uniformity :math:`\zeta > 0` of the token magnitudes (1 = uniform).
    """
    seeds = tuple(check_int("seeds[k]", s, 0) for s in seeds)
    if not seeds:
        raise ValueError("seeds must name at least one seed.")
    d = check_int("num_tokens", num_tokens, 1)
    K = check_int("num_positions", num_positions, 1)
    P = check_int("candidates_per_position", candidates_per_position, 1, d)
    G = check_int("num_generators", num_generators, 1)
    L = check_int("pattern_len", pattern_len, 1, K)
    zeta = check_positive("zeta", zeta)
    candidates, patterns = [], []
    for seed in seeds:
        gen = torch.Generator().manual_seed(seed)  # clbook.generator(seed)
        cand = torch.stack([torch.randperm(d, generator=gen)[:P] for _ in range(K)])  # [K, P]
        pat = torch.full((G, K), -1, dtype=torch.long)
        for g in range(G):
            where = torch.randperm(K, generator=gen)[:L]
            choice = torch.randint(P, (L,), generator=gen)
            pat[g, where] = cand[where, choice]
        candidates.append(cand)
        patterns.append(pat)
    magnitudes = torch.ones(d, dtype=torch.float64)
    magnitudes[: d // 2] /= zeta
    magnitudes[d // 2:] *= zeta
    return TokenWorlds(torch.stack(candidates), torch.stack(patterns), magnitudes, seeds)


def sample_tokens(worlds: TokenWorlds, n: int, *, generator: torch.Generator,
                  aug_degree: int = 5) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""Token ids of a batch of positive pairs from every world: ``tokens1, tokens2`` ``[S, n, K]`` and the generator index ``[S, n]``.

    The second view redraws ``aug_degree`` randomly chosen wildcards of the first (all of them when there are fewer).
    Drawn on the CPU with ``generator`` (``n >= 1``, ``aug_degree >= 0``); the ids are ``torch.long`` on the CPU.
    """
    if not isinstance(worlds, TokenWorlds):
        raise TypeError(f"worlds must be a TokenWorlds (see make_worlds); got {type(worlds).__name__}.")
    n = check_int("n", n, 1)
    aug_degree = check_int("aug_degree", aug_degree, 0)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator; got {type(generator).__name__}.")
    S, G, K = worlds.patterns.shape
    d = worlds.num_tokens
    which = torch.randint(G, (S, n), generator=generator)
    pattern = torch.gather(worlds.patterns, 1, which.unsqueeze(-1).expand(S, n, K))  # [S, n, K]
    wild = pattern < 0
    tokens1 = torch.where(wild, torch.randint(d, (S, n, K), generator=generator), pattern)
    # Redraw `aug_degree` wildcards chosen uniformly: rank the wildcards by a random key (float32 whatever torch's
    # default dtype, so that the draws do not depend on global state).
    key = torch.where(wild, torch.rand(S, n, K, generator=generator, dtype=torch.float32), torch.full((S, n, K), 2.0, dtype=torch.float32))
    rank = key.argsort(dim=-1).argsort(dim=-1)
    redraw = wild & (rank < aug_degree)
    tokens2 = torch.where(redraw, torch.randint(d, (S, n, K), generator=generator), tokens1)
    return tokens1, tokens2, which


def sample_views(worlds: TokenWorlds, n: int, *, generator: torch.Generator, aug_degree: int = 5,
                 dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r"""A batch of positive pairs as embeddings.

    ``x1, x2`` ``[S, n, K, d]`` (:math:`\mathbf x = [\mathbf u_{a_1}; \dots; \mathbf u_{a_K}]`) and the generator index
    ``[S, n]``; see :func:`sample_tokens`.
    """
    tokens1, tokens2, which = sample_tokens(worlds, n, generator=generator, aug_degree=aug_degree)
    mags = worlds.magnitudes.to(dtype)
    d = worlds.num_tokens
    embed = lambda t: torch.nn.functional.one_hot(t, d).to(dtype) * mags  # noqa: E731
    return embed(tokens1), embed(tokens2), which


def matching_scores(weights: torch.Tensor, used: torch.Tensor, *, absolute: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The matching scores :math:`\bar\chi_+` and :math:`\bar\chi_-` of Tian (2023), Eq. 16, as the authors' code computes them.

    .. math::

        \chi_+(R_k) = \operatorname*{mean}_{a\ \text{used at}\ k}\ \max_m
        \frac{w_{km}[a]}{\|\mathbf w_{km}\| + \epsilon_k},\qquad
        \bar\chi_+ = \operatorname*{mean}_k \chi_+(R_k),

    and :math:`\chi_-` the same over the tokens not used at :math:`k` (the mean there is over :math:`d - P`
    tokens, where the paper's formula divides by :math:`P`, a typo). :math:`\epsilon_k = \max(\max|W_k|/1000, 10^{-6})`
    as in the code. With ``absolute=True`` (linear networks, whose loss is even in each filter) :math:`|w_{km}[a]|` is used.
    The embeddings are :math:`\mathrm{mag}_a\mathbf e_a`, so the cosine with :math:`\mathbf u_a` is the :math:`a`-th coordinate.

    Parameters
    ----------
    weights : torch.Tensor, shape=[..., K, M, d]
        Lower-layer filters :math:`\mathbf w_{km}`; leading axes (runs) are kept.
    used : torch.Tensor, shape=[..., K, d], bool
        Tokens scored at each position (:meth:`TokenWorlds.used_tokens`), broadcast against ``weights``.

    Returns
    -------
    chi_plus, chi_minus : torch.Tensor, shape=[...]
    """
    weights = check_tensor("weights", weights)
    if weights.ndim < 3:
        raise ValueError(f"weights must have shape [..., K, M, d]; got {tuple(weights.shape)}.")
    if not isinstance(used, torch.Tensor) or used.dtype != torch.bool:
        raise TypeError("used must be a bool tensor of shape [..., K, d].")
    if used.shape[-2:] != weights.shape[-3:-2] + weights.shape[-1:]:
        raise ValueError(f"used must have shape [..., K, d] = [..., {weights.shape[-3]}, {weights.shape[-1]}] to match weights; "
                         f"got {tuple(used.shape)}.")
    w = weights.detach().double()
    used = used.to(w.device)
    scale = w.abs().amax(dim=(-2, -1), keepdim=True).div(1000).clamp_min(1e-6)
    ratio = w / (w.norm(dim=-1, keepdim=True) + scale)
    if absolute:
        ratio = ratio.abs()
    best = ratio.amax(dim=-2)  # [..., K, d]
    used = used.expand_as(best)
    plus = (best * used).sum(-1) / used.sum(-1).clamp_min(1)
    minus = (best * ~used).sum(-1) / (~used).sum(-1).clamp_min(1)
    return plus.mean(-1), minus.mean(-1)
