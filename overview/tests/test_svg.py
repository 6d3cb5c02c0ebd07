"""The SVG module, without a database: marks, scaling, gaps, escaping, no inline style."""

import re

import pytest

from overview.svg import (
    HEIGHT,
    PLOT_H,
    TOP,
    Marker,
    Series,
    bar_chart,
    line_chart,
    nice_ticks,
    stacked_bar_chart,
)


def _rects(svg: str) -> list[dict[str, float]]:
    return [
        {k: float(v) for k, v in re.findall(r'(x|y|width|height)="([\d.]+)"', tag)}
        for tag in re.findall(r'<rect class="mark[^>]*>', svg)
    ]


def test_a_stacked_bar_draws_one_mark_per_non_zero_value_with_a_title():
    chart = stacked_bar_chart(
        title="Decisions", categories=["Nov 01", "Nov 02", "Nov 03"],
        series=[Series("ann", [1, 0, 2]), Series("bob", [3, None, 1])],
    )
    assert str(chart.svg).count('<rect class="mark') == 4  # zero and None draw nothing
    assert len(re.findall(r'<rect class="mark[^>]*><title>', chart.svg)) == 4  # each mark has its title
    assert "Nov 01 · bob: 3</title>" in chart.svg
    assert chart.legend == [("s0", "ann"), ("s1", "bob")]


def test_bars_are_scaled_to_the_axis_and_stack_without_overlap():
    chart = stacked_bar_chart(title="t", categories=["a", "b"], series=[Series("x", [4, 8]), Series("y", [4, 0])])
    a_x, a_y, b_x = _rects(str(chart.svg))
    # Ticks run 0..8: a full column (8) is the whole plot height, half of it is half.
    assert b_x["height"] == pytest.approx(PLOT_H)
    assert a_x["height"] == pytest.approx(PLOT_H / 2) and a_y["height"] == pytest.approx(PLOT_H / 2)
    assert a_y["y"] + a_y["height"] == pytest.approx(a_x["y"])  # y sits on top of x
    assert a_x["y"] + a_x["height"] == pytest.approx(TOP + PLOT_H)  # on the axis
    assert max(r["y"] + r["height"] for r in (a_x, a_y, b_x)) <= HEIGHT


def test_labels_and_names_are_escaped():
    evil = '<script>alert("x")</script>'
    chart = bar_chart(title=f"t {evil}", categories=[evil, "ok"], values=[1, 2], name=f"n {evil}")
    svg = str(chart.svg)
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    assert '"x"' not in svg  # quotes escaped too (attribute values)
    # The table keeps the raw text: the template auto-escapes it.
    assert chart.rows[0][0] == evil


def test_no_inline_style_attribute_is_ever_written():
    charts = [
        stacked_bar_chart(title="t", categories=["a"], series=[Series("x", [1])]),
        line_chart(title="t", categories=["a", "b"], series=[Series("x", [1, 2])], markers=[Marker(1, "gate")]),
    ]
    assert all("style=" not in str(c.svg) for c in charts)


def test_a_line_leaves_a_gap_where_there_is_no_value():
    chart = line_chart(title="kappa", categories=list("abcde"), series=[Series("k", [0.2, 0.4, None, 0.5, 0.6])])
    svg = str(chart.svg)
    assert svg.count("<polyline") == 2 and svg.count("<circle") == 4
    assert chart.rows[2] == ["c", "–"]


def test_a_marker_rule_is_drawn_at_its_category():
    chart = line_chart(title="k", categories=list("abcd"), series=[Series("k", [None, None, 0.5, 0.6])],
                       y_range=(0, 1), markers=[Marker(2, "20-case gate")])
    assert 'class="marker"' in chart.svg and ">20-case gate</text>" in chart.svg


def test_extra_columns_go_to_the_table_only():
    chart = line_chart(title="k", categories=["a"], series=[Series("k", [0.5])],
                       extra_columns=[Series("cases", [21])])
    assert chart.headers == ["Day", "k", "cases"] and chart.rows == [["a", "0.50", "21"]]
    assert "cases" not in chart.svg


def test_series_of_the_wrong_length_are_refused():
    with pytest.raises(ValueError, match="2 values for 3 categories"):
        stacked_bar_chart(title="t", categories=["a", "b", "c"], series=[Series("x", [1, 2])])


@pytest.mark.parametrize(
    ("low", "high", "integer", "expected"),
    [
        (0, 8, True, [0, 2, 4, 6, 8]),
        (0, 0, True, [0, 1]),
        (0, 3, True, [0, 1, 2, 3]),
        (0, 1, False, [0, 0.25, 0.5, 0.75, 1]),
        (0, 730, False, [0, 200, 400, 600, 800]),
        (-0.2, 1, False, [-0.5, 0, 0.5, 1]),
    ],
)
def test_ticks_are_round_and_cover_the_data(low, high, integer, expected):
    assert nice_ticks(low, high, integer=integer) == expected
