"""clbook.data.hierarchical and clbook.experiments.hierarchical: the Sec. 5 generator, Eq. 16, batched training."""
import pytest
import torch

from clbook.data import hierarchical as hg
from clbook.experiments import hierarchical as hx


@pytest.fixture(scope="module")
def worlds():
    return hg.make_worlds([1, 2, 3], candidates_per_position=3, zeta=2.0)


def test_world_structure(worlds):
    S, G, K = worlds.patterns.shape
    assert (S, G, K) == (3, 40, 10) and worlds.candidates.shape == (3, 10, 3)
    assert torch.all((worlds.patterns >= 0).sum(-1) == 5), "each generator fixes pattern_len positions"
    for s in range(S):
        for k in range(K):
            fixed = worlds.patterns[s, :, k]
            fixed = fixed[fixed >= 0]
            assert set(fixed.tolist()) <= set(worlds.candidates[s, k].tolist()), "fixed tokens come from R_k^g"
            assert len(set(worlds.candidates[s, k].tolist())) == 3
    used = worlds.used_tokens()
    assert used.shape == (3, 10, 20) and torch.all(used.sum(-1) <= 3)
    assert torch.allclose(worlds.magnitudes, torch.tensor([0.5] * 10 + [2.0] * 10, dtype=torch.float64))


def test_same_seed_same_world():
    a, b = hg.make_worlds([7]), hg.make_worlds([7])
    assert torch.equal(a.patterns, b.patterns) and torch.equal(a.candidates, b.candidates)
    assert not torch.equal(a.patterns, hg.make_worlds([8]).patterns)


def test_views_follow_their_generator(worlds):
    t1, t2, which = hg.sample_tokens(worlds, 64, generator=torch.Generator().manual_seed(0))
    pattern = torch.gather(worlds.patterns, 1, which.unsqueeze(-1).expand(3, 64, 10))
    fixed = pattern >= 0
    assert torch.equal(t1[fixed], pattern[fixed]) and torch.equal(t2[fixed], pattern[fixed])
    changed = t1 != t2
    assert not torch.any(changed & fixed), "augmentation only redraws wildcards"
    assert changed.float().mean() > 0.3, "with 5 wildcards redrawn from 20 tokens, most change"
    x1, x2, _ = hg.sample_views(worlds, 64, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.equal(x1.argmax(-1), t1) and torch.allclose(x1.abs().sum(-1), worlds.magnitudes[t1])


def test_aug_degree_zero_gives_identical_views(worlds):
    t1, t2, _ = hg.sample_tokens(worlds, 32, generator=torch.Generator().manual_seed(1), aug_degree=0)
    assert torch.equal(t1, t2)


def test_matching_scores_closed_forms(worlds):
    used = worlds.used_tokens()[0]  # [K, d]
    eye = torch.eye(20, dtype=torch.float64)
    perfect = eye.expand(10, 20, 20)  # one filter per token: every used and unused token matched
    plus, minus = hg.matching_scores(perfect, used)
    assert abs(float(plus) - 1 / (1 + 1e-3)) < 1e-12 and abs(float(minus) - 1 / (1 + 1e-3)) < 1e-12
    only_used = perfect * used.unsqueeze(-1)  # filters for the used tokens only
    plus, minus = hg.matching_scores(only_used, used)
    assert abs(float(plus) - 1 / (1 + 1e-3)) < 1e-12 and float(minus) == 0.0
    flipped_plus, _ = hg.matching_scores(-only_used, used)
    abs_plus, _ = hg.matching_scores(-only_used, used, absolute=True)
    assert float(flipped_plus) <= 0 and abs(float(abs_plus) - float(plus)) < 1e-12


def test_matching_scores_loop_oracle(worlds):
    W = torch.randn(10, 4, 20, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    used = worlds.used_tokens()[1]
    plus, minus = hg.matching_scores(W, used)
    per_k_plus, per_k_minus = [], []
    for k in range(10):
        eps = max(float(W[k].abs().max()) / 1000, 1e-6)
        best = [max(float(W[k, m, a]) / (float(W[k, m].norm()) + eps) for m in range(4)) for a in range(20)]
        on = [best[a] for a in range(20) if used[k, a]]
        off = [best[a] for a in range(20) if not used[k, a]]
        per_k_plus.append(sum(on) / len(on))
        per_k_minus.append(sum(off) / len(off))
    assert abs(float(plus) - sum(per_k_plus) / 10) < 1e-12 and abs(float(minus) - sum(per_k_minus) / 10) < 1e-12


def test_batched_training_equals_single_runs():
    """Stacking variants and seeds is exact: each run trains as it would alone."""
    variants = [hx.Variant("relu", "infonce", "mean"), hx.Variant("linear", "quadratic", "none"), hx.Variant("relu", "infonce", "both")]
    kw = dict(beta=2, candidates=2, zeta=2.0, steps=15, batch=16, output_dim=8, dtype=torch.float64)
    batched = hx.train(variants, [4, 5], **kw)
    for v, variant in enumerate(variants):
        alone = hx.train([variant], [5], **kw)
        assert abs(batched.chi_plus[v][1] - alone.chi_plus[0][0]) < 1e-10
        assert abs(batched.final_loss[v][1] - alone.final_loss[0][0]) < 1e-10


def test_bn_rules_differ_and_training_learns():
    variants = [hx.Variant("relu", "infonce", bn) for bn in ("neither", "mean")]
    result = hx.train(variants, [1], beta=2, candidates=2, steps=150, batch=64)
    assert result.chi_plus[0][0] != result.chi_plus[1][0]
    start = hx.train(variants, [1], beta=2, candidates=2, steps=1, batch=64)
    assert max(result.chi_plus[1]) > start.chi_plus[1][0] + 0.1, "150 steps should improve the matching score"


@pytest.mark.parametrize("call, match", [
    (lambda: hg.make_worlds([]), "seeds"),
    (lambda: hg.make_worlds([1], candidates_per_position=30), "candidates_per_position"),
    (lambda: hg.make_worlds([1], zeta=0), "zeta"),
    (lambda: hg.sample_tokens("w", 4, generator=torch.Generator()), "TokenWorlds"),
    (lambda: hx.Variant("tanh"), "activation"),
    (lambda: hx.Variant(bn="half"), "bn"),
    (lambda: hx.train([hx.Variant()], [1], beta=0, candidates=1), "beta"),
    (lambda: hx.jobs("table1", seeds=[0]), "seeds"),
    (lambda: hx.load("nope"), "name"),
    (lambda: hx.infonce_loss(torch.zeros(1, 3), torch.zeros(1, 3)), "n >= 2"),
    (lambda: hx.filter_gradients(hx.Variant(), torch.zeros(2, 3, 4), torch.zeros(5, 6), torch.zeros(8, 2, dtype=torch.long),
                                 torch.full((8, 2), 9), torch.ones(4)), "tokens"),
])
def test_bad_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_command_line_quick_bench(tmp_path):
    assert hx.main(["bench", "--quick", "--out", str(tmp_path), "--workers", "1"]) == 0
    data = hx.load("quick-bench", directory=tmp_path)
    result = data["jobs"]["bench"]["result"]
    assert data["complete"] and result["runs"] == 12 and result["ms_per_iteration_per_run"] > 0
    assert data["provenance"]["command"].endswith("bench --quick --out " + str(tmp_path) + " --workers 1")


@pytest.mark.parametrize("argv", [["nope"], ["table1", "--seeds", "a,b"], ["table1", "--seeds", "0"], ["table1", "--seeds", "1,1"],
                                  ["fig4", "--betas", ""], ["fig4", "--candidates", "30"], ["table1", "--workers", "0"]])
def test_command_line_rejects_bad_arguments_without_writing(tmp_path, argv, capsys):
    try:
        status = hx.main(argv + ["--out", str(tmp_path)])
    except SystemExit as exc:  # argparse: one line "error: ..." and exit status 2
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err and "error:" in err[-1]
    assert not list(tmp_path.iterdir()), "a bad command line must not write anything"


def test_converted_results_load_and_are_not_resumed(tmp_path):
    table1, fig4 = hx.load("table1"), hx.load("fig4")
    assert table1["complete"] and "converted" in table1["provenance"] and len(table1["jobs"]) == 16
    rows = hx.rows(fig4)
    assert len(rows) == 16 * 8 * 3 and rows == sorted(rows, key=lambda r: (r["beta"], r["candidates"]))
    todo, settings = hx._plan("table1")
    assert [j.key for j in hx.jobs("table1")] == [j.key for j in todo]
    assert settings == table1["settings"] and {j.key: j.params for j in todo} == {k: v["params"] for k, v in table1["jobs"].items()}
    (tmp_path / "quick-table1.json").write_text((__import__("json")).dumps(table1 | {"name": "quick-table1"}))
    with pytest.raises(ValueError, match="fresh"):
        hx.run("table1", quick=True, out=tmp_path, workers=1, progress=False)
    digits, bench = hx.load("digits"), hx.load("bench")
    assert set(digits["jobs"]) == {"plain", "augmented"} and bench["jobs"]["bench"]["result"]["runs"] == 12


def test_infonce_loss_is_eq1_with_eps_one_and_not_nt_xent():
    from clbook import losses
    from clbook.losses.ntxent import nt_xent_reference

    g = torch.Generator().manual_seed(4)
    z1 = torch.nn.functional.normalize(torch.randn(8, 5, generator=g, dtype=torch.float64), dim=-1)
    z2 = torch.nn.functional.normalize(torch.randn(8, 5, generator=g, dtype=torch.float64), dim=-1)
    ours = hx.infonce_loss(z1, z2, temperature=0.1)
    eq1 = losses.infonce_reference(z1, z2, temperature=0.1, eps=1.0) / (8 * 0.1)
    assert abs(float(ours) - float(eq1)) < 1e-12
    assert abs(float(ours) - float(nt_xent_reference(z1, z2, temperature=0.1))) > 0.1
    stacked = hx.infonce_loss(torch.stack([z1, z2]), torch.stack([z2, z1]), temperature=0.1)
    assert abs(float(stacked[0]) - float(ours)) < 1e-12


def test_rank_one_top_layer_with_normalised_outputs_has_zero_gradient():
    """With l2-normalised outputs, V = v s^T maps every input to +-v/|v|: the loss depends on signs only."""
    w = hg.make_worlds([1], candidates_per_position=3)
    t1, t2, _ = hg.sample_tokens(w, 32, generator=torch.Generator().manual_seed(0))
    g = torch.Generator().manual_seed(1)
    W1 = torch.randn(10, 4, 20, generator=g, dtype=torch.float64) / 20 ** 0.5
    V = torch.randn(6, 1, generator=g, dtype=torch.float64) @ torch.randn(1, 40, generator=g, dtype=torch.float64) / 40 ** 0.5
    generic = torch.randn(6, 40, generator=g, dtype=torch.float64) / 40 ** 0.5
    args = (t1[0], t2[0], w.magnitudes)
    for act in ("relu", "linear"):
        flat = hx.filter_gradients(hx.Variant(act, "infonce", "none"), W1, V, *args)
        live = hx.filter_gradients(hx.Variant(act, "infonce", "none"), W1, V, *args, normalize=False)
        assert float(flat.abs().max()) < 1e-12 < 1e-3 < float(live.abs().max())
        assert float(hx.filter_gradients(hx.Variant(act, "infonce", "none"), W1, generic, *args).abs().max()) > 1e-3
    lin = hx.filter_gradients(hx.Variant("linear", "infonce", "none"), W1, V, *args, normalize=False)
    s = torch.linalg.svdvals(lin)
    assert float((s[:, 1] / s[:, 0]).max()) < 1e-12, "Theorem 4 (1): co-linear rows"


def test_summary_and_claims_on_synthetic_rows():
    rows = []
    for a in hx.ACTIVATIONS:
        for loss in ("infonce", "quadratic"):
            for beta in (1, 2, 5, 10):
                for P in (1, 3, 5, 10):
                    for seed, noise in ((1, -0.01), (2, 0.01)):
                        good = (a != "linear") * 0.1 * beta / 10 + (loss == "infonce") * 0.05
                        rows.append(dict(activation=a, loss=loss, bn="mean", beta=beta, candidates=P, seed=seed,
                                         chi_plus=0.5 + good + noise, chi_minus=0.2 - (a == "relu") * 0.1))
    stats = hx.summary(rows, keys=("activation", "loss", "bn", "beta", "candidates"))
    mean, std, count = stats["relu", "infonce", "mean", 10, 3]
    assert count == 2 and abs(mean - 0.65) < 1e-12 and abs(std - 0.01) < 1e-12
    claims = hx.fig4_claims(rows)
    assert all(len(v) == 2 for v in claims.values()), "one value per seed"
    assert max(claims["P = 1, β = 1: linear beats ReLU"]) < 0
    assert all(abs(v - 0.05) < 1e-12 for v in claims["InfoNCE beats quadratic loss (mean of all cells)"])
    assert all(abs(v - 0.1) < 1e-12 for v in claims["ReLU has the lowest χ̄₋ (P > 1, β > 1; margin)"])
