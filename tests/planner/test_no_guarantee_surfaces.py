"""Issue 19, item 1: a theorem-backed number whose hypotheses fail is marked "no guarantee" everywhere.

The command line (JSON and table), the validation reports (a NO GUARANTEE verdict, never counted as passed), the
exports (metadata, the CSV's and the libraries' guarantee line) and the app (the label of the number). The failing
hypotheses are checked by hand on the inputs: MAPA's paper noise model holds for a model of dimension N = 1 only
(li L744, erratum LI-1), Xu's Lemma 2 needs z² ≥ 1.5 (xu L171), Theorem 5's bound needs t ≥ max{M_0, e²} with
M_0 = (m + 1)²/4 (vandijk L733, L739).
"""

from __future__ import annotations

import json
import math
import re

import pytest

from fedplan.bounds import adp2sgd as xu
from fedplan.bounds import fedsgd_dpc as zhou
from fedplan.bounds.theorem import Hypothesis
from fedplan.planner.adp2sgd import plan_adp2sgd
from fedplan.planner.cli import main
from fedplan.planner.export import load_schedule_file, render
from fedplan.planner.fedsgd_dpc import plan_fedsgd_dpc
from fedplan.planner.tasks.base import Report
from fedplan.planner.tasks.vandijk import VandijkSelect
from fedplan.planner.validate import Claim, ValidationReport, _claim
from tests.pages.helpers import metric, open_page

#: li L744 / erratum LI-1: the paper's E||eta||^2 = 2 lambda^2 holds for N = 1 only.
N_IS_ONE = "model dimension N = 1 (E||eta||^2 = 2 lambda^2 only for N = 1)"
MAPA = ["mapa", "schedule", "--iterations", "2e3", "--initial-gap", "100", "--noise-model", "paper"]
#: The van Dijk example of the main text (vandijk L1180-1190) with the paper's variant, whose hypotheses fail.
VANDIJK = dict(initial_size=16, client_size=10_000, grad_computations=25_000, noise_multiplier=8, target_epsilon=1,
               growth_exponent=1, r0="1/e", variant="paper", no_pld=True)


def cli(capsys, *argv):
    code = main(list(argv))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return captured.out


def test_mapa_schedule_json_and_table_say_no_guarantee_when_n_exceeds_one(capsys):
    failing = json.loads(cli(capsys, *MAPA, "--model-dim", "10", "--json"))
    assert failing["valid"] is False and failing["guarantee"] == "no guarantee"
    assert [(h["name"], h["detail"]) for h in failing["hypotheses"] if not h["holds"]] == [(N_IS_ONE, "10 <= 1")]
    holding = json.loads(cli(capsys, *MAPA, "--model-dim", "1", "--json"))
    assert holding["valid"] is True and holding["guarantee"] == "guarantee"
    table = cli(capsys, *MAPA, "--model-dim", "10").splitlines()
    assert re.fullmatch(r"guarantee +no guarantee \(failing: " + re.escape(N_IS_ONE) + r"\)", table[0])
    assert sum(line.startswith("guarantee ") for line in table) == 1  # once, not again among the values
    holding_table = cli(capsys, *MAPA, "--model-dim", "1").splitlines()
    assert not any(line.startswith("guarantee") for line in holding_table)  # all hold: the hypotheses say so
    assert any(line.startswith(f"  holds  {N_IS_ONE}: 1 <= 1 (") for line in holding_table)


def test_mapa_exports_carry_the_verdict(capsys, tmp_path):
    out = tmp_path / "mapa.json"
    cli(capsys, *MAPA, "--model-dim", "10", "--out", str(out))
    metadata = json.loads(out.read_text())["metadata"]
    assert metadata["valid"] is False and metadata["guarantee"] == "no guarantee"
    assert load_schedule_file(out).metadata == metadata  # the verdict loads back with the schedule
    csv = tmp_path / "mapa.csv"
    cli(capsys, *MAPA, "--model-dim", "10", "--out", str(csv))
    guarantee = csv.read_text().splitlines()[1]
    assert guarantee.startswith("# guarantee: ") and guarantee.endswith(
        f"; theorem: no guarantee (failing: {N_IS_ONE}) for the paper's numbers in the metadata")
    cli(capsys, *MAPA, "--model-dim", "1", "--out", str(csv))
    assert csv.read_text().splitlines()[1].endswith("; theorem: guarantee for the paper's numbers in the metadata")


def test_vandijk_paper_variant_json_export_and_opacus_header(capsys, tmp_path):
    report = VandijkSelect(**VANDIJK).run()
    failing = [h.name for h in report.result.selection.hypotheses if not h.holds]
    assert failing and report["valid"] is False and report["guarantee"] == "no guarantee"
    out = tmp_path / "plan.json"
    flags = ["--initial-size", "16", "--client-size", "10000", "--grad-computations", "25000", "--noise-multiplier",
             "8", "--target-epsilon", "1", "--growth-exponent", "1", "--r0", "1/e", "--variant", "paper", "--no-pld"]
    cli(capsys, "vandijk", "schedule", *flags, "--out", str(out))
    metadata = json.loads(out.read_text())["metadata"]
    assert (metadata["valid"], metadata["guarantee"]) == (False, "no guarantee")
    assert [h["name"] for h in metadata["hypotheses"] if not h["holds"]] == failing
    header = render(report.result.schedule(), "opacus").splitlines()[1]
    assert header.startswith("# Guarantee: ") and header.endswith(
        f"; theorem: no guarantee (failing: {', '.join(failing)}) for the paper's numbers in the metadata.")


def test_adp2sgd_noise_below_lemma2_is_exported_without_guarantee():
    setting = xu.Setting(workers=16, examples_per_worker=3125, batch_size=256, steps=58594, delta=1e-5)
    # z = 1: Lemma 2's z^2 >= 1.5 fails (xu L171); z = 4 lies inside Theorem 2's band [1.225, 8.417) (spec TV-P2)
    metadata = plan_adp2sgd(setting=setting, noise_to_sensitivity=1.0).schedule().metadata
    assert (metadata["valid"], metadata["guarantee"]) == (False, "no guarantee")
    assert any(h["name"].startswith("sigma^2/Delta^2 >= 1.5") and not h["holds"] for h in metadata["hypotheses"])
    assert plan_adp2sgd(setting=setting, noise_to_sensitivity=4.0).schedule().metadata["guarantee"] == "guarantee"


XU_CIFAR = ["--workers", "16", "--examples-per-worker", "3125", "--batch-size", "256", "--steps", "58594"]


def test_adp2sgd_cli_shows_theorem2s_number_without_guarantee_outside_the_band_and_below_the_floor(capsys):
    # z = 1 < sqrt(1.5) (xu L508): rho = 5 T gamma^2, alpha = 1 + sqrt(log(1/delta)/rho) < log(1/(2 gamma))
    below = json.loads(cli(capsys, "adp2sgd", "epsilon", *XU_CIFAR, "--delta", "1e-5", "--noise-to-sensitivity", "1",
                           "--json"))
    rho, lam = 5 * 58594 * 0.00512**2, math.log(1e5)
    alpha = 1 + math.sqrt(lam / rho)
    assert below["epsilon"] == pytest.approx(rho * alpha + lam / (alpha - 1), rel=1e-12)
    assert (below["valid"], below["guarantee"]) == (False, "no guarantee")
    assert [h["detail"] for h in below["hypotheses"] if not h["holds"]] == ["1 >= 1.5"]
    # target 4 is below the floor 8.3436582 (spec §4.4): the table names the failing hypotheses first
    table = cli(capsys, "adp2sgd", "sigma", *XU_CIFAR, "--target-delta", "1e-5", "--target-epsilon", "4").splitlines()
    assert table[0].startswith("guarantee ") and table[0].split(None, 1)[1].startswith(
        "no guarantee (failing: target epsilon >= the smallest epsilon Theorem 2 certifies (floor)")


def test_fedsgd_dpc_export_with_an_assumed_c2_has_no_guarantee():
    problem = zhou.Problem(num_clients=10, model_dim=7850, client_sizes=6000, strong_convexity=10, smoothness=20,
                           gradient_bound=1, heterogeneity=0, initial_distance=1)
    # Theorem 2 never gives c2 (zhou L222): a c2 of the user's is an assumption, the bound U(T, b) no guarantee
    schedule = plan_fedsgd_dpc(problem=problem, mechanism="gaussian", epsilon=1, delta=1e-5, clipping_norm=1,
                               sample_rate=0.01, max_rounds=500, c2=1.0).schedule()
    metadata = schedule.metadata
    assert (metadata["valid"], metadata["guarantee"]) == (False, "no guarantee")
    assert [h["name"] for h in metadata["hypotheses"] if not h["holds"]] == ["c2 is a proven constant of Theorem 2"]
    assert render(schedule, "csv").splitlines()[1].endswith("; theorem: no guarantee (failing: c2 is a proven "
                                                            "constant of Theorem 2) for the paper's numbers in the "
                                                            "metadata")


def test_report_keeps_a_plans_own_guarantee_and_names_the_papers_verdict():
    hypotheses = [Hypothesis("a <= 1", False, "2 <= 1", "L1").to_dict(), Hypothesis("b > 0", True, "1 > 0").to_dict()]
    plain = Report(values={"x": 1.5, "hypotheses": hypotheses, "statement": "s"})
    assert (plain["valid"], plain["guarantee"]) == (False, "no guarantee")
    assert plain.to_table().splitlines()[0] == "guarantee  no guarantee (failing: a <= 1)"
    plan = Report(values={"x": 1.5, "guarantee": "per example (record-level)", "hypotheses": hypotheses})
    assert plan["guarantee"] == "per example (record-level)" and plan["paper_guarantee"] == "no guarantee"
    lines = plan.to_table().splitlines()
    assert lines[:3] == ["paper_guarantee  no guarantee (failing: a <= 1)", "x                1.5",
                         "guarantee        per example (record-level)"]
    assert "valid" not in plain.to_table() and Report(values={"x": 1}).to_dict() == {"x": 1}


def test_a_claim_on_a_failing_hypothesis_is_no_guarantee_and_never_passes():
    failing = Hypothesis("t >= M_0", False, "32 >= 72.25", "L739")
    below = _claim("d <= bound", 0.5, 1.0, "<=", "src", "mean", hypotheses=(failing, Hypothesis("x", True, "")))
    above = _claim("d <= bound", 2.0, 1.0, "<=", "src", "mean", hypotheses=(failing,))
    for claim in (below, above):
        assert claim.verdict == "NO GUARANTEE" and not claim.passed
        assert claim.failing_hypotheses == ("t >= M_0: 32 >= 72.25",)
        assert claim.detail.endswith("; no guarantee, failing hypotheses: t >= M_0: 32 >= 72.25")
    assert below.detail.startswith("0.5 <= 1; mean") and above.detail.startswith("2 <= 1; mean")
    plain = _claim("e <= f", 1.0, 2.0, "<=", "src")
    report = ValidationReport(algorithm="x", seeds=(0,), claims=(plain, below), table=(), runs=())
    assert plain.verdict == "PASS" and not report.passed and report.verdicts == {"PASS": 1, "NO GUARANTEE": 1}
    assert report.statement().splitlines()[1] == (
        "NO GUARANTEE  d <= bound: 0.5 <= 1; mean; no guarantee, failing hypotheses: t >= M_0: 32 >= 72.25 (src)")
    data = report.to_dict()
    assert data["verdicts"] == report.verdicts and data["claims"][1]["verdict"] == "NO GUARANTEE"
    assert data["claims"][1]["failing_hypotheses"] == ["t >= M_0: 32 >= 72.25"]
    assert Claim("a", 1.0, 2.0, "<=", True, "", "").verdict == "PASS"


def test_validate_theorem5_counts_its_bound_as_no_guarantee(capsys):
    argv = ["validate", "theorem5", "--n-samples", "2000", "--n-features", "4", "--clients", "2", "--rounds", "8",
            "--seeds", "0", "1"]
    output = json.loads(cli(capsys, *argv, "--json"))
    bound, delays = output["claims"]
    large_t = next(h for h in output["hypotheses"] if h["name"].startswith("t >= max{M_0"))
    t, limit = (float(value) for value in large_t["detail"].split(" >= "))
    m = int(re.search(r"m = (\d+)", output["notes"][0]).group(1))
    assert limit == pytest.approx(max((m + 1) ** 2 / 4, math.e**2), rel=1e-5) and t < limit  # fails by hand
    assert bound["verdict"] == "NO GUARANTEE" and bound["passed"] is False
    assert f"{large_t['name']}: {large_t['detail']}" in bound["failing_hypotheses"]
    assert delays["verdict"] == "PASS" and output["passed"] is False
    assert output["verdicts"] == {"NO GUARANTEE": 1, "PASS": 1}
    assert output["valid"] is False and output["guarantee"] == "no guarantee"
    table = cli(capsys, *argv)
    assert re.search(r"^verdicts NO GUARANTEE +1$", table, re.M) and re.search(r"^passed +False$", table, re.M)
    assert re.search(r"^NO GUARANTEE  E\|\|w_T - w\*\|\|\^2 <= Theorem 5 bound: .*failing hypotheses: t >= max",
                     table, re.M)


def no_guarantee_captions(page) -> list[str]:
    """The "no guarantee" lines under theorem-backed metrics (pages.widgets.theorem_metric: the label stays short)."""
    return [caption.value for caption in page.caption if caption.value.startswith("**no guarantee**: fails ")]


def test_increasing_sizes_page_marks_the_papers_delta_no_guarantee():
    page = open_page("2_Increasing_sample_sizes.py")
    warned = any("hypothesis of the theorem fails" in w.value for w in page.warning)
    assert "Paper's δ at ε" in [m.label for m in page.metric] and bool(no_guarantee_captions(page)) == warned
    page.radio[0].set_value("paper").run()
    assert not page.exception and not page.error
    assert "Paper's δ at ε" in [m.label for m in page.metric] and len(no_guarantee_captions(page)) == 1
    assert metric(page, "Paper's δ at ε") == "5.6e-08"  # the number is still shown
