"""clbook.data.modes: Assumption-1 batches (Tian 2022, α-CL, Sec. 5), their violations, bad input."""
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import clbook
from clbook.data import modes


def test_clean_batch_satisfies_assumption1():
    b = modes.orthogonal_modes(40, modes=5, generator=clbook.generator(0), gamma_range=(0.2, 2.0))
    assert b.x1.shape == (40, 5) and b.labels.dtype == torch.int64
    assert set(b.labels.tolist()) == set(range(5))
    v = modes.assumption1_violations(b.x1, b.x2)
    assert v["negative"] == 0.0 and v["multi_mode"] == 0.0 and v["not_rescaled"] < 1e-15
    torch.testing.assert_close(b.x2, b.gamma.unsqueeze(1) * b.x1, rtol=0, atol=0)
    torch.testing.assert_close(b.x1[torch.arange(40), b.labels], b.amplitudes, rtol=0, atol=0)
    assert bool(((b.gamma >= 0.2) & (b.gamma <= 2.0)).all())
    assert not bool(b.mixed.any())


def test_amplitudes_decrease_with_mode_and_dim_pads_with_zeros():
    b = modes.orthogonal_modes(200, modes=3, generator=clbook.generator(1), dim=6, jitter=0.0, amplitude_range=(3.0, 1.0))
    assert b.x1.shape == (200, 6) and float(b.x1[:, 3:].abs().max()) == 0.0
    for m, a in enumerate((3.0, 2.0, 1.0)):
        assert torch.allclose(b.amplitudes[b.labels == m], torch.tensor(a, dtype=torch.float64))


def test_mix_fraction_breaks_only_one_hotness():
    b = modes.orthogonal_modes(400, modes=4, generator=clbook.generator(2), mix_fraction=0.3)
    v = modes.assumption1_violations(b.x1, b.x2)
    assert v["negative"] == 0.0 and v["not_rescaled"] < 1e-15
    assert 0.2 < v["multi_mode"] < 0.4
    assert torch.equal((b.x1 > 0).sum(dim=1) > 1, b.mixed)


def test_violations_detect_negative_and_non_rescaled_views():
    b = modes.orthogonal_modes(10, modes=3, generator=clbook.generator(3))
    x1 = b.x1.clone()
    x1[0, 0] = -1.0
    assert modes.assumption1_violations(x1, b.x2)["negative"] == 1.0
    x2 = b.x2.clone()
    x2[1] = x2[1].flip(0) + 0.5
    assert modes.assumption1_violations(b.x1, x2)["not_rescaled"] > 0.1
    assert modes.assumption1_violations(b.x1, -b.x2)["not_rescaled"] >= 1.0


@settings(max_examples=25, deadline=None)
@given(n=st.integers(8, 60), m=st.integers(1, 8), seed=st.integers(0, 10_000),
       lo=st.floats(0.01, 1.0), width=st.floats(0.0, 3.0))
def test_property_every_clean_draw_satisfies_assumption1(n, m, seed, lo, width):
    b = modes.orthogonal_modes(n, modes=m, generator=clbook.generator(seed), gamma_range=(lo, lo + width))
    v = modes.assumption1_violations(b.x1, b.x2)
    assert v["negative"] == 0.0 and v["multi_mode"] == 0.0 and v["not_rescaled"] < 1e-14
    assert set(b.labels.tolist()) == set(range(m))


def test_same_seed_same_batch():
    a = modes.orthogonal_modes(20, modes=4, generator=clbook.generator(9))
    b = modes.orthogonal_modes(20, modes=4, generator=clbook.generator(9))
    assert torch.equal(a.x1, b.x1) and torch.equal(a.x2, b.x2)


@pytest.mark.parametrize("kwargs, match", [
    ({"n": 10, "modes": 0}, "modes"),
    ({"n": 3, "modes": 5}, "n"),
    ({"n": 10, "modes": 3, "gamma_range": (2.0, 1.0)}, "gamma_range"),
    ({"n": 10, "modes": 3, "gamma_range": (0.0, 1.0)}, "gamma_range"),
    ({"n": 10, "modes": 1, "mix_fraction": 0.5}, "mix_fraction"),
    ({"n": 10, "modes": 3, "mix_fraction": 1.5}, "mix_fraction"),
    ({"n": 10, "modes": 3, "dim": 2}, "dim"),
    ({"n": 10, "modes": 3, "jitter": -0.1}, "jitter"),
])
def test_bad_arguments_raise(kwargs, match):
    n = kwargs.pop("n")
    with pytest.raises(ValueError, match=match):
        modes.orthogonal_modes(n, generator=clbook.generator(0), **kwargs)


def test_bad_generator_and_pair():
    with pytest.raises(TypeError, match="generator"):
        modes.orthogonal_modes(10, modes=2, generator=0)
    with pytest.raises(ValueError):
        modes.assumption1_violations(torch.zeros(4, 3, dtype=torch.float64), torch.zeros(4, 2, dtype=torch.float64))
