"""Schedule files: CSV and JSON, and errors that name the file and row."""

from __future__ import annotations

import json

import pytest

from fedplan.bounds.accounting import Segment
from fedplan.planner.schedule_io import load_schedule


def test_csv_with_columns_in_any_order(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("noise_multiplier, steps ,sample_rate\n1.0,100,0.01\n2.0,50,0.02\n")
    assert load_schedule(path) == (Segment(0.01, 1.0, 100), Segment(0.02, 2.0, 50))


def test_json_list_or_object(tmp_path):
    rows = [{"sample_rate": 0.01, "noise_multiplier": 1.0, "steps": 100}]
    as_list, as_object = tmp_path / "a.json", tmp_path / "b.json"
    as_list.write_text(json.dumps(rows))
    as_object.write_text(json.dumps({"segments": rows}))
    assert load_schedule(as_list) == load_schedule(as_object) == (Segment(0.01, 1.0, 100),)


@pytest.mark.parametrize("name, text, message", [
    ("s.csv", "sample_rate,steps\n0.1,10\n", "missing noise_multiplier"),
    ("s.csv", "sample_rate,noise_multiplier,steps\n0.1,x,10\n",
     "row 1: sample_rate, noise_multiplier, steps must be numbers"),
    ("s.csv", "sample_rate,noise_multiplier,steps\n0.1,1.0,10\n1.5,1.0,10\n", "segment 2: sample_rate must be"),
    ("s.csv", "sample_rate,noise_multiplier,steps\n", "at least one segment"),
    ("s.json", "{not json", "is not valid JSON"),
    ("s.json", json.dumps({"rows": []}), "expected a list of segments"),
    ("s.json", json.dumps([{"sample_rate": 0.1, "steps": 3}]), "segment 1: missing noise_multiplier"),
    ("s.txt", "", "must be a list of segments (.csv, .json) or a fedplan export"),
])
def test_errors_name_the_file_and_the_problem(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")) as failure:
        load_schedule(path)
    assert name in str(failure.value)
