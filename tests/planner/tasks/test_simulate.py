"""fedplan simulate vandijk|fedsgd-dpc|fedbuff|preset|adp2sgd|mapa|dpscd|kardam|byzantine: JSON output, progress
bars, validate, presets, one-line errors; the API (the request classes) and the CLI agree."""

import json

import pytest

from fedplan.planner.cli import main
from fedplan.planner.tasks.simulate import SimulateFedbuff, SimulateVandijk
from fedplan.planner.tasks.simulate_papers import SimulateAdp2sgd, SimulateDpscd, SimulateKardam


def run(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


FEDBUFF = ("--n-samples", "2000", "--n-features", "5", "--clients", "10", "--rounds", "20", "--sample-rate", "0.05",
           "--clipping-norm", "1", "--noise-multiplier", "1")


def test_simulate_fedbuff_json_has_the_headline_fields_and_records(capsys):
    code, out, err = run(capsys, "simulate", "fedbuff", *FEDBUFF, "--json")
    assert code == 0 and err == ""
    output = json.loads(out)
    for key in ("final_loss", "final_accuracy", "rounds", "epsilon", "wall_time_s", "records"):
        assert key in output
    assert output["rounds"] == len(output["records"]) == 20 and output["epsilon"] > 0
    api = SimulateFedbuff(n_samples=2000, n_features=5, clients=10, rounds=20, sample_rate=0.05, clipping_norm=1,
                          noise_multiplier=1).run()
    assert api["final_loss"] == output["final_loss"] and api["epsilon"] == output["epsilon"]
    assert api.result.rounds == 20


def test_simulate_vandijk_table_and_progress_bar(capsys):
    code, out, err = run(capsys, "simulate", "vandijk", "--n-samples", "1000", "--n-features", "4", "--clients", "3",
                         "--rounds", "6", "--initial-size", "4", "--growth", "1", "--clipping-norm", "0.5",
                         "--noise-multiplier", "2")
    assert code == 0 and "6/6 rounds" in err and err.startswith("\rvandijk [")
    assert out.startswith("algorithm") and "final_accuracy" in out and "differential privacy" in out


def test_simulate_fedsgd_dpc_from_a_schedule_file(capsys, tmp_path):
    schedule = tmp_path / "plan.json"
    schedule.write_text(json.dumps({"rounds": 4, "change_points": [
        {"start_round": 0, "learning_rate": 0.5, "noise_multiplier": 1.0},
        {"start_round": 2, "learning_rate": 0.25, "noise_multiplier": 2.0}]}))
    code, out, _ = run(capsys, "simulate", "fedsgd-dpc", "--dataset", "iris", "--clients", "3",
                       "--clients-per-round", "3", "--clipping-norm", "1", "--sample-rate", "0.5",
                       "--schedule", str(schedule), "--json")
    output = json.loads(out)
    assert code == 0 and output["rounds"] == 4 and output["config"]["model"] == "softmax"
    rows = [row for row in output["records"]]
    assert rows[-1]["accuracy"] is not None


@pytest.mark.parametrize(("argv", "message"), [
    (("simulate", "fedbuff", "--sample-rate", "2"), "sample_rate must be a real number in (0, 1]; got 2"),
    (("simulate", "vandijk", "--rounds", "0"), "rounds must be an integer in [1, 1e+12]; got 0"),
    (("simulate", "vandijk"), "give exactly one of rounds, schedule; got none"),
    (("simulate", "fedbuff", "--dataset", "nope"), "dataset must be one of synthetic"),
    (("simulate", "fedsgd-dpc", "--clients-per-round", "2", "--rounds", "3", "--target-epsilon", "1"),
     "clipping_norm must be a real number"),
    (("simulate", "fedsgd-dpc", "--clients-per-round", "2", "--rounds", "3", "--clipping-norm", "1"),
     "give exactly one of target_epsilon (calibrated noise) and noise_multiplier"),
    (("simulate", "fedbuff", "--rounds", "5", "--eval-every", "0"),
     "eval_every must be an integer in [1, 1e+12]; got 0"),
    (("simulate", "fedbuff", "--partition", "dirichlet"), "partition dirichlet needs dirichlet_alpha"),
    (("simulate", "kardam", "--seeds", "1"), "seeds are the runs of validate; a single run takes seed"),
    (("simulate", "adp2sgd", "--steps", "2.5"), "steps must be an integer in [1, 1e+12]; got 2.5"),
])
def test_bad_input_is_one_line_on_stderr_with_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("fedplan: error: ") and message in err and err.count("\n") == 1


def test_the_api_and_the_cli_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        SimulateVandijk(rounds=10, round_threshold=0)
    code, _, err = run(capsys, "simulate", "vandijk", "--rounds", "10", "--round-threshold", "0")
    assert code == 2 and err == f"fedplan: error: {raised.value}\n"
    assert str(raised.value) == "round_threshold must be an integer in [1, 1e+12]; got 0"


def test_old_spellings_work_with_a_note(capsys):
    code, out, err = run(capsys, "simulate", "fedbuff", *FEDBUFF, "--staleness", "constant", "--alpha", "0.5",
                         "--partition", "dirichlet", "--json")
    assert code == 0
    assert "fedplan: note: --staleness is deprecated here, use --staleness-weighting" in err
    assert "fedplan: note: --alpha is deprecated here, use --dirichlet-alpha" in err
    new = SimulateFedbuff(n_samples=2000, n_features=5, clients=10, rounds=20, sample_rate=0.05, clipping_norm=1,
                          noise_multiplier=1, staleness_weighting="constant", partition="dirichlet",
                          dirichlet_alpha=0.5).run()
    assert json.loads(out)["final_loss"] == new["final_loss"]


# --- Xu et al.'s A(DP)2SGD and Li et al.'s AUDP/MAPA

SMALL = ("--n-samples", "600", "--n-features", "4", "--batch-size", "8")


def test_adp2sgd_json_has_records_and_the_ledger(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "9", "--topology", "torus", "--steps",
                         "200", "--json")
    assert code == 0 and err == ""
    output = json.loads(out)
    assert output["rounds"] == len(output["records"]) == 200 and output["epsilon"] > 0
    assert output["config"]["topology"] == "torus" and output["privacy"]["neighboring_relation"] == "replace_one"
    assert output["config"]["mean_identity_residual"] < 1e-12
    # --noise-to-sensitivity 2 (the default) is Xu's z; fedplan's noise_multiplier of the same noise is 2z
    assert (output["config"]["noise_to_sensitivity"], output["config"]["noise_multiplier"]) == (2.0, 4.0)


def test_adp2sgd_table_with_progress_bar(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "4", "--topology", "complete",
                         "--steps", "100", "--staleness-model", "fixed")
    assert code == 0 and "100/100 steps" in err
    assert out.startswith("algorithm") and "replace-one" in out


def test_adp2sgd_validate_prints_pass_lines(capsys):
    code, out, _ = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "4", "--topology", "complete", "--steps",
                       "200", "--staleness-model", "fixed", "--validate", "--seeds", "0", "--json")
    output = json.loads(out)
    assert code == 0 and output["passed"] and len(output["claims"]) == 3
    assert output["statement"].startswith("PASS  max relative residual")
    api = SimulateAdp2sgd(n_samples=600, n_features=4, batch_size=8, workers=4, topology="complete", steps=200,
                          staleness_model="fixed", validate=True, seeds=[0]).run()
    assert api["claims"] == output["claims"] and api.result.passed


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


def test_bad_paper_input_is_one_line_on_stderr(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "8", "--topology", "torus")
    assert code == 2 and out == "" and err.count("\n") == 1 and "workers" in err
    code, _, err = run(capsys, "simulate", "mapa", *SMALL, "--edges", "3", "--upload-epsilon", "1", "2")
    assert code == 2 and err.count("\n") == 1
    assert "upload_epsilon must hold one value or one per edge (3); got 2" in err


def test_zero_learning_rate_is_refused_not_replaced(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--steps", "20", "--learning-rate", "0")
    assert code == 2 and out == "" and err.count("\n") == 1 and "learning_rate" in err and "got 0" in err


def test_divergence_at_the_first_iteration_is_a_flag(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--steps", "20", "--learning-rate", "1e200", "--json")
    assert code == 0 and err == ""
    output = json.loads(out)
    assert output["diverged"] and output["rounds"] == 0 and "iteration 0" in output["divergence"]
    assert "NaN" not in out and "Infinity" not in out


# --- the Damaskinos thesis: DP-SCD, Kardam, Byzantine aggregation

def test_dpscd_preset_json_compares_dpsgd_at_the_same_epsilon(capsys):
    code, out, err = run(capsys, "simulate", "dpscd", "--preset", "ridge", "--dpsgd-batch-size", "100", "--json")
    assert code == 0 and err == ""
    output = json.loads(out)
    assert output["dpscd"]["epsilon"] <= 1.0 and output["dpsgd"]["epsilon"] <= 1.0
    assert output["dpsgd"]["noise_multiplier"] == output["calibration"]["dpsgd"]["noise_multiplier"]
    assert output["dpscd"]["noise_multiplier"] == output["calibration"]["dpscd"]["noise_multiplier"]
    assert len(output["dpscd"]["records"]) == 400


def test_dpscd_table_has_a_progress_bar(capsys):
    code, out, err = run(capsys, "simulate", "dpscd", "--preset", "ridge", "--epochs", "2")
    assert code == 0 and "80/80 steps" in err
    assert "dpscd final_suboptimality" in out and "only the shared vector v" in out


def test_dpscd_validate_prints_claims(capsys):
    code, out, _ = run(capsys, "simulate", "dpscd", "--preset", "ridge", "--validate", "--seeds", "0", "1", "--json")
    output = json.loads(out)
    # the preset's ridge has mu*lambda <= 1: Theorem 7 (Damaskinos L1498) guarantees nothing at its numbers
    assert not output["passed"] and output["verdicts"]["NO GUARANTEE"] == 1
    assert "NO GUARANTEE  E S(alpha_T) <= Theorem 7 recursion" in output["statement"] and code == 0


def test_dpscd_sampling_fixed_is_the_old_spelling_of_fixed_size(capsys):
    request = SimulateDpscd(sampling="fixed", epochs=1)
    assert request.sampling == "fixed_size"
    assert "sampling fixed is the old spelling of fixed_size" in capsys.readouterr().err
    with pytest.raises(ValueError, match="sampling must be one of"):
        SimulateDpscd(sampling="fixd")


def test_dpscd_fixed_size_run_is_accounted_as_fixed_size(capsys):
    code, out, _ = run(capsys, "simulate", "dpscd", "--preset", "ridge", "--epochs", "1", "--sampling", "fixed_size",
                       "--accountant", "rdp", "--json")
    output = json.loads(out)
    assert code == 0 and "under fixed-size sampling" in output["statement"]
    assert "does not cover" not in output["statement"] and "L = 50 of N = 2000" in output["statement"]


def test_kardam_reports_filter_rates(capsys):
    code, out, err = run(capsys, "simulate", "kardam", "--n-samples", "1000", "--n-features", "5", "--clients", "10",
                         "--faults", "3", "--byzantine-workers", "3", "--rounds", "50", "--arrivals", "iid", "--json")
    output = json.loads(out)
    assert code == 0 and err == ""
    assert set(output["filters"]) >= {"slowdown_SL", "frequency_reject_rate", "byzantine_rejected", "counts"}
    assert output["rounds"] == 50 and output["epsilon"] is None
    api = SimulateKardam(n_samples=1000, n_features=5, clients=10, faults=3, byzantine_workers=3, rounds=50,
                         arrivals="iid").run()
    assert api["final_loss"] == output["final_loss"] and api["filters"] == output["filters"]


def test_more_byzantine_workers_than_clients_are_refused_by_their_own_name(capsys):
    """The engine's check named its argument ("byzantine must be an integer in [0, 3]"; fuzz seed 303, sweep)."""
    message = "byzantine_workers must be an integer in [0, 3] (fewer than clients = 4); got 230"
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        SimulateKardam(n_samples=200, n_features=5, clients=4, byzantine_workers=230, rounds=5)
    code, _, err = run(capsys, "simulate", "byzantine", "--clients", "4", "--byzantine-workers", "4")
    assert code == 2 and err == "fedplan: error: byzantine_workers must be an integer in [0, 3] (fewer than clients " \
        "= 4); got 4\n"


def test_kardam_validate_table(capsys):
    code, out, _ = run(capsys, "simulate", "kardam", "--n-samples", "1000", "--n-features", "5", "--faults", "3",
                       "--rounds", "60", "--arrivals", "iid", "--validate", "--seeds", "0")
    assert code == 0 and "frequency filter rejection rate = 2f/n" in out and "SL <= (n-f)/n" in out


def test_byzantine_sync_and_a_one_line_error(capsys):
    code, out, err = run(capsys, "simulate", "byzantine", "--n-samples", "1000", "--n-features", "5", "--clients",
                         "11", "--rule", "bulyan", "--faults", "2", "--rounds", "10")
    assert code == 0 and "10/10 rounds" in err and "sync-bulyan" in out
    code, out, err = run(capsys, "simulate", "byzantine", "--n-samples", "1000", "--clients", "10", "--rule", "bulyan",
                         "--faults", "2", "--rounds", "10")
    assert code == 2 and out == "" and err.count("\n") == 1 and "n >= 4f + 3" in err


def test_simulate_vandijk_estimates_every_local_iteration_and_refuses_a_run_beyond_the_time_limit(capsys, monkeypatch,
                                                                                                  tmp_path):
    """The fuzzer's 1789 rounds of 16 local iterations on digits ran 77 s when estimated as one update a round per
    client (2.1 s, under its 15 s limit); Σ s_i × clients counts each local iteration (van Dijk Algorithm 1)."""
    request = SimulateVandijk(rounds=6, initial_size=4, growth=1, clients=3, n_samples=1000, n_features=4)
    assert request.planned_updates()[0] == (4 + 5 + 6 + 7 + 8 + 9) * 3
    schedule = tmp_path / "plan.json"
    schedule.write_text(json.dumps({"rounds": 3, "change_points": [
        {"start_round": 0, "sample_size": 10, "learning_rate": 0.1, "noise_multiplier": 1.0},
        {"start_round": 2, "sample_size": 30, "learning_rate": 0.1, "noise_multiplier": 1.0}]}))
    assert SimulateVandijk(schedule=str(schedule), clients=4).planned_updates()[0] == (10 + 10 + 30) * 4
    monkeypatch.setenv("FEDPLAN_MAX_SECONDS", "15")
    code, _, err = run(capsys, "simulate", "vandijk", "--rounds", "1789", "--dataset", "digits", "--json")
    assert code == 2 and err.strip().endswith("the time limit is 15 s (raise it with --max-seconds or "
                                               "FEDPLAN_MAX_SECONDS)")
    assert "Σ s_i = 28624 local iterations per client × clients=10 is about 2.86e+05 client updates" in err


def test_round_robin_orders_give_each_worker_and_edge_its_turn(capsys):
    code, out, err = run(capsys, "simulate", "adp2sgd", *SMALL, "--workers", "4", "--steps", "10",
                         "--staleness-model", "fixed", "--worker-order", "round_robin", "--json")
    output = json.loads(out)
    assert code == 0 and output["config"]["worker_updates"] == [3, 3, 2, 2]  # t mod 4 over t = 0 … 9
    code, out, err = run(capsys, "simulate", "mapa", *SMALL, "--edges", "4", "--iterations", "10",
                         "--upload-order", "round_robin", "--json")
    output = json.loads(out)
    assert code == 0 and output["privacy"]["uploads_per_edge"] == [3, 3, 2, 2]
    assert output["config"]["dropped_uploads"] == 0  # staleness K - 1 = 3 <= tau_max = 4: none dropped
    random_run = json.loads(run(capsys, "simulate", "mapa", *SMALL, "--edges", "4", "--iterations", "10", "--json")[1])
    assert sorted(random_run["privacy"]["uploads_per_edge"]) != [2, 2, 3, 3]  # exponential times: not in turn


@pytest.mark.parametrize("argv, message", [
    (("adp2sgd", "--worker-order", "round_robin"), "worker_order round_robin needs staleness_model fixed or uniform"),
    (("adp2sgd", "--worker-order", "round_robin", "--staleness-model", "fixed", "--validate"),
     "worker_order round_robin cannot be validated here"),
    (("mapa", "--upload-order", "round_robin", "--compute-mean", "2"),
     "leave compute_time and compute_mean at their defaults (got exponential, 2)"),
    (("mapa", "--upload-order", "round_robin", "--algorithm", "audp"), "upload_order round_robin is MAPA's"),
    (("mapa", "--upload-order", "round_robin", "--validate"), "upload_order round_robin cannot be validated here")])
def test_a_round_robin_the_run_cannot_honour_is_refused_in_one_line(capsys, argv, message):
    code, out, err = run(capsys, "simulate", *argv, *SMALL)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err
