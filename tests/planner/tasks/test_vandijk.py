"""fedplan vandijk r0|select|schedule: the paper's numbers through the CLI and the API, one-line errors."""

import json
import math

import pytest

from fedplan.planner import cli
from fedplan.planner.tasks.vandijk import VandijkR0, VandijkSchedule, VandijkSelect
from fedplan.planner.vandijk import VanDijkPlan, parse_r0

PLAN = ["--initial-size", "16", "--client-size", "10000", "--grad-computations", "25000", "--noise-multiplier", "8",
        "--target-epsilon", "1", "--growth-exponent", "1", "--r0", "1/e"]
SELECT = ["vandijk", "select", *PLAN]
EXAMPLE3 = dict(initial_size=16, client_size=10_000, grad_computations=25_000, noise_multiplier=8, target_epsilon=1,
                r0="1/e")


def run_cli(capsys, *argv):
    try:
        code = cli.main(list(argv))
    except SystemExit as stop:  # argparse refuses an option before the request sees it
        code = stop.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_select_paper_prints_the_main_text_numbers(capsys):
    code, out, err = run_cli(capsys, *SELECT, "--variant", "paper", "--json", "--no-pld")
    data = json.loads(out)
    assert code == 0 and not err and data["rounds"] == 195 and round(data["slope"], 4) == 1.3216
    assert round(data["budget"], 3) == 5.782 and f"{data['delta']:.2e}" == "5.50e-08"
    assert data["constant_rounds"] == 1563
    assert round(data["aggregated_noise"]) == 112 and round(data["constant_aggregated_noise"]) == 229
    assert data["realised_rounds"] == 183 and data["hypotheses_hold"] is False
    for key in ("m", "hypotheses", "tight_epsilon_rdp"):
        assert key in data


def test_cli_select_corrected_prints_realised_rounds_and_tight_epsilon(capsys):
    code, out, _ = run_cli(capsys, *SELECT, "--no-pld")
    assert code == 0
    assert "corrected variant: T = 185 rounds (realised 185)" in out
    assert "tight_epsilon_rdp" in out and "holds  max_i q_i <= r0/sigma" in out


def test_the_api_answers_as_the_cli(capsys):
    report = VandijkSelect(**EXAMPLE3, variant="paper", no_pld=True).run()
    assert isinstance(report.result, VanDijkPlan) and report.result.realised_rounds == 183
    _, out, _ = run_cli(capsys, *SELECT, "--variant", "paper", "--json", "--no-pld")
    assert json.loads(out) == json.loads(report.to_json())


def test_old_spellings_still_work_and_print_a_note(capsys):
    old = ["vandijk", "select", "--s0", "16", "--n-c", "10000", "-K", "25000", "--sigma", "8", "--epsilon", "1",
           "--p", "1", "--r0", "1/e", "--variant", "paper", "--no-pld", "--json"]
    code, out, err = run_cli(capsys, *old)
    _, new, _ = run_cli(capsys, *SELECT, "--variant", "paper", "--no-pld", "--json")
    assert code == 0 and json.loads(out) == json.loads(new)
    for spelling, name in (("--s0", "--initial-size"), ("--n-c", "--client-size"), ("-K", "--grad-computations"),
                           ("--sigma", "--noise-multiplier"), ("--epsilon", "--target-epsilon"),
                           ("--p", "--growth-exponent")):
        assert f"note: {spelling} is deprecated here, use {name}" in err


def test_the_smallest_noise_multiplier_of_a_range_meets_the_target_delta(capsys):
    code, out, _ = run_cli(capsys, "vandijk", "select", *PLAN[:6], "--noise-multiplier-range", "4", "20",
                           "--target-delta", "1e-10", *PLAN[8:], "--no-pld", "--json")
    data = json.loads(out)
    assert code == 0 and 4 < data["sigma"] < 20 and data["delta"] <= 1e-10
    inputs = VandijkSelect(**{**EXAMPLE3, "noise_multiplier": None}, noise_multiplier_range=[4, 20],
                               target_delta=1e-10, no_pld=True)
    assert inputs.noise_multiplier_range == (4.0, 20.0) and inputs.plan().selection.sigma == data["sigma"]


def test_cli_r0(capsys):
    code, out, _ = run_cli(capsys, "vandijk", "r0", "--noise-multiplier", "3", "--json")
    assert code == 0 and round(json.loads(out)["r0"], 4) == 0.0110
    assert VandijkR0(noise_multiplier=3).run()["r0"] == json.loads(out)["r0"]
    assert json.loads(out)["guarantee"] == "guarantee"


def test_cli_r0_below_the_papers_sigma_is_shown_without_guarantee(capsys):
    """σ = 1 < 1.137 (L1339): the iteration still converges to a fixed point, r = r⋆ = (√3−1)/2·(4/6)·(1−r0/σ)²
    (p = 1, L1305), that meets (16), but the paper proves nothing there; the JSON and the table say so."""
    code, out, err = run_cli(capsys, "vandijk", "r0", "--noise-multiplier", "1", "--json")
    data = json.loads(out)
    assert code == 0 and not err and data["valid"] is False and data["guarantee"] == "no guarantee"
    assert [(h["name"], h["detail"]) for h in data["hypotheses"] if not h["holds"]] == [("sigma >= 1.137",
                                                                                          "1 >= 1.137")]
    assert data["r"] == pytest.approx((math.sqrt(3) - 1) / 2 * 4 / 6 * (1 - data["r0"]) ** 2, rel=1e-12)
    assert 0 < data["r0"] < 1e-4 and data["u0"] < 1 and data["u1"] < 1
    code, table, _ = run_cli(capsys, "vandijk", "r0", "--noise-multiplier", "1")
    assert code == 0 and table.splitlines()[0].split() == ["guarantee", "no", "guarantee", "(failing:", "sigma",
                                                           ">=", "1.137)"]


def test_parse_r0_accepts_the_paper_function_one_over_e_and_numbers():
    assert parse_r0(" R0(sigma) ") == parse_r0("auto") == "r0(sigma)"
    assert parse_r0("1 / e") == 1 / math.e and parse_r0("0.02") == 0.02
    with pytest.raises(ValueError, match="r0 must be 'r0\\(sigma\\)', '1/e' or a number in \\(0, 1/e\\]; got 'e'"):
        parse_r0("e")


CASE2_MESSAGE = ("nothing to plan: for case 2, growth_exponent {p}, noise_multiplier 8, grad_computations 25000 and "
                 "k_plus_multiple 1 (initial_size 16, client_size 10000) the paper's bound claims only delta = {delta} "
                 "at target_epsilon 1")


@pytest.mark.parametrize("argv, message", [
    (["vandijk", "r0", "--noise-multiplier", "0.05"],  # below 0.1 exp(3/σ²) leaves the float range
     "noise_multiplier must be a real number in [0.1, inf); got 0.05"),
    ([*SELECT[:-2], "--r0", "e"], "r0 must be 'r0(sigma)', '1/e' or a number in (0, 1/e]; got 'e'"),
    ([*SELECT[:-2], "--r0", "0.5"], "r0 must be a real number in (0, 0.367879]; got 0.5"),
    (["vandijk", "select", "--initial-size", "16", "--client-size", "10000", "--grad-computations", "25000",
      "--noise-multiplier", "0.05", "--target-epsilon", "1"],  # the default r0(sigma) is computed from σ = 0.1
     "noise_multiplier must be a real number in [0.1, inf); got 0.05"),
    ([*SELECT, "--growth-exponent", "0"], "growth_exponent must be a real number in [0.01, 10]; got 0"),
    (["vandijk", "select", "--initial-size", "16", "--client-size", "10000", "--epochs", "2.5",
      "--noise-multiplier-range", "4", "9", "--target-epsilon", "1"], "noise_multiplier_range needs target_delta"),
    ([*SELECT, "--target-delta", "1e-5"], "target_delta goes with noise_multiplier_range"),
    (["vandijk", "select", *PLAN[:6], "--noise-multiplier-range", "4", "20", "30", "--target-delta", "1e-10",
      *PLAN[8:]], "noise_multiplier_range must be two values LOW HIGH with LOW < HIGH; got 4 20 30"),
    ([*SELECT, "--k-plus-multiple", "2"], "k_plus_multiple applies to case 2; got 2 with case 1"),
    ([*SELECT, "--initial-size", "10000"], "initial_size must be below client_size (10000); got 10000"),
    ([*SELECT, "--grad-computations", "10"], "grad_computations must be at least initial_size (16); got 10"),
    (["vandijk", "schedule", *PLAN, "--out", "plan.txt"], "output file must end in .csv, .json, .yaml"),
    (["vandijk", "schedule", *PLAN, "--out", "plan.csv", "--step-rule", "bogus"], "argument --step-rule: invalid "
     "choice: 'bogus'"),
    (["vandijk", "schedule", *PLAN, "--out", "plan.csv", "--decay", "0.1"], "decay and step_rule shape the learning "
     "rate: give learning_rate too"),
    ([*SELECT, "--case", "2", "--no-pld"], CASE2_MESSAGE.format(p=1, delta=0.606)),
    ([*SELECT, "--case", "2", "--growth-exponent", "2", "--no-pld"], CASE2_MESSAGE.format(p=2, delta=0.998)),
])
def test_cli_bad_input_is_one_line_with_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and message in err


def test_case_2_names_the_users_inputs_and_the_failed_hypothesis():
    with pytest.raises(ValueError) as raised:
        VandijkSelect(**EXAMPLE3, case=2, no_pld=True).run()
    message = str(raised.value)
    assert "target_epsilon must be" not in message and "case 2 assumes K >= K+ and here K = 0.0316 K+: use case 1" \
        in message


def test_the_api_and_the_cli_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        VandijkSelect(**{**EXAMPLE3, "grad_computations": None}, epochs=0.001)
    code, _, err = run_cli(capsys, "vandijk", "select", *PLAN[:4], "--epochs", "0.001", *PLAN[6:])
    assert code == 2 and err == f"fedplan: error: {raised.value}\n"
    assert str(raised.value) == "epochs must be at least initial_size/client_size = 0.0016; got 0.001"


def test_plan_inputs_are_reusable_and_give_exactly_one_k_and_one_noise():
    inputs = VandijkSelect(**EXAMPLE3, variant="paper", no_pld=True)
    assert inputs.plan().realised_rounds == 183
    with pytest.raises(ValueError, match="give exactly one of grad_computations, epochs; got grad_computations, "
                                         "epochs"):
        VandijkSelect(**EXAMPLE3, epochs=2.5)
    with pytest.raises(ValueError, match="give exactly one of noise_multiplier, noise_multiplier_range; got none"):
        VandijkSelect(**{**EXAMPLE3, "noise_multiplier": None})


def test_cli_schedule_writes_csv_with_cumulative_epsilon(capsys, tmp_path):
    target = tmp_path / "plan.csv"
    code, out, _ = run_cli(capsys, "vandijk", "schedule", *PLAN, "--variant", "paper", "--no-pld",
                           "--learning-rate", "0.15", "--decay", "0.001", "--out", str(target))
    lines = [line for line in target.read_text().splitlines() if not line.startswith("#")]
    assert code == 0 and f"wrote 183 rounds to {target}" in out
    assert lines[0] == "start_round,rounds,sample_size,sample_rate,noise_multiplier,learning_rate,cumulative_epsilon"
    assert len(lines) == 184 and lines[1].startswith("0,1,16,0.0016,8.0,0.15,")  # the learning rate changes each round
    epsilons = [float(line.rsplit(",", 1)[1]) for line in lines[1:]]
    assert epsilons == sorted(epsilons)
    assert run_cli(capsys, "epsilon", "--schedule", str(target), "--json")[0] == 0
    report = VandijkSchedule(**EXAMPLE3, variant="paper", no_pld=True, out=str(tmp_path / "plan.json")).run()
    assert report["out"] == str(tmp_path / "plan.json") and report["realised_rounds"] == 183


def test_the_limits_restated_for_a_fast_start_are_those_of_the_bounds():
    from fedplan.bounds import vandijk as paper
    from fedplan.planner.tasks import vandijk as task

    assert (task.MAX_GROWTH_EXPONENT, task.MIN_GROWTH_EXPONENT, task.R0_MAX) == (paper.MAX_EXPONENT,
                                                                      paper.MIN_GROWTH_EXPONENT, paper.R0_MAX)
