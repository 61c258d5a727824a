"""Every simulator's result is a clbook.dynamics.Run: one field, stopping_reason, says why the run stopped."""
import dataclasses

import pytest

from clbook.dynamics import Run, deeplinear, onelayer, relu2layer, ssl, stiefel

RESULTS = [deeplinear.TrainResult, deeplinear.BlowupResult, onelayer.ProjectedAscent, relu2layer.StickyRun,
           ssl.GDResult, stiefel.TrainResult, stiefel.ODEResult]


@pytest.mark.parametrize("cls", RESULTS, ids=lambda c: f"{c.__module__}.{c.__name__}")
def test_every_result_declares_stopping_reason(cls):
    fields = [f.name for f in dataclasses.fields(cls)]
    assert "stopping_reason" in fields, fields
    assert not {"stop_reason", "stopped"} & set(fields), f"{cls.__name__} names the stop twice: {fields}"


def test_a_run_is_a_run():
    """The Protocol holds for a result and not for an object without the field (its negative control)."""
    out = onelayer.ProjectedAscent(W=None, residual=0.0, steps=1, stopping_reason="converged")
    assert isinstance(out, Run)
    assert not isinstance(object(), Run)
