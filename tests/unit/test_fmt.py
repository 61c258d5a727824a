"""clbook.fmt: the number policy and the glue that works without myst-nb."""
import sys

import numpy as np
import pytest
import torch

from clbook import fmt


def test_values_and_errors():
    assert fmt.value(0.123456) == "0.123" and fmt.value(1234.5, 2) == "1.2e+3" and fmt.value(2.5e-7) == "2.5e-7"
    assert fmt.value(torch.tensor(2.0)) == "2" and fmt.value(np.float32(0.5)) == "0.5" and fmt.value(float("inf")) == "inf"
    assert fmt.error(3e-16) == "< 1e-10" and fmt.error(0.0) == "< 1e-10" and fmt.error(2.5e-6) == "2.5e-6"
    assert fmt.error(4e-5, 1e-4) == "< 1e-4" and fmt.error(4e-5, dtype=torch.float32) == "< 1e-4"
    assert fmt.percent(0.6371) == "63.7 %" and fmt.pm(0.8812, 0.0213) == "0.88 ± 0.02"
    with pytest.raises(ValueError, match="digits"):
        fmt.value(1.0, 7)
    with pytest.raises(TypeError, match="x must be a real number"):
        fmt.value("1")


def test_glue_emits_the_same_display_data_with_and_without_myst_nb(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    captured = []
    monkeypatch.setattr(shell.display_pub, "publish", lambda data, metadata=None, **kw: captured.append((data, metadata)))
    fmt.glue("a", "0.123")
    monkeypatch.setitem(sys.modules, "myst_nb", None)  # as if myst-nb were not installed
    fmt.glue("a", "0.123")
    assert len(captured) == 2 and captured[0] == captured[1]
    assert captured[0][0] == {"application/papermill.record/text/plain": "'0.123'"}
    assert captured[0][1]["scrapbook"] == {"name": "a", "mime_prefix": "application/papermill.record/"}
    with pytest.raises(ValueError, match="name"):
        fmt.glue("", 1)
