"""fedplan simulate adp2sgd|mapa: JSON output, progress bar, --validate, presets, one-line errors."""

import json

from fedplan.planner.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


SMALL = ("--n-samples", "600", "--n-features", "4", "--batch-size", "8")


def test_adp2sgd_json_has_records_and_the_ledger(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "9", "--topology", "torus", "--steps",
                         "200", "--json")
    assert code == 0 and err == ""
    output = json.loads(out)
    assert output["rounds"] == len(output["records"]) == 200 and output["epsilon"] > 0
    assert output["config"]["topology"] == "torus" and output["privacy"]["neighboring_relation"] == "replace_one"
    assert output["config"]["mean_identity_residual"] < 1e-12


def test_adp2sgd_table_with_progress_bar(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "4", "--topology", "complete",
                         "--steps", "100", "--staleness", "fixed")
    assert code == 0 and "100/100 rounds" in err
    assert out.startswith("algorithm") and "replace-one" in out


def test_adp2sgd_validate_prints_pass_lines(capsys):
    code, out, _ = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "4", "--topology", "complete", "--steps",
                       "200", "--staleness", "fixed", "--validate", "--seeds", "0", "--json")
    output = json.loads(out)
    assert code == 0 and output["passed"] and len(output["claims"]) == 3
    assert output["statement"].startswith("PASS  max relative residual")


def test_mapa_simulate_and_validate_audp(capsys):
    code, out, _ = run(capsys, "simulate", "mapa", *SMALL, "--iterations", "300", "--json")
    output = json.loads(out)
    assert code == 0 and output["algorithm"] == "mapa" and output["privacy"]["delta"] == 0.0
    assert sum(output["privacy"]["uploads_per_edge"]) == 300 + output["config"]["dropped_uploads"]
    code, out, _ = run(capsys, "simulate", "mapa", *SMALL, "--algorithm", "audp", "--step-rule", "constant",
                       "--iterations", "300", "--compute-time", "constant", "--validate", "--seeds", "0")
    assert code == 0 and "PASS  (1/T) sum_t E||grad f(x_t)||^2 <= Theorem 4" in out


def test_mapa_preset_json(capsys):
    code, out, err = run(capsys, "simulate", "mapa", "--preset", "audp-cyclic", "--json")
    output = json.loads(out)
    assert code == 0 and err == "" and output["config"]["preset"] == "audp-cyclic" and output["epsilon"] == 4000.0


def test_bad_input_is_one_line_on_stderr(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "8", "--topology", "torus")
    assert code == 2 and out == "" and err.count("\n") == 1 and "workers" in err
    code, _, err = run(capsys, "simulate", "mapa", *SMALL, "--edges", "3", "--epsilon", "1", "2")
    assert code == 2 and "epsilon" in err and err.count("\n") == 1


def test_zero_learning_rate_is_refused_not_replaced(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--steps", "20", "--learning-rate", "0")
    assert code == 2 and out == "" and err.count("\n") == 1 and "learning_rate" in err and "got 0" in err


def test_divergence_at_the_first_iteration_is_a_flag(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--steps", "20", "--learning-rate", "1e200", "--json")
    assert code == 0 and err == ""
    output = json.loads(out)
    assert output["diverged"] and output["rounds"] == 0 and "iteration 0" in output["divergence"]
    assert "NaN" not in out and "Infinity" not in out
