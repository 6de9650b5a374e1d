"""Schedule files: CSV and JSON, and errors that name the file and row."""

from __future__ import annotations

import json
import re

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
    ("s.json", json.dumps({"rows": []}), "unknown keys ['rows']"),
    ("s.json", json.dumps({"segments": {"steps": 1}}), "expected a list of segments"),
    ("s.json", json.dumps([{"sample_rate": 0.1, "noise_multiplier": 1, "steps": 3, "bogus": 1}]),
     "segment 1: segment has unknown keys ['bogus']"),
    ("s.csv", "sample_rate,noise_multiplier,steps,bogus\n0.1,1.0,10,1\n", "unknown columns bogus"),
    ("s.csv", "sample_rate,noise_multiplier,steps\n0.1,1.0,10,4\n", "row 1: more cells than the header's 3 columns"),
    ("s.json", "[" * 100_000 + "]" * 100_000, "is nested too deeply to read"),
    ("s.json", json.dumps([{"sample_rate": 0.1, "steps": 3}]), "segment 1: missing noise_multiplier"),
    ("s.txt", "", "must be a list of segments (.csv, .json) or a fedplan export"),
])
def test_errors_name_the_file_and_the_problem(tmp_path, name, text, message):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ValueError, match=re.escape(message)) as failure:
        load_schedule(path)
    assert name in str(failure.value)


def test_binary_and_oversized_files_are_refused_by_name_before_parsing(tmp_path):
    from fedplan.planner import limits

    binary = tmp_path / "b.csv"
    binary.write_bytes(b"sample_rate\xa1\xff\x00")
    with pytest.raises(ValueError, match=re.escape("schedule file 'b.csv' is not UTF-8 text (byte 11, line 1)")):
        load_schedule(binary)
    big = tmp_path / "big.json"
    big.write_text(json.dumps([{"sample_rate": 0.01, "noise_multiplier": 1.0, "steps": 1}] * 2000))
    refused = r"schedule file 'big.json' is .* KiB; the limit is 9.77 KiB"
    with limits.using(file_size=10_000), pytest.raises(limits.LimitError, match=refused):
        load_schedule(big)
    assert len(load_schedule(big)) == 2000  # under the default limit


def test_a_field_over_the_csv_modules_128_kib_is_read_as_a_bad_number_not_a_crash(tmp_path):
    path = tmp_path / "wide.csv"
    path.write_text("sample_rate,noise_multiplier,steps\n" + "1" * 140_000 + ",1,1\n")
    with pytest.raises(ValueError, match="segment 1: sample_rate must be a real number in \\(0, 1\\]; got inf"):
        load_schedule(path)


def test_a_long_repetitive_schedule_is_accounted_as_its_distinct_segments(tmp_path):
    """200 000 one-step segments of one (q, σ), interleaved with a second pair, give exactly the ε of the two
    grouped segments (composition is commutative) — and in seconds, not the minutes of 200 000 compositions."""
    from fedplan.bounds.accounting import get_epsilon

    rows = [{"sample_rate": 0.01, "noise_multiplier": 1.1, "steps": 1},
            {"sample_rate": 0.02, "noise_multiplier": 2.0, "steps": 1}] * 100_000
    path = tmp_path / "long.json"
    path.write_text(json.dumps(rows))
    segments = load_schedule(path)
    assert len(segments) == 200_000
    long = get_epsilon(delta=1e-5, segments=segments)
    short = get_epsilon(delta=1e-5, segments=[(0.01, 1.1, 100_000), (0.02, 2.0, 100_000)])
    assert long.epsilon == short.epsilon and long.accountant == short.accountant == "pld"
    assert get_epsilon(delta=1e-5, segments=segments, accountant="rdp").epsilon == pytest.approx(
        get_epsilon(delta=1e-5, segments=[(0.01, 1.1, 100_000), (0.02, 2.0, 100_000)], accountant="rdp").epsilon,
        rel=1e-12)
