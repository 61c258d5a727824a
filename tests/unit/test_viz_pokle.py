"""Figure helpers of Part IV (clbook.viz.sparse_coding, .landscape, .dual): they draw given data and reject bad data.

The panels themselves are drawn at the ends of their ranges by tests/api/test_widgets.py.
"""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from clbook.viz import dual as vdual  # noqa: E402
from clbook.viz import sparse_coding as vsc  # noqa: E402


def test_chance_curve_draws_one_line_per_summary():
    ax = vsc.chance_curve([5, 10], {"maximum": [0.5, 0.6], "minimum": [0.2, 0.3]}, [0.3, 0.4])
    assert len(ax.lines) == 3
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="levels"):
        vsc.chance_curve([5, 10], {"maximum": [0.5]}, [0.3, 0.4])


def test_sweep_draws_and_checks_its_data():
    b, s = torch.linspace(0.1, 0.8, 4), torch.linspace(0.1, 0.9, 3)
    fig = vdual.sweep(b, s, s[:, None] / (1 - b[None, :]))
    assert len(fig.axes) == 3
    plt.close(fig)
    with pytest.raises(ValueError, match="ratios"):
        vdual.sweep(b, s, torch.ones(4, 3))


def test_panels_reject_values_outside_their_ranges():
    with pytest.raises(ValueError, match="masking"):
        vsc.testbed(masking=1.0)
    with pytest.raises(ValueError, match="d must be <= 4"):
        vdual.phase(d=7)
