"""One name, one meaning (issue 25; CONTRIBUTING.md, 'Where things go'): a public name defined in more than one
module of the package is a word of the package's shared vocabulary, with one meaning, qualified by its module.

Every such name must be listed here with that meaning. A new name that two modules define differently fails this test
and must be renamed (as ``landscape.collect`` became ``rows_by_model`` and ``activations.value`` became ``apply``).
"""
import ast
import collections
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "clbook"

VOCABULARY = {
    # the experiment protocol (tests/unit/test_experiment_protocol.py)
    "jobs": "an experiment's list of Jobs",
    "run": "an experiment run through the one runner",
    "load": "a stored result of an experiment (clbook.results.load is the generic reader they call)",
    "main": "an experiment's command line",
    "summary": "an experiment's rows reduced to mean, standard deviation and count per group over seeds",
    "TrainResult": "a trainer's result, satisfying clbook.dynamics.Run (one stopping_reason field)",
    "train": "the training loop of the module's model",
    "train_unchecked": "the loop of the module's train without argument checks, on torch tensors or numpy arrays",
    # a model module's own instance of a paper's quantity
    "energy": "the paper's energy E (the objective the dynamics ascend) for the module's model",
    "gated_inputs": "Tian (2023) Eq. 6's gated inputs x~ = x h'(w^T x), in the module's network shape",
    "linear_flow": "the module's linear model: gradient flow in closed form at time t",
    "linear_closed_form": "the module's linear model: the closed form of its dynamics",
    "linear_gd": "the module's linear model: discrete gradient descent",
    "encode": "the Pokle et al. one-layer encoder (the two forms are tested against each other)",
    "batchnorm": "BatchNorm in training mode over the batch axis (the two forms are tested against each other)",
    "sample": "i.i.d. draws from the module's data model",
    # figures and panels, qualified by their chapter's viz module
    "explore": "a chapter's live panel function",
    "fig3": "the paper's Fig. 3 of the module's chapter",
}


def public_definitions(root: Path = PACKAGE) -> dict[str, list[str]]:
    found = collections.defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and not node.name.startswith("_"):
                found[node.name].append(str(path.relative_to(root)))
    return found


def test_every_name_defined_twice_is_shared_vocabulary():
    shared = {name: where for name, where in public_definitions().items() if len(where) > 1}
    unknown = {name: where for name, where in shared.items() if name not in VOCABULARY}
    assert not unknown, (f"public names defined in several modules with no stated shared meaning: {unknown}; rename "
                         "one or add the name's one meaning to VOCABULARY (CONTRIBUTING.md, 'Where things go')")


def test_the_vocabulary_lists_no_stale_name():
    shared = {name for name, where in public_definitions().items() if len(where) > 1}
    assert set(VOCABULARY) <= shared, f"VOCABULARY lists names no longer shared: {sorted(set(VOCABULARY) - shared)}"


def test_the_check_sees_a_collision(tmp_path):
    """Negative control: two modules that both define ``value`` (as activations and fmt did) are reported."""
    (tmp_path / "a.py").write_text("def value(x):\n    return x\n")
    (tmp_path / "b.py").write_text("def value(x):\n    return str(x)\n")
    assert public_definitions(tmp_path)["value"] == ["a.py", "b.py"]


def test_the_two_batchnorms_agree():
    """Hierarchical's BatchNorm (Def. 5's back-propagation rules) and the landscape encoders' (affine, as
    torch.nn.BatchNorm1d) compute the same forward pass, and the same gradient under full back-propagation."""
    import torch

    from clbook.experiments import hierarchical, landscape

    y = torch.randn(16, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(0), requires_grad=True)
    one, zero = torch.ones(5, dtype=torch.float64), torch.zeros(5, dtype=torch.float64)
    a, b = hierarchical.batchnorm(y, "both"), landscape.batchnorm(y, one, zero)
    torch.testing.assert_close(a, b, rtol=0, atol=1e-12)
    w = torch.randn(16, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    (ga,), (gb,) = torch.autograd.grad((a * w).sum(), y), torch.autograd.grad((b * w).sum(), y)
    torch.testing.assert_close(ga, gb, rtol=0, atol=1e-12)
    (gm,) = torch.autograd.grad((hierarchical.batchnorm(y, "mean") * w).sum(), y)
    assert (gm - gb).abs().max() > 1e-3, "mean-backprop must differ from full back-propagation"
