"""fedplan's Flower export, loaded by Flower 1.42: the strategy it configures runs rounds of fixed-clipping DP
aggregation with the planned noise, and Flower's own accountant, given the event the export names, agrees with
fedplan's RDP ε of the same run (and bounds fedplan's tight ε from above)."""

from __future__ import annotations

import contextlib
import io
import json
import tomllib

import numpy as np
import pytest

flwr_server = pytest.importorskip("flwr.server", reason="fedplan[flower] is not installed")

from flwr import serverapp  # noqa: E402
from flwr.common import Code, FitRes, Status, ndarrays_to_parameters, parameters_to_ndarrays  # noqa: E402
from flwr.server.client_manager import SimpleClientManager  # noqa: E402
from flwr.server.client_proxy import ClientProxy  # noqa: E402
from flwr.server.strategy import DifferentialPrivacyServerSideFixedClipping, FedAvg  # noqa: E402

import fedplan  # noqa: E402
from fedplan.bounds import accounting  # noqa: E402
from fedplan.planner import cli, library_accountants  # noqa: E402
from fedplan.planner.export import write_schedule  # noqa: E402
from fedplan.planner.practice import plan_federated  # noqa: E402

N, M, ROUNDS, DELTA, DIMENSION = 100, 10, 40, 1e-5, 20_000


class _Client(ClientProxy):
    """A client the server can sample; the test hands in its update directly."""

    def get_properties(self, ins, timeout, group_id):  # pragma: no cover - never called
        raise NotImplementedError

    def get_parameters(self, ins, timeout, group_id):  # pragma: no cover
        raise NotImplementedError

    def fit(self, ins, timeout, group_id):  # pragma: no cover
        raise NotImplementedError

    def evaluate(self, ins, timeout, group_id):  # pragma: no cover
        raise NotImplementedError

    def reconnect(self, ins, timeout, group_id):  # pragma: no cover
        raise NotImplementedError


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    plan = plan_federated(clients=N, clients_per_round=M, rounds=ROUNDS, delta=DELTA, target_epsilon=2.0,
                          clipping_norm=0.5)
    path = write_schedule(plan.schedule, tmp_path_factory.mktemp("flower") / "pyproject.toml", fmt="flower")
    with path.open("rb") as handle:
        return plan, tomllib.load(handle)["tool"]


def test_the_strategy_runs_rounds_with_the_planned_sampling_clipping_and_noise(exported):
    plan, tool = exported
    config = tool["flwr"]["app"]["config"]
    strategy = DifferentialPrivacyServerSideFixedClipping(
        FedAvg(fraction_fit=config["fraction-fit"], min_fit_clients=config["min-fit-clients"],
               min_available_clients=config["min-available-clients"]),
        noise_multiplier=config["noise-multiplier"], clipping_norm=config["clipping-norm"],
        num_sampled_clients=config["num-sampled-clients"])
    manager = SimpleClientManager()
    for number in range(N):
        manager.register(_Client(f"client-{number}"))
    model = [np.zeros(DIMENSION)]
    deviations = []
    for server_round in range(1, 4):
        chosen = strategy.configure_fit(server_round, ndarrays_to_parameters(model), manager)
        assert len(chosen) == M == plan.values["clients_per_round"]  # m of N per round
        assert len({client.cid for client, _ in chosen}) == M  # without replacement
        # every client sends an update of norm 10 (clipped to 0.5) in the same direction
        update = np.full(DIMENSION, 10 / np.sqrt(DIMENSION))
        results = [(client, FitRes(Status(Code.OK, ""), ndarrays_to_parameters([model[0] + update]), 1, {}))
                   for client, _ in chosen]
        aggregated, _ = strategy.aggregate_fit(server_round, results, [])
        (new,) = parameters_to_ndarrays(aggregated)
        mean = 0.5 * update / np.linalg.norm(update)
        deviations.append(new - model[0] - mean)
        model = [new]
    noise = np.concatenate(deviations)
    expected = config["noise-multiplier"] * config["clipping-norm"] / M  # σ·C on the sum, /m on the mean
    assert noise.std() == pytest.approx(expected, rel=0.02)
    assert abs(noise.mean()) < 4 * expected / np.sqrt(noise.size)


def flowers_epsilon_of(event: dict) -> float:
    """What Flower's RdpAccountant reports for the export's [tool.fedplan.flower-accountant] event."""
    return library_accountants.flower_epsilon(serverapp, event)


def test_flowers_accountant_agrees_with_fedplans_rdp_of_the_run(exported):
    plan, tool = exported
    flowers_epsilon = flowers_epsilon_of(tool["fedplan"]["flower-accountant"])
    sigma = tool["flwr"]["app"]["config"]["noise-multiplier"]
    ours_rdp = accounting.get_epsilon(sample_rate=M / N, noise_multiplier=sigma, steps=ROUNDS, delta=DELTA,
                                      sampling="fixed_size", neighboring_relation="replace_one", dataset_size=N,
                                      accountant="rdp")
    assert ours_rdp.epsilon == pytest.approx(flowers_epsilon, rel=1e-2)
    # fedplan's plan is the tight ε of the same run: below Flower's RDP, within the target
    assert plan.values["epsilon"] <= flowers_epsilon and plan.values["epsilon"] <= 2.0
    assert tool["fedplan"]["privacy"]["epsilon"] == plan.values["epsilon"]


# The federated page's default (issue 20): Flower's RdpAccountant reported 6.069 for fedplan's σ at target ε = 3.
DEFAULT = {"clients": 1000, "clients_per_round": 50, "rounds": 200, "target_epsilon": 3.0}


@pytest.fixture(scope="module")
def default_exports(tmp_path_factory):
    """The default plan exported with fedplan's σ (API) and with σ calibrated for Flower's accountant (CLI)."""
    folder = tmp_path_factory.mktemp("flower-default")
    planned = fedplan.federated(**DEFAULT)
    tight = fedplan.export(planned, folder / "fedplan.toml")
    calibrated = folder / "rdp.toml"
    arguments = [f"--{name.replace('_', '-')}={value}" for name, value in DEFAULT.items()]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = cli.main(["federated", *arguments, "--out", str(calibrated), "--library-accountant", "rdp", "--json"])
    assert code == 0
    tools = {}
    for path in (tight, calibrated):
        with path.open("rb") as handle:
            tools[path.stem] = tomllib.load(handle)["tool"]
    return planned, tools, json.loads(printed.getvalue())


def test_the_default_export_keeps_fedplans_sigma_which_flower_reports_above_the_target(default_exports):
    planned, tools, _ = default_exports
    tool = tools["fedplan"]
    assert tool["flwr"]["app"]["config"]["noise-multiplier"] == planned["noise_multiplier"]
    assert "library-accountant" not in tool["fedplan"]
    assert flowers_epsilon_of(tool["fedplan"]["flower-accountant"]) == pytest.approx(6.0691, abs=1e-4)
    assert tool["fedplan"]["privacy"]["epsilon"] == planned["epsilon"] <= 3.0


def test_an_export_calibrated_for_flowers_accountant_meets_the_target_there(default_exports):
    planned, tools, report = default_exports
    tool = tools["rdp"]
    sigma = tool["flwr"]["app"]["config"]["noise-multiplier"]
    event = tool["fedplan"]["flower-accountant"]
    reported = flowers_epsilon_of(event)
    assert 0.99 * 3.0 <= reported <= 3.0
    assert event["noise-multiplier"] == sigma / 2 and sigma > planned["noise_multiplier"]
    assert (event["sample-size"], event["population-size"], event["rounds"]) == (50, 1000, 200)
    record = tool["fedplan"]["library-accountant"]
    assert record == report["library_accountant"]
    assert report["flower"]["noise_multiplier"] == sigma and report["noise_multiplier"] == planned["noise_multiplier"]
    assert (record["calibrated_for"], record["noise_multiplier"], record["fedplan_noise_multiplier"]) == (
        "Flower RdpAccountant", sigma, planned["noise_multiplier"])
    assert record["library_epsilon"] == pytest.approx(reported, rel=1e-12)
    tight = accounting.get_epsilon(sample_rate=0.05, noise_multiplier=sigma, steps=200, delta=1e-5,
                                   sampling="fixed_size", neighboring_relation="replace_one", dataset_size=1000)
    assert record["fedplan_epsilon"] == tool["fedplan"]["privacy"]["epsilon"] == tight.epsilon < 0.99 * reported
    assert f"with σ = {sigma:g} calibrated for Flower RdpAccountant" in report["statement"]
