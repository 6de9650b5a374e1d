"""fedplan against Flower's own privacy accountant (flwr.serverapp.RdpAccountant, flwr 1.42), on Flower's cases.

Flower's DP strategies add noise of std σ·C/m to the mean of m client updates clipped to C (sum noise σC), and its
accountant composes dp-accounting's RDP events with σ as given. docs/SAMPLING.md §5 explains the factor 2 under
replace-one: the sum of updates clipped to C moves by up to 2C when one client is replaced.
"""

import pytest

flwr_serverapp = pytest.importorskip("flwr.serverapp", reason="fedplan[flower] is not installed")

from fedplan.bounds import accounting  # noqa: E402

N, M, SIGMA, ROUNDS, DELTA = 1000, 50, 1.67263, 200, 1e-5


def flowers_epsilon(sampling_method, relation, noise_multiplier=SIGMA) -> float:
    config = flwr_serverapp.PrivacyConfig(target_delta=DELTA, population_size=N, neighboring_relation=relation,
                                          sampling_method=sampling_method)
    accountant = flwr_serverapp.RdpAccountant(config)
    accountant.compose(flwr_serverapp.GaussianPrivacyEvent(noise_multiplier=noise_multiplier, sample_size=M,
                                                           population_size=N), count=ROUNDS)
    return accountant.get_epsilon(DELTA)


def test_fixed_size_client_sampling_reproduces_flower_at_twice_the_noise():
    flower = flowers_epsilon(flwr_serverapp.SamplingMethod.WITHOUT_REPLACEMENT,
                             flwr_serverapp.NeighboringRelation.REPLACE_ONE)
    assert flower == pytest.approx(4.6157, abs=5e-5)  # anchors.md §11
    same_event = accounting.get_epsilon(sample_rate=M / N, noise_multiplier=2 * SIGMA, steps=ROUNDS, delta=DELTA,
                                        sampling="fixed_size", neighboring_relation="replace_one", dataset_size=N,
                                        accountant="rdp")
    assert same_event.epsilon == pytest.approx(flower, rel=1e-6)
    tight = accounting.get_epsilon(sample_rate=M / N, noise_multiplier=2 * SIGMA, steps=ROUNDS, delta=DELTA,
                                   sampling="fixed_size", neighboring_relation="replace_one", dataset_size=N)
    assert tight.accountant == "pld" and tight.epsilon < 0.5 * flower  # Dong-Roth-Su PLD, docs/SAMPLING.md §1
    what_runs = accounting.get_epsilon(sample_rate=M / N, noise_multiplier=SIGMA, steps=ROUNDS, delta=DELTA,
                                       sampling="fixed_size", neighboring_relation="replace_one", dataset_size=N)
    assert what_runs.epsilon > flower  # the run Flower executes at σ, with updates clipped to C


def test_poisson_client_sampling_agrees_with_flower():
    flower = flowers_epsilon(flwr_serverapp.SamplingMethod.POISSON,
                             flwr_serverapp.NeighboringRelation.ADD_OR_REMOVE_ONE)
    ours_rdp = accounting.get_epsilon(sample_rate=M / N, noise_multiplier=SIGMA, steps=ROUNDS, delta=DELTA,
                                      accountant="rdp")
    ours_pld = accounting.get_epsilon(sample_rate=M / N, noise_multiplier=SIGMA, steps=ROUNDS, delta=DELTA)
    assert ours_rdp.epsilon == pytest.approx(flower, rel=1e-3) and ours_rdp.epsilon >= flower * (1 - 1e-4)
    assert ours_pld.epsilon < flower


def test_no_amplification_is_fedplans_shuffle_bound_with_every_client_every_round():
    """Flower's NO_AMPLIFICATION: a Gaussian release per round with no sampling credit. fedplan's shuffle with
    q = 1 (one batch per epoch: every client in every round) is the same mechanism, accounted exactly."""
    flower = flowers_epsilon(flwr_serverapp.SamplingMethod.NO_AMPLIFICATION,
                             flwr_serverapp.NeighboringRelation.ADD_OR_REMOVE_ONE, noise_multiplier=40.0)
    exact = accounting.get_epsilon(sample_rate=1.0, noise_multiplier=40.0, steps=ROUNDS, delta=DELTA,
                                   sampling="shuffle")
    assert exact.accountant == "exact" and exact.epsilon <= flower  # RDP is an upper bound of the exact profile
    assert exact.epsilon >= 0.7 * flower
