"""DP-SCD and DP-SGD simulation: closed-form updates vs Eq. 6.1, convergence without noise, ledgers, determinism."""

import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from fedplan.bounds import accounting, dpscd
from fedplan.planner.simulate.data import load_dataset
from fedplan.planner.simulate.dpscd import (
    ALGORITHMS,
    DualProblem,
    _coordinate_updates,
    dp_ledger,
    make_dual_problem,
    planned_steps,
    preset_problem,
    run_dpscd,
    run_dpscd_preset,
    run_dpsgd,
)


@pytest.fixture(scope="module")
def ridge():
    return make_dual_problem(dataset=load_dataset("synthetic-linear", n_samples=500, n_features=5), loss="ridge",
                             regularization=0.05)


@pytest.fixture(scope="module")
def svm():
    return make_dual_problem(dataset=load_dataset("synthetic", n_samples=400, n_features=5), loss="hinge",
                             regularization=0.05)


def subproblem(problem, j, alpha, v, batch):
    """N * Eq. 6.1 as a function of Delta (constant terms dropped), spec §3.1."""
    n, lam, x, y = problem.examples, problem.regularization, problem.X[j], problem.y[j]

    def value(delta):
        a = alpha[j] + delta
        if problem.loss == "ridge":
            conj = 0.5 * a * a - a * y
        else:
            conj = -a * y if 0 <= a * y <= 1 else np.inf
        return conj + (2 * float(x @ v) * delta + batch * delta * delta) / (2 * lam * n)
    return value


@pytest.mark.parametrize("name", ["ridge", "svm"])
def test_closed_form_updates_minimise_the_subproblem(name, request):
    problem = request.getfixturevalue(name)
    rng = np.random.default_rng(0)
    alpha = problem.y * rng.uniform(0, 1, problem.examples)
    v = problem.X.T @ alpha
    n, lam, batch = problem.examples, problem.regularization, 7
    for j in range(5):
        delta = _coordinate_updates(problem, alpha[[j]], problem.y[[j]], problem.X[[j]] @ v / (lam * n),
                                    np.array([batch / (lam * n)]))[0]
        f = subproblem(problem, j, alpha, v, batch)
        bounds = (-5, 5) if name == "ridge" else sorted((-alpha[j], problem.y[j] - alpha[j]))
        best = minimize_scalar(f, bounds=bounds, method="bounded", options={"xatol": 1e-12})
        assert f(delta) <= best.fun + 1e-9
        assert delta == pytest.approx(best.x, abs=1e-5)


def test_logistic_newton_step_decreases_the_dual_and_stays_in_the_box():
    problem, _ = preset_problem("logistic")
    run = run_dpscd(problem=problem, batch_size=10, steps=200, clipping_norm=10.0, noise_multiplier=0.0,
                    eval_every=50)
    values = [row["suboptimality"] for row in run.rows if row["suboptimality"] is not None]
    assert len(values) == 4 and all(b <= a for a, b in zip(values, values[1:], strict=False))


def test_ridge_dual_optimum_has_zero_suboptimality_and_duality_gap(ridge):
    theta, p_star = ridge.optimum
    alpha_star = ridge.y - ridge.X @ theta
    assert abs(ridge.suboptimality(alpha_star)) < 1e-10
    assert np.allclose(ridge.X.T @ alpha_star / (ridge.regularization * ridge.examples), theta)


@pytest.mark.parametrize("name", ["ridge", "svm"])
def test_noise_free_sdca_converges_and_keeps_v_consistent(name, request):
    problem = request.getfixturevalue(name)
    run = run_dpscd(problem=problem, batch_size=1, steps=40 * problem.examples, clipping_norm=1e6,
                    noise_multiplier=0.0, sampling="fixed", eval_every=10 * problem.examples)
    assert run.final["suboptimality"] < 1e-6
    assert run.final["dist_sq"] < 1e-4
    assert all(row["drift"] < 1e-20 for row in run.rows if row["drift"] is not None)
    assert run.epsilon is None and "not differentially private" in run.privacy["statement"]


def test_runs_are_deterministic_per_seed(ridge):
    options = {"problem": ridge, "batch_size": 20, "steps": 50, "clipping_norm": 0.1, "noise_multiplier": 1.0}
    a, b, c = run_dpscd(**options, seed=3), run_dpscd(**options, seed=3), run_dpscd(**options, seed=4)
    assert a.rows == b.rows and a.final == b.final and a.final != c.final


def test_ledger_is_the_accountant_at_the_executed_schedule():
    for accountant in ("ma128", "rdp"):
        ledger = dp_ledger(sample_rate=0.025, noise_multiplier=2.0, steps=400, delta=1e-3, accountant=accountant)
        expected = dpscd.epsilon_for_noise(noise_multiplier=2.0, sample_rate=0.025, steps=400, delta=1e-3,
                                           accountant=accountant)
        assert ledger["epsilon"] == expected and ledger["neighboring_relation"] == "add_or_remove_one"
        assert "Poisson" in ledger["statement"] and "only the shared vector v" in ledger["statement"]
    with pytest.raises(ValueError, match="needs examples"):
        dp_ledger(sample_rate=0.025, noise_multiplier=2.0, steps=400, delta=1e-3, sampling="fixed")


@pytest.mark.parametrize(("accountant", "used"), [("ma128", "rdp"), ("rdp", "rdp"), ("pld", "pld")])
def test_fixed_size_ledger_is_the_fixed_size_accountant(accountant, used):
    """sampling="fixed" (L distinct of N per iteration) is accounted as fixed_size with N, add/remove-one (the
    thesis' proof); ma128 is Poisson-only, so RDP answers and the ledger says so. It is never below Poisson."""
    fixed = dp_ledger(sample_rate=0.025, noise_multiplier=2.0, steps=400, delta=1e-3, sampling="fixed",
                      examples=2000, accountant=accountant)
    expected = accounting.get_epsilon(sample_rate=50 / 2000, noise_multiplier=2.0, steps=400, delta=1e-3,
                                      accountant=used, sampling="fixed_size", neighboring_relation="add_or_remove_one",
                                      dataset_size=2000)
    assert fixed["epsilon"] == expected.epsilon and fixed["accountant"] == used
    assert fixed["sampling_key"] == "fixed_size" and fixed["sampling"].startswith("fixed_size (exactly m = qN")
    assert fixed["dataset_size"] == 2000 and fixed["requested_accountant"] == accountant
    assert fixed["neighboring_relation"] == "add_or_remove_one" and fixed["bound"] == "upper bound"
    assert "under fixed-size sampling" in fixed["statement"] and "L = 50 of N = 2000" in fixed["statement"]
    assert ("covers Poisson sampling only" in fixed["statement"]) == (accountant == "ma128")
    poisson = dpscd.epsilon_for_noise(noise_multiplier=2.0, sample_rate=0.025, steps=400, delta=1e-3,
                                      accountant=used)
    assert fixed["epsilon"] >= poisson


def test_a_fixed_run_draws_exactly_l_distinct_examples_and_its_ledger_names_fixed_size(ridge, monkeypatch):
    from fedplan.planner.simulate import dpscd as engine

    original = engine._batches
    drawn = []

    def recording(rng, n, batch, sampling):
        chosen = original(rng, n, batch, sampling)
        drawn.append((sampling, chosen.copy()))
        return chosen

    monkeypatch.setattr(engine, "_batches", recording)
    run = run_dpscd(problem=ridge, batch_size=20, steps=30, clipping_norm=0.1, noise_multiplier=1.5, seed=1,
                    sampling="fixed", accountant="rdp", delta=1e-3)
    assert len(drawn) == 30 and {sampling for sampling, _ in drawn} == {"fixed"}
    for _, chosen in drawn:
        assert chosen.size == 20 and np.unique(chosen).size == 20 and chosen.min() >= 0
        assert chosen.max() < ridge.examples
    expected = accounting.get_epsilon(sample_rate=20 / ridge.examples, noise_multiplier=1.5, steps=30, delta=1e-3,
                                      accountant="rdp", sampling="fixed_size", dataset_size=ridge.examples)
    assert run.epsilon == expected.epsilon and run.privacy["sampling_key"] == "fixed_size"
    assert run.privacy["dataset_size"] == ridge.examples
    drawn.clear()
    poisson = run_dpscd(problem=ridge, batch_size=20, steps=30, clipping_norm=0.1, noise_multiplier=1.5, seed=1,
                        accountant="rdp", delta=1e-3)
    assert len({chosen.size for _, chosen in drawn}) > 1 and "Poisson" in poisson.privacy["statement"]
    assert poisson.epsilon <= run.epsilon


def test_preset_runs_in_seconds_and_spends_at_most_the_target():
    out = run_dpscd_preset("ridge")
    target = out["settings"]["target_epsilon"]
    for key in ("dpscd", "dpsgd"):
        run = out[key]
        assert run.epsilon <= target and run.wall_time_s < 5 and not run.diverged
    assert out["dpscd"].config["noise_multiplier"] == out["calibration"].dpscd_plan.calibration.noise_multiplier


def test_the_time_estimate_counts_the_iterations_each_run_executes():
    out = run_dpscd_preset("ridge")
    # N = 2 000, M = 20: DP-SCD and DP-SGD 10 epochs of L = 50, SeqDP-SCD 10 epochs of 5, PrimalDP-SCD 10 passes
    # over the 20 coordinates in blocks of 10 (DPSCD_PRESETS["ridge"])
    expected = {"dpscd": 400, "dpsgd": 400, "seqdpscd": 4000, "primaldpscd": 20}
    for name in ALGORITHMS:
        planned = planned_steps(problem=out["problem"], settings=out["settings"], algorithm=name)[0]
        assert planned == out[name].config["steps"] == expected[name]


def test_the_hinge_optimum_skips_a_zero_example_without_a_warning(svm):
    import warnings

    X = np.vstack([np.zeros((1, svm.features)), svm.X])
    padded = DualProblem(loss="hinge", X=X, y=np.concatenate([[1.0], svm.y]), regularization=svm.regularization,
                         X_test=svm.X_test, y_test=svm.y_test)
    # the zero example adds the constant 1/N to P and scales the data term by (N - 1)/N: the same θ* as the
    # problem without it at λ·N/(N - 1)
    n = padded.examples
    rescaled = DualProblem(loss="hinge", X=svm.X, y=svm.y, regularization=svm.regularization * n / (n - 1),
                           X_test=svm.X_test, y_test=svm.y_test)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        theta, value = padded.optimum
    assert np.all(np.isfinite(theta))
    assert value == pytest.approx(padded.primal(rescaled.optimum[0]), rel=1e-8)  # λ not rescaled: 7.6e-7 off


def test_dpsgd_without_noise_approaches_the_optimum_and_detects_divergence(ridge):
    good = run_dpsgd(problem=ridge, batch_size=ridge.examples, steps=400, clipping_norm=1e6, noise_multiplier=0.0,
                     learning_rate=1.0)
    assert good.final["dist_sq"] < 1e-6
    bad = run_dpsgd(problem=ridge, batch_size=10, steps=400, clipping_norm=1e6, noise_multiplier=0.0,
                    learning_rate=1e6)
    assert bad.diverged and bad.final["loss"] is None


@pytest.mark.parametrize("options, name", [({"batch_size": 0}, "batch_size"), ({"clipping_norm": 0.0}, "clipping_norm"),
                                           ({"sampling": "shuffle"}, "sampling"), ({"steps": 0}, "steps")])
def test_bad_options_name_the_parameter(ridge, options, name):
    base = {"problem": ridge, "batch_size": 10, "steps": 5, "clipping_norm": 1.0, "noise_multiplier": 1.0}
    with pytest.raises(ValueError, match=name):
        run_dpscd(**(base | options))


def test_classification_losses_need_binary_data():
    with pytest.raises(ValueError, match="binary"):
        make_dual_problem(dataset=load_dataset("iris"), loss="hinge", regularization=0.1)
