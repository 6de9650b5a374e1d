"""planner.export: change-points, per-round expansion, round trips and bad files."""

import pytest

from fedplan.planner.export import Schedule, load_schedule_file, render, write_schedule


def make():
    rows = [{"sample_size": 16, "noise_multiplier": 1.0}] * 3 + [{"sample_size": 32, "noise_multiplier": 1.0}] * 2
    return Schedule.from_rows(rows, metadata={"delta": 1e-5}, statement="test")


def test_rows_collapse_to_change_points_and_expand_back():
    schedule = make()
    assert [start for start, _ in schedule.change_points] == [0, 3]
    assert [row["round"] for row in schedule.rows()] == [0, 1, 2, 3, 4]
    assert [row["sample_size"] for row in schedule.rows()] == [16, 16, 16, 32, 32]


@pytest.mark.parametrize("suffix", ["json", "yaml", "yml"])
def test_round_trip(tmp_path, suffix):
    path = write_schedule(make(), tmp_path / f"s.{suffix}")
    assert load_schedule_file(path) == make()


def test_csv_has_one_row_per_change_or_per_round_on_request(tmp_path):
    text = render(make(), "csv", cumulative_epsilon=[0.1, 0.2, 0.3, 0.4, 0.5])
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == ["start_round,rounds,sample_size,noise_multiplier,cumulative_epsilon", "0,3,16,1.0,0.3",
                     "3,2,32,1.0,0.5"]
    per_round = render(make(), "csv", cumulative_epsilon=[0.1, 0.2, 0.3, 0.4, 0.5], per_round=True)
    lines = [line for line in per_round.splitlines() if not line.startswith("#")]
    assert lines[0] == "round,sample_size,noise_multiplier,cumulative_epsilon" and lines[-1] == "4,32,1.0,0.5"
    assert len(lines) == 6
    with pytest.raises(ValueError, match=r"one value per round \(5\); got 2"):
        render(make(), "csv", cumulative_epsilon=[0.1, 0.2])


@pytest.mark.parametrize("per_round", [False, True])
def test_csv_loads_back_to_the_same_change_points(tmp_path, per_round):
    path = write_schedule(make(), tmp_path / "s.csv", per_round=per_round)
    loaded = load_schedule_file(path)
    assert loaded.rounds == 5 and loaded.change_points == make().change_points


@pytest.mark.parametrize("starts, rounds", [([1], 3), ([0, 0], 3), ([0, 5], 3)])
def test_bad_change_points(starts, rounds):
    with pytest.raises(ValueError, match="change_points must start at round 0"):
        Schedule(rounds=rounds, change_points=tuple((s, {}) for s in starts))


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_schedule_file(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ValueError, match="schedule file 'broken.json' is not valid JSON"):
        load_schedule_file(broken)
    with pytest.raises(ValueError, match="must end in .csv, .json, .yaml or .yml"):
        write_schedule(make(), tmp_path / "s.txt")
