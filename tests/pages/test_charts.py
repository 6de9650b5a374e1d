"""Charts drawn from their main data (app_pages/charts.py): the same rows per layer, a spec that does not change
with the data."""

from __future__ import annotations

import altair as alt
import pandas as pd

from fedplan.app_pages.charts import LAYER_FIELD, main_data


def layered(scale: float) -> dict:
    line = pd.DataFrame({"steps": [10, 100, 1000], "epsilon": [0.1 * scale, 0.5 * scale, 2.0 * scale],
                         "accountant": ["RDP"] * 3})
    rule = pd.DataFrame({"steps": [100]})
    return alt.layer(alt.Chart(line).mark_line().encode(x="steps:Q", y="epsilon:Q", color="accountant:N"),
                     alt.Chart(rule).mark_rule().encode(x="steps:Q")).to_dict()


def test_each_layer_keeps_its_own_rows_from_the_main_data():
    data, spec = main_data(layered(1.0))
    assert "datasets" not in spec and all("data" not in layer for layer in spec["layer"])
    first, second = ([step["filter"] for step in layer["transform"]] for layer in spec["layer"])
    assert first == [{"field": LAYER_FIELD, "equal": 0}] and second == [{"field": LAYER_FIELD, "equal": 1}]
    assert data[data[LAYER_FIELD] == 0]["epsilon"].tolist() == [0.1, 0.5, 2.0]
    assert data[data[LAYER_FIELD] == 1]["steps"].tolist() == [100]
    assert len(data) == 4


def test_new_data_leaves_the_spec_unchanged():
    # Altair names a data set by a hash of its rows: the spec it gives changes with the data
    assert layered(1.0) != layered(2.0)
    assert main_data(layered(1.0))[1] == main_data(layered(2.0))[1]


def test_a_whole_chart_s_data_becomes_the_main_data():
    frame = pd.DataFrame({"t": [1, 2], "value": [3.0, 4.0]})
    spec = alt.vconcat(alt.Chart(frame).mark_line().encode(x="t:Q", y="value:Q"),
                       alt.Chart(frame).mark_point().encode(x="t:Q", y="value:Q")).to_dict()
    data, drawn = main_data(spec)
    assert "data" not in drawn and "datasets" not in drawn and data.equals(frame)


def test_a_spec_it_cannot_move_is_drawn_as_it_is():
    numbers = pd.DataFrame({"x": [1, 2], "label": [1, 2]})
    words = pd.DataFrame({"x": [1], "label": ["one"]})  # one column name, two kinds of values
    spec = alt.layer(alt.Chart(numbers).mark_line().encode(x="x:Q"), alt.Chart(words).mark_text().encode(
        x="x:Q", text="label:N")).to_dict()
    assert main_data(spec) == (None, spec)
    inline = {"data": {"values": [{"x": 1}]}, "mark": "point",
              "encoding": {"x": {"field": "x", "type": "quantitative"}}}
    assert main_data(inline) == (None, inline)
