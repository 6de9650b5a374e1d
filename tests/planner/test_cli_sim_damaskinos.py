"""fedplan simulate dpscd|kardam|byzantine: JSON, table with progress bar, --validate, one-line errors."""

import json

from fedplan.planner.cli import main


def run(capsys, *argv):
    code = main(["simulate", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_dpscd_preset_json_compares_dpsgd_at_the_same_epsilon(capsys):
    code, out, err = run(capsys, "dpscd", "--preset", "ridge", "--dpsgd-batch-size", "100", "--json")
    assert code == 0 and err == ""
    output = json.loads(out)
    assert output["dpscd"]["epsilon"] <= 1.0 and output["dpsgd"]["epsilon"] <= 1.0
    assert output["dpsgd"]["noise_multiplier"] == output["calibration"]["dpsgd"]["noise_multiplier"]
    assert output["dpscd"]["noise_multiplier"] == output["calibration"]["dpscd"]["noise_multiplier"]
    assert len(output["dpscd"]["records"]) == 400


def test_dpscd_table_has_a_progress_bar(capsys):
    code, out, err = run(capsys, "dpscd", "--preset", "ridge", "--epochs", "2")
    assert code == 0 and "80/80 rounds" in err
    assert "dpscd final_suboptimality" in out and "only the shared vector v" in out


def test_dpscd_validate_prints_claims(capsys):
    code, out, _ = run(capsys, "dpscd", "--preset", "ridge", "--validate", "--seeds", "0", "1", "--json")
    output = json.loads(out)
    assert code == 0 and output["passed"] and "PASS  E S(alpha_T) <= Theorem 7 recursion" in output["statement"]


def test_kardam_reports_filter_rates(capsys):
    code, out, err = run(capsys, "kardam", "--n-samples", "1000", "--n-features", "5", "--clients", "10",
                         "--faults", "3", "--byzantine", "3", "--rounds", "50", "--arrivals", "iid", "--json")
    output = json.loads(out)
    assert code == 0 and err == ""
    assert set(output["filters"]) >= {"slowdown_SL", "frequency_reject_rate", "byzantine_rejected", "counts"}
    assert output["rounds"] == 50 and output["epsilon"] is None


def test_kardam_validate_table(capsys):
    code, out, _ = run(capsys, "kardam", "--n-samples", "1000", "--n-features", "5", "--faults", "3",
                       "--rounds", "60", "--arrivals", "iid", "--validate", "--seeds", "0")
    assert code == 0 and "frequency filter rejection rate = 2f/n" in out and "SL <= (n-f)/n" in out


def test_byzantine_sync_and_a_one_line_error(capsys):
    code, out, err = run(capsys, "byzantine", "--n-samples", "1000", "--n-features", "5", "--clients", "11",
                         "--rule", "bulyan", "--faults", "2", "--rounds", "10")
    assert code == 0 and "10/10 rounds" in err and "sync-bulyan" in out
    code, out, err = run(capsys, "byzantine", "--n-samples", "1000", "--clients", "10", "--rule", "bulyan",
                         "--faults", "2", "--rounds", "10")
    assert code == 2 and out == "" and err.count("\n") == 1 and "n >= 4f + 3" in err
