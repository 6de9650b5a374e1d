"""fedplan's Opacus export, loaded by Opacus: make_private with the exported arguments runs real DP-SGD steps, and
Opacus's own accountants agree with fedplan's for what ran (RDP with fedplan's orders; PRV against fedplan's PLD).

Opacus needs torch (several GB by default): it is the optional extra ``fedplan[opacus]``. These tests skip without
it, unless ``FEDPLAN_REQUIRE_OPACUS=1`` (set by ``.ci/run``, which installs the CPU build).
"""

from __future__ import annotations

import ast
import os

import pytest

if os.environ.get("FEDPLAN_REQUIRE_OPACUS") == "1":
    import opacus  # noqa: F401  (fail, do not skip, where the run promised Opacus)
opacus = pytest.importorskip("opacus", reason="fedplan[opacus] is not installed")
torch = pytest.importorskip("torch")

from opacus.accountants import PRVAccountant, RDPAccountant  # noqa: E402

from fedplan.bounds import accounting  # noqa: E402
from fedplan.planner.datasets import synthetic_logistic  # noqa: E402
from fedplan.planner.export import write_schedule  # noqa: E402
from fedplan.planner.practice import plan_dp_sgd  # noqa: E402
from fedplan.planner.recipes import RecipeInputs, plan  # noqa: E402

DELTA = 1e-5


def load_export(path) -> dict:
    """The literals the export assigns (read, not executed)."""
    tree = ast.parse(path.read_text())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)}


@pytest.fixture(scope="module")
def dp_sgd(tmp_path_factory):
    planned = plan_dp_sgd(dataset_size=1000, batch_size=50, epochs=2, delta=DELTA, target_epsilon=2.0,
                          clipping_norm=1.5)
    path = write_schedule(planned.schedule, tmp_path_factory.mktemp("opacus") / "plan.py", fmt="opacus")
    return planned, load_export(path)


def test_make_private_runs_the_exported_phase_and_opacus_accounts_what_ran(dp_sgd):
    planned, export = dp_sgd
    (phase,) = export["PHASES"]
    assert phase["opacus_sample_rate"] == phase["sample_rate"] == 0.05  # 50 divides 1000: Opacus's q is ours
    torch.manual_seed(0)
    features, labels = torch.randn(1000, 5), torch.randint(0, 2, (1000,))
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(features, labels),
                                         batch_size=phase["batch_size"])
    model = torch.nn.Linear(5, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = opacus.PrivacyEngine(accountant="rdp")
    model, optimizer, loader = engine.make_private(module=model, optimizer=optimizer, data_loader=loader,
                                                   noise_multiplier=phase["noise_multiplier"],
                                                   max_grad_norm=phase["max_grad_norm"],
                                                   poisson_sampling=phase["poisson_sampling"])
    steps = 0
    while steps < phase["steps"]:
        for batch, target in loader:
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(batch), target).backward()
            optimizer.step()
            steps += 1
            if steps == phase["steps"]:
                break
    assert engine.accountant.history == [tuple(entry) for entry in export["ACCOUNTANT_HISTORY"]]
    assert engine.accountant.history == [(phase["noise_multiplier"], 0.05, 40)]
    opacus_rdp = engine.accountant.get_epsilon(delta=DELTA, alphas=export["RDP_ALPHAS"])
    ours_rdp = accounting.get_epsilon(sample_rate=0.05, noise_multiplier=phase["noise_multiplier"], steps=40,
                                      delta=DELTA, accountant="rdp").epsilon
    assert opacus_rdp == pytest.approx(ours_rdp, rel=1e-2)
    prv = PRVAccountant()
    prv.history = list(engine.accountant.history)
    opacus_prv = prv.get_epsilon(delta=DELTA, eps_error=1e-3)
    assert opacus_prv == pytest.approx(planned.values["epsilon"], rel=1e-2)
    assert planned.values["epsilon"] <= 2.0 and export["PRIVACY"]["epsilon"] == planned.values["epsilon"]


def test_a_schedule_whose_rate_changes_every_round_is_accounted_alike_by_opacus(tmp_path):
    X, y = synthetic_logistic(20_000, 10, seed=1)
    result = plan("increasing-sizes", RecipeInputs(target_epsilon=2.0, target_delta=DELTA, X=X, y=y, clients=4,
                                                   epochs=2.0, batch_size=20))
    export = load_export(write_schedule(result.schedule, tmp_path / "vandijk.py", fmt="opacus"))
    assert len(export["PHASES"]) == len(result.schedule.change_points) == 83
    segments = result.schedule.segments()
    rdp = RDPAccountant()
    rdp.history = [tuple(entry) for entry in export["ACCOUNTANT_HISTORY"]]
    ours_rdp = accounting.get_epsilon(segments=segments, delta=DELTA, accountant="rdp").epsilon
    assert rdp.get_epsilon(delta=DELTA, alphas=export["RDP_ALPHAS"]) == pytest.approx(ours_rdp, rel=1e-2)
    assert rdp.get_epsilon(delta=DELTA) >= ours_rdp * (1 - 1e-9)  # its default orders are a subset of ours
    prv = PRVAccountant()
    prv.history = list(rdp.history)
    assert prv.get_epsilon(delta=DELTA, eps_error=5e-3) == pytest.approx(result.headline["tight_epsilon"], rel=1e-2)


def test_the_export_refuses_what_opacus_does_not_run(tmp_path):
    fixed = plan_dp_sgd(dataset_size=1000, batch_size=50, epochs=1, delta=DELTA, target_epsilon=2.0,
                        sampling="fixed_size")
    with pytest.raises(ValueError, match="Opacus runs poisson sampling; this plan is accounted for "
                                         "sampling=fixed_size"):
        write_schedule(fixed.schedule, tmp_path / "plan.py", fmt="opacus")
