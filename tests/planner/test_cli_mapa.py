"""``fedplan mapa schedule|sensitivity|bound|privacy``: paper defaults, JSON keys, exports, one-line errors."""

import json

import pytest

from fedplan.planner import cli
from fedplan.planner.export import load_schedule_file


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_schedule_json_with_the_paper_defaults(capsys):
    code, out, err = run(capsys, "mapa", "schedule", "--iterations", "25000", "--initial-gap", "1", "--json")
    data = json.loads(out)
    assert code == 0 and not err
    assert data["inputs"] | {"epsilon": 0.1} == data["inputs"]
    assert {k: data["inputs"][k] for k in ("batch_size", "sigma", "smoothness", "delta", "theta", "max_staleness")} \
        == {"batch_size": 12, "sigma": 30.0, "smoothness": 10.0, "delta": 1e-3, "theta": 0.5, "max_staleness": 5}
    assert data["noise_model"] == "paper" and data["num_stages"] == 11
    stages = data["stages"]
    assert [s["iterations"] for s in stages][-1] == 17884
    assert stages[0]["P"] == pytest.approx(7.407462977, abs=5e-10)
    assert stages[0]["learning_rate"] == pytest.approx(1.124991560e-3, rel=1e-9)
    assert stages[0]["sensitivity"] == pytest.approx(223.578838, abs=5e-7)
    assert data["privacy"]["basic_epsilon"] == pytest.approx(2500)


def test_schedule_out_csv_and_json(capsys, tmp_path):
    target = tmp_path / "mapa.json"
    code, out, _ = run(capsys, "mapa", "schedule", "-T", "2000", "--F0", "100", "--out", str(target), "--json")
    data = json.loads(out)
    assert code == 0 and data["out"] == str(target) and data["statement"].startswith("wrote 2000 iterations")
    loaded = load_schedule_file(target)
    assert loaded.rounds == 2000 and [p["P"] for _, p in loaded.change_points] == [s["P"] for s in data["stages"]]
    csv_path = tmp_path / "mapa.csv"
    assert run(capsys, "mapa", "schedule", "-T", "2000", "--F0", "100", "--out", str(csv_path))[0] == 0
    assert len(csv_path.read_text().splitlines()) == 2001


def test_schedule_table_and_options(capsys):
    code, out, _ = run(capsys, "mapa", "schedule", "-T", "25000", "--F0", "100", "--epsilon", "0.5",
                       "--update-rule", "theory")
    assert code == 0 and "stages 6" in out and "sensitivity 0.750823" in out and "replace-one" in out
    code, out, _ = run(capsys, "mapa", "schedule", "-T", "15000", "--F0", "100", "--initial-clip", "200",
                       "--tau", "100", "-K", "100", "--json")
    assert code == 0 and json.loads(out)["num_stages"] == 4
    code, out, _ = run(capsys, "mapa", "schedule", "-T", "100", "--F0", "1", "--noise-model", "corrected",
                       "--model-dim", "784", "--json")
    assert code == 0 and json.loads(out)["stages"][0]["delta_0"] == pytest.approx(9997499.3746873 * 784 * 785 / 2)


def test_sensitivity_theorem3_inverse_and_theorem1(capsys):
    data = json.loads(run(capsys, "mapa", "sensitivity", "--json")[1])
    assert data["sensitivity"] == pytest.approx(223.578838, abs=5e-7) and data["failure_probability"] == 1e-3
    assert data["delta_b"] == pytest.approx(9997574.3746873, abs=5e-7)
    code, out, _ = run(capsys, "mapa", "sensitivity", "--sensitivity", "2.5", "--json")
    data = json.loads(out)
    assert code == 0 and data["failure_probability"] is None and not data["hypotheses"][0]["holds"]
    assert "no delta" in data["statement"]
    data = json.loads(run(capsys, "mapa", "sensitivity", "--gradient-bound", "1", "--json")[1])
    assert data["sensitivity"] == pytest.approx(1 / 6) and data["delta_b"] == pytest.approx(80.555556, abs=5e-7)


def test_bounds(capsys):
    data = json.loads(run(capsys, "mapa", "bound", "theorem4", "-T", "1000", "--F0", "1", "--delta-b", "80.555556",
                          "--json")[1])
    assert data["valid"] and data["value"] == pytest.approx(13.665926, abs=5e-7)
    data = json.loads(run(capsys, "mapa", "bound", "theorem4", "-T", "1000", "--F0", "1", "--delta-b", "1",
                          "--learning-rate", "0.1", "--json")[1])
    assert not data["valid"] and data["value"] is None and data["statement"].startswith("no bound")
    data = json.loads(run(capsys, "mapa", "bound", "theorem2", "-T", "100", "--radius", "1", "--gradient-bound", "1",
                          "--variant", "paper", "--json")[1])
    assert data["delta_b"] == pytest.approx(80.555556, abs=5e-7) and data["value"] == pytest.approx(14.04855, abs=1e-5)


def test_privacy_totals(capsys):
    data = json.loads(run(capsys, "mapa", "privacy", "-T", "15000", "--epsilon", "0.5", "--json")[1])
    assert data["basic_epsilon"] == pytest.approx(7500) and data["per_edge_epsilon"] == pytest.approx(1500)
    assert data["advanced_epsilon"] == pytest.approx(1104.4950, abs=5e-5)


@pytest.mark.parametrize("argv, message", [
    (["mapa", "schedule", "-T", "100", "--F0", "1", "--theta", "1.5"], "theta must be a real number in (0, 1)"),
    (["mapa", "schedule", "-T", "100", "--F0", "1", "--out", "plan.txt"], "output file must end in"),
    (["mapa", "schedule", "-T", "100", "--F0", "1", "--noise-model", "corrected"], "needs model_dim"),
    (["mapa", "schedule", "-T", "100", "--F0", "1", "--epsilon", "0.1", "0.2"], "one value per edge (5)"),
    (["mapa", "bound", "theorem4", "-T", "10", "--F0", "1"], "give --delta-b"),
    (["mapa", "bound", "theorem2", "-T", "10", "--radius", "1", "--delta-b", "1"], "needs --gradient-bound"),
])
def test_bad_input_is_one_line_with_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out and message in err and err.count("\n") == 1


def test_f0_is_required_because_the_paper_never_gives_it(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["mapa", "schedule", "-T", "100"])
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "required: --initial-gap" in err and err.count("\n") == 1
