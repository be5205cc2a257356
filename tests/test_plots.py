"""The course's figures: what a reader would misread if it went wrong."""
import matplotlib

matplotlib.use("Agg")

from course import plots  # noqa: E402


def test_a_runaway_depth_is_written_at_the_top_instead_of_flattening_the_others():
    values = {"no residual": [24.4, 24.3, 27.5, 191.3], "ResV": [24.4, 23.7, 23.5, 23.3]}
    ax = plots.depth_plot([1, 2, 4, 8], values, floor=21.7, ymax=30.0)
    assert ax.get_ylim()[1] == 30.0
    notes = [(text.get_text(), text.xy) for text in ax.texts]
    assert notes == [("191 ↑", (8, 30.0))]
    assert ax.get_ylim()[0] < 21.7                      # the floor stays in view


def test_without_ymax_every_value_is_in_view():
    ax = plots.depth_plot([1, 2], {"a": [24.0, 191.0]})
    assert ax.get_ylim()[1] > 191.0 and not ax.texts
