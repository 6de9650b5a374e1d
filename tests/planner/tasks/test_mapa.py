"""``fedplan mapa schedule|sensitivity|bound|privacy``: paper defaults, JSON keys, exports, one-line errors."""

import json

import pytest

from fedplan.planner import cli
from fedplan.planner.export import load_schedule_file
from fedplan.planner.tasks.mapa import BoundTheorem2, BoundTheorem4, Privacy, Schedule, Sensitivity


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
    assert Schedule(iterations=25_000, initial_gap=1).run().values == data


def test_schedule_out_csv_and_json(capsys, tmp_path):
    target = tmp_path / "mapa.json"
    code, out, _ = run(capsys, "mapa", "schedule", "--iterations", "2000", "--initial-gap", "100", "--out",
                       str(target), "--json")
    data = json.loads(out)
    assert code == 0 and data["out"] == str(target) and data["statement"].startswith("wrote 2000 iterations")
    loaded = load_schedule_file(target)
    assert loaded.rounds == 2000 and [p["P"] for _, p in loaded.change_points] == [s["P"] for s in data["stages"]]
    csv_path = tmp_path / "mapa.csv"
    assert run(capsys, "mapa", "schedule", "--iterations", "2e3", "--initial-gap", "100", "--out", str(csv_path))[0] \
        == 0
    lines = csv_path.read_text().splitlines()
    assert len(lines) == 3 + 1 + len(data["stages"])  # the # header, the column names, one row per stage
    assert lines[3].startswith("start_round,rounds,stage,P,")
    assert code == 0 and run(capsys, "epsilon", "--schedule", str(csv_path), "--json")[0] == 0


def test_schedule_table_and_options(capsys):
    code, out, _ = run(capsys, "mapa", "schedule", "--iterations", "25000", "--initial-gap", "100",
                       "--upload-epsilon", "0.5", "--update-rule", "theory")
    assert code == 0 and "stages 6" in out and "sensitivity 0.750823" in out and "replace-one" in out
    code, out, _ = run(capsys, "mapa", "schedule", "--iterations", "15000", "--initial-gap", "100",
                       "--initial-clipping-norm", "200", "--max-staleness", "100", "--edges", "100", "--json")
    assert code == 0 and json.loads(out)["num_stages"] == 4
    code, out, _ = run(capsys, "mapa", "schedule", "--iterations", "100", "--initial-gap", "1", "--noise-model",
                       "corrected", "--model-dim", "784", "--json")
    assert code == 0 and json.loads(out)["stages"][0]["delta_0"] == pytest.approx(9997499.3746873 * 784 * 785 / 2)


def test_sensitivity_theorem3_inverse_and_theorem1(capsys):
    data = json.loads(run(capsys, "mapa", "sensitivity", "--json")[1])
    assert data["sensitivity"] == pytest.approx(223.578838, abs=5e-7) and data["failure_probability"] == 1e-3
    assert data["delta_b"] == pytest.approx(9997574.3746873, abs=5e-7)
    assert Sensitivity().run().values == data
    code, out, _ = run(capsys, "mapa", "sensitivity", "--sensitivity", "2.5", "--json")
    data = json.loads(out)
    assert code == 0 and data["failure_probability"] is None and not data["hypotheses"][0]["holds"]
    assert "no delta" in data["statement"]
    data = json.loads(run(capsys, "mapa", "sensitivity", "--gradient-bound", "1", "--json")[1])
    assert data["sensitivity"] == pytest.approx(1 / 6) and data["delta_b"] == pytest.approx(80.555556, abs=5e-7)


def test_bounds(capsys):
    data = json.loads(run(capsys, "mapa", "bound", "theorem4", "--iterations", "1000", "--initial-gap", "1",
                          "--noise-variance-bound", "80.555556", "--json")[1])
    assert data["valid"] and data["value"] == pytest.approx(13.665926, abs=5e-7)
    api = BoundTheorem4(iterations=1000, initial_gap=1, noise_variance_bound=80.555556).run()
    assert api["value"] == data["value"]
    data = json.loads(run(capsys, "mapa", "bound", "theorem4", "--iterations", "1000", "--initial-gap", "1",
                          "--noise-variance-bound", "1", "--learning-rate", "0.1", "--json")[1])
    assert not data["valid"] and data["guarantee"] == "no guarantee" and data["statement"].startswith("no bound")
    assert data["value"] == pytest.approx(2 / (1000 * 0.1) + 2 * 1 * 10 * 0.1)  # shown, not None (Eq. (14), L = 10)
    data = json.loads(run(capsys, "mapa", "bound", "theorem2", "--iterations", "100", "--radius", "1",
                          "--gradient-bound", "1", "--variant", "paper", "--json")[1])
    assert data["delta_b"] == pytest.approx(80.555556, abs=5e-7) and data["value"] == pytest.approx(14.04855, abs=1e-5)
    api = BoundTheorem2(iterations=100, radius=1, gradient_bound=1, variant="paper").run()
    assert api.values == data and api.result.delta_b == data["delta_b"]


def test_privacy_totals(capsys):
    data = json.loads(run(capsys, "mapa", "privacy", "--iterations", "15000", "--upload-epsilon", "0.5", "--json")[1])
    assert data["basic_epsilon"] == pytest.approx(7500) and data["per_edge_epsilon"] == pytest.approx(1500)
    assert data["advanced_epsilon"] == pytest.approx(1104.4950, abs=5e-5)
    assert Privacy(iterations=15_000, upload_epsilon=0.5).run().values == data


@pytest.mark.parametrize("argv, message", [
    (["mapa", "schedule", "--iterations", "100", "--initial-gap", "1", "--sensitivity-decay", "1.5"],
     "sensitivity_decay must be a real number in (0, 1)"),
    (["mapa", "schedule", "--iterations", "100", "--initial-gap", "1", "--out", "plan.txt"], "output file must end in"),
    (["mapa", "schedule", "--iterations", "100", "--initial-gap", "1", "--noise-model", "corrected"],
     "needs model_dim"),
    (["mapa", "schedule", "--iterations", "100", "--initial-gap", "1", "--upload-epsilon", "0.1", "0.2"],
     "one value per edge (5)"),
    (["mapa", "bound", "theorem4", "--iterations", "10", "--initial-gap", "1"], "give noise_variance_bound"),
    (["mapa", "schedule", "--iterations", "100", "--initial-gap", "1", "--initial-sensitivity", "1",
      "--initial-clipping-norm", "1"], "give at most one of initial_sensitivity, initial_clipping_norm"),
    (["mapa", "sensitivity", "--gradient-std", "0"], "gradient_std must be > 0 for Theorem 3"),
])
def test_bad_input_is_one_line_with_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out and message in err and err.count("\n") == 1


@pytest.mark.parametrize("argv, missing", [
    (["mapa", "schedule", "--iterations", "100"], "--initial-gap"),  # the paper never gives F0
    (["mapa", "bound", "theorem2", "--iterations", "10", "--radius", "1", "--noise-variance-bound", "1"],
     "--gradient-bound"),
])
def test_required_options(capsys, argv, missing):
    with pytest.raises(SystemExit) as stop:
        cli.main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and missing in err and "required" in err and err.count("\n") == 1


def test_the_api_and_the_cli_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        Schedule(iterations=100, initial_gap=1, upload_epsilon=(0.1, 0.2))
    code, _, err = run(capsys, "mapa", "schedule", "--iterations", "100", "--initial-gap", "1", "--upload-epsilon",
                       "0.1", "0.2")
    assert code == 2 and err == f"fedplan: error: {raised.value}\n"


def test_old_spellings_still_work_with_a_note(capsys):
    code, out, err = run(capsys, "mapa", "schedule", "-T", "15000", "--F0", "100", "--initial-clip", "200", "--tau",
                         "100", "-K", "100", "--epsilon", "0.1", "--theta", "0.5", "--sigma", "30", "--delta", "1e-3",
                         "-b", "12", "-L", "10", "--json")
    assert code == 0 and json.loads(out)["num_stages"] == 4
    notes = err.splitlines()
    assert len(notes) == 11 and all(line.startswith("fedplan: note: ") for line in notes)
    assert "fedplan: note: --theta is deprecated here, use --sensitivity-decay (the old spelling goes in fedplan 0.3)" \
        in notes
    code, out, err = run(capsys, "mapa", "bound", "theorem4", "-T", "1000", "--F0", "1", "--delta-b", "80.555556",
                         "--json")
    assert code == 0 and json.loads(out)["value"] == pytest.approx(13.665926, abs=5e-7)
    assert "--delta-b is deprecated here, use --noise-variance-bound" in err


def test_an_error_of_the_formulas_names_the_request_fields(capsys):
    with pytest.raises(ValueError, match=r"for gradient_std = 30, batch_size = 12, sensitivity = 1e-300"):
        Sensitivity(sensitivity=1e-300).run()
    code, _, err = run(capsys, "mapa", "schedule", "--iterations", "1e7", "--initial-gap", "1", "--p-reference",
                       "initial")
    assert code == 2 and err.endswith("lower iterations or raise sensitivity_decay\n") and err.count("\n") == 1
