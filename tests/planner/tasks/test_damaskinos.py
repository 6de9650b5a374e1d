"""fedplan dpscd / staleness / byzantine: JSON keys and values, tables, one-line errors with exit code 2."""

from __future__ import annotations

import json

import pytest

from fedplan.planner import cli
from fedplan.planner.tasks.damaskinos import ByzantineMaxF, ByzantineMinN, DpscdCalibrate, StalenessBeta

MSD = ["--target-delta", "1e-3", "--examples", "347786", "--epochs", "50"]


def run(capsys, *argv):
    code = cli.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dpscd_calibrate_json(capsys):
    code, out, err = run(capsys, "dpscd", "calibrate", "--target-epsilon", "0.1", "--batch-size", "1000", *MSD,
                         "--no-compare", "--json")
    data = json.loads(out)
    assert code == 0 and not err
    assert data["noise_multiplier"] == pytest.approx(14.22328, abs=1e-5) and data["steps"] == 17_389
    assert data["accountant"] == "ma128" and data["neighboring_relation"] == "add_or_remove_one"
    api = DpscdCalibrate(target_epsilon=0.1, target_delta=1e-3, batch_size=1000, examples=347_786, epochs=50,
                         no_compare=True).run()
    assert api.values == data and api.result.steps == 17_389


def test_dpscd_calibrate_tight_table_and_export(capsys, tmp_path):
    out_file = tmp_path / "dpscd.json"
    code, out, _ = run(capsys, "dpscd", "calibrate", "--target-epsilon", "1", "--batch-size", "2000", *MSD,
                       "--accountant", "rdp", "--out", str(out_file))
    assert code == 0 and "comparison noise_multiplier  2.195412" in out
    assert f"wrote 8694 iterations to {out_file}" in out
    assert json.loads(out_file.read_text())["rounds"] == 8694


def test_dpscd_errors_are_one_line(capsys):
    code, out, err = run(capsys, "dpscd", "calibrate", "--target-epsilon", "0.05", "--batch-size", "1000", *MSD)
    assert code == 2 and out == "" and err.count("\n") == 1 and "0.0539668" in err
    code, _, err = run(capsys, "dpscd", "calibrate", "--target-epsilon", "1", "--batch-size", "1.5", *MSD)
    assert code == 2 and "batch_size must be an integer" in err
    code, _, err = run(capsys, "dpscd", "calibrate", "--target-epsilon", "1", "--batch-size", "10", *MSD, "--out",
                       "x.txt")
    assert code == 2 and "output file must end in" in err
    code, _, err = run(capsys, "dpscd", "calibrate", "--target-epsilon", "1", "--batch-size", "400000", *MSD)
    assert code == 2 and "batch_size must be an integer in [1, 347786]" in err


def test_staleness_beta(capsys):
    code, out, _ = run(capsys, "staleness", "beta", "--staleness-threshold", "12", "--staleness-values", "6", "48",
                       "--json")
    data = json.loads(out)
    assert code == 0 and data["beta"] == pytest.approx(0.324318, abs=1e-6)
    assert data["dampening"]["6"] == pytest.approx(1 / 7) and data["dampening"]["48"] == pytest.approx(1.73e-7,
                                                                                                      rel=3e-3)
    assert data["expected_dampening"]["adasgd"] == pytest.approx(0.1768, abs=5e-5)
    assert data["max_adaptive_rate"] == pytest.approx(49.0) and data["decay_bound"] == pytest.approx(1.134, abs=5e-4)
    assert StalenessBeta(staleness_threshold=12, staleness_values=(6, 48)).run().values == data
    code, out, _ = run(capsys, "staleness", "beta", "--staleness-threshold", "24")
    assert code == 0 and "0.21374" in out and "Eq. 5.3" in out
    code, _, err = run(capsys, "staleness", "beta", "--staleness-threshold", "-1")
    assert code == 2 and "staleness_threshold must be a real number in (0, inf)" in err
    code, _, err = run(capsys, "staleness", "beta", "--staleness-threshold", "12", "--staleness-std", "1e9")
    assert code == 2 and "staleness_mean + 3 staleness_std" in err and err.count("\n") == 1


def test_byzantine_max_f_and_min_n(capsys):
    code, out, _ = run(capsys, "byzantine", "max-f", "--rule", "multi-krum", "--workers", "19", "--json")
    data = json.loads(out)
    assert code == 0 and data["max_f"] == 8 and data["all_rules"]["bulyan"] == 4 and data["all_rules"]["kardam"] == 6
    assert ByzantineMaxF(rule="multi-krum", workers=19).run().values == data
    code, out, _ = run(capsys, "byzantine", "min-n", "--rule", "bulyan", "--faults", "4", "--json")
    assert code == 0 and json.loads(out)["min_workers"] == 19
    assert ByzantineMinN(rule="bulyan", faults=4).run()["min_workers"] == 19
    code, out, _ = run(capsys, "byzantine", "max-f", "--rule", "kardam", "--workers", "1e1")
    assert code == 0 and "max_f" in out and "n >= 3f + 1" in out
    code, _, err = run(capsys, "byzantine", "min-n", "--rule", "averaging", "--faults", "1")
    assert code == 2 and "averaging tolerates no Byzantine worker" in err
    code, _, err = run(capsys, "byzantine", "max-f", "--rule", "krum", "--workers", "2")
    assert code == 2 and "workers must be >= 3 for krum" in err


def test_the_api_and_the_cli_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        StalenessBeta(staleness_threshold=12, staleness_values=(6, -1))
    code, _, err = run(capsys, "staleness", "beta", "--staleness-threshold", "12", "--staleness-values", "6", "-1")
    assert code == 2 and err == f"fedplan: error: {raised.value}\n"
    assert str(raised.value) == "staleness_values[1] must be a real number in [0, inf); got -1"


def test_old_spellings_still_work_with_a_note(capsys):
    code, out, err = run(capsys, "staleness", "beta", "--tau-thres", "12", "--tau", "6", "48", "--mean", "6", "--std",
                         "2", "--json")
    assert code == 0 and json.loads(out)["beta"] == pytest.approx(0.324318, abs=1e-6)
    assert "fedplan: note: --tau-thres is deprecated here, use --staleness-threshold" in err
    assert "use --staleness-values" in err and "use --staleness-mean" in err and "use --staleness-std" in err
    code, out, err = run(capsys, "dpscd", "calibrate", "--epsilon", "0.1", "--delta", "1e-3", "--batch", "1000",
                         "--examples", "347786", "--epochs", "50", "--no-compare", "--json")
    assert code == 0 and json.loads(out)["noise_multiplier"] == pytest.approx(14.22328, abs=1e-5)
    assert "--batch is deprecated here, use --batch-size" in err and "use --target-epsilon" in err
