"""fedplan's one vocabulary: every request field name and the one thing it means, in every command.

A paper's own symbol stays in help texts and docstrings (σ, z, K, ξ₁…); the name says what the number is.
``tests/planner/test_vocabulary.py`` walks the command line: every option must be a term here, and no flag may
mean two things. ``docs/VOCABULARY.md`` is written from this table (``python -m fedplan.planner.tasks.vocabulary``).
"""

from __future__ import annotations

TERMS: dict[str, str] = {
    # --- privacy: targets, evaluation points, mechanisms
    "target_epsilon": "the ε the plan must not exceed (a target)",
    "target_delta": "the δ of the target (ε, δ)",
    "epsilon": "the ε at which a δ is reported (not a target)",
    "delta": "the δ at which an ε is reported (not a target)",
    "upload_epsilon": "Li et al.: ε of each upload (pure ε-DP per upload), one value or one per edge",
    "noise_multiplier": "noise std / clipping norm of the Gaussian noise added to the sum of clipped gradients "
                        "(Opacus' and TF-Privacy's noise_multiplier)",
    "noise_multiplier_range": "the range searched for the smallest noise_multiplier that meets a target",
    "noise_to_sensitivity": "Xu et al.'s z: noise std / replace-one sensitivity 2G/B of the averaged minibatch "
                            "gradient (the noise_multiplier of the same noise is 2z)",
    "noise_std": "absolute standard deviation of the Gaussian noise (not divided by a clipping norm)",
    "noise_scale": "scale b of Laplace noise",
    "gradient_std": "standard deviation of one per-sample gradient around the full gradient (Li et al.'s σ)",
    "clipping_norm": "per-example gradient clipping norm C (L2; L1 for a Laplace mechanism)",
    "sample_rate": "share q of the data a step uses: Poisson probability, or m/N (fixed_size), s/N "
                   "(with_replacement), batch size / N (shuffle)",
    "sampling": "how records join a step: poisson, fixed_size, with_replacement or shuffle",
    "client_sample_rate": "two-stage sampling: probability that a record's client takes part in a round",
    "dataset_size": "number N of records (or of clients, for client-level sampling) a step samples from",
    "neighboring_relation": "which data sets are neighbours: add_or_remove_one or replace_one",
    "accountant": "the privacy accountant that computes ε (pld, rdp, or a paper's own)",
    "time_budget": "seconds the tight PLD accountant may take before the RDP answer is reported instead (an error "
                   "where the sampling has no RDP bound)",
    "mechanism": "the noise mechanism (laplace, gaussian, none)",
    # --- schedule and run length
    "steps": "number of noisy gradient steps T",
    "rounds": "number of server rounds T",
    "iterations": "Li et al.: number of cloud updates T (one upload each)",
    "epochs": "passes over the data",
    "plan_schedule": "API only: a plan's Schedule itself, validated as it is (the command line reads --schedule)",
    "schedule": "a schedule file (segments for the accountant; an exported fedplan schedule for a simulation)",
    "segments": "API only: a list of (sample_rate, noise_multiplier, steps) segments",
    "out": "the file to write (format from its extension, or --format)",
    "format": "the format of --out: csv, json, yaml (fedplan's own; they load back) or opacus, flower, tf-privacy "
              "(the library's configuration)",
    "library_accountant": "the accountant a library export's noise_multiplier is calibrated for: fedplan (its tight "
                          "accountant) or the library's own (rdp: Opacus, Flower; prv: Opacus)",
    "per_round": "CSV export with one row per round instead of one per change of parameters",
    # --- data and clients
    "dataset": "the data: a LIBSVM file, synthetic, or a scikit-learn set name",
    "test_file": "a separate LIBSVM test file",
    "test_fraction": "share of the data held out for testing",
    "n_samples": "size of a synthetic data set",
    "n_features": "features of a synthetic data set",
    "examples": "number of training examples N",
    "clients": "number of clients N",
    "client_size": "records per client (van Dijk's N_c, Zhou's d_i)",
    "workers": "number of workers (Xu's K, Kardam's and Byzantine rules' n)",
    "edges": "Li et al.: number of edge servers K",
    "examples_per_worker": "records of the smallest worker (Xu's n₍₁₎)",
    "batch_size": "mini-batch size per update (B, b, L)",
    "model": "the model trained (logistic, softmax, ridge)",
    "regularization": "L2 regularisation coefficient",
    "seed": "seed of one run",
    "seeds": "seeds of several runs",
    "noise": "how a plan chooses σ: tight (calibrated by the tight accountant for the sampling that runs) or paper "
             "(the paper's own rule)",
    "max_examples_per_user": "a bound on the examples one user holds: an example-level run is given a user-level "
                             "guarantee by group privacy",
    "recipe": "the paper's planning recipe of the ε-first planner (increasing-sizes, fedsgd-dpc, dpscd, adp2sgd, mapa)",
    "features": "API only: the features, one row per example",
    "labels": "API only: the label of each row of features",
    # --- van Dijk et al. and Zhou et al. (planner/tasks/vandijk.py, fedsgd_dpc.py)
    "initial_size": "van Dijk et al.'s s_{0,c}: the sample size of a client's first round",
    "grad_computations": "van Dijk et al.'s K: gradient computations of one client over all rounds",
    "growth_exponent": "van Dijk et al.'s p: sample rates grow as q_i = q (i+m)^p",
    "r0": "van Dijk et al.'s r0: r0(sigma) (the paper's function of the noise multiplier), 1/e or a number",
    "offset_ratio": "van Dijk et al.'s γ: a bound on m/T, the offset m of q_i = q (i+m)^p over the rounds T",
    "case": "van Dijk et al.'s parameter-selection case: 1 (K ≤ K⁻) or 2 (K ≥ K⁺)",
    "k_plus_multiple": "van Dijk et al.'s k: in case 2, K may reach k·K⁺",
    "max_passes": "van Dijk et al.: the most passes of the m/T iteration of the parameter selection",
    "no_pld": "skip the tight PLD accountant (RDP only, faster)",
    "decay": "β of the decaying learning rate η_t = η0/(1+βt) or η0/(1+β√t)",
    "step_rule": "how the learning rate changes over the run: van Dijk's inverse (η0/(1+βt)) or inverse-sqrt "
                 "(η0/(1+β√t)); Li's eq10 (Eq. (10)) or constant",
    "strong_convexity": "μ: strong-convexity constant of every client's objective",
    "heterogeneity": "Zhou et al.'s Γ: the non-iid degree F* − Σ (d_i/d) F_i*",
    "initial_distance": "Zhou et al.'s Y₀ = ‖θ₀ − θ*‖²: the squared distance of the initial model to the optimum",
    "local_gradient_std": "Zhou et al.'s Λ_i: std of a per-sample gradient around the client's full gradient",
    "non_iid": "split the data over the clients by sorted label instead of at random",
    "noise_constant": "Zhou et al.'s c₂ of Eq. (5): the unknown constant of the Gaussian noise, assumed",
    "max_rounds": "a cap on the number of rounds T a search may choose",
    "fixed_clients_per_round": "Zhou et al.: optimise T for this number of clients per round b",
    "fixed_rounds": "Zhou et al.: optimise the clients per round b for this number of rounds T",
    # --- Xu et al., Li et al., Damaskinos (planner/tasks/adp2sgd.py, mapa.py, damaskinos.py)
    "worker_steps": "Xu et al.: the most updates one worker makes (the per-worker accountant's count)",
    "reference_accountant": "the accountant of the Poisson add/remove-one reference shown next to a paper's own "
                            "number",
    "noise_on": "where noise_std is added: to the averaged minibatch gradient (mean) or to the sum",
    "variant": "which form of a paper's formula: corrected (re-derived, errata applied) or paper (as printed)",
    "noise_source": "Xu et al.: where the noise for a target ε comes from (Theorem 2, the tight accountant, auto)",
    "learning_rate": "step size η (γ) of the updates",
    "initial_gap": "F₀ = f(x₁) − f(x*), the initial suboptimality",
    "smoothness": "smoothness L: Lipschitz constant of the gradient",
    "gradient_bound": "G: a bound on the gradient norm (on every per-sample gradient where a sensitivity is derived)",
    "model_dim": "model dimension (number of parameters)",
    "failure_probability": "Li et al.'s Theorem 3 δ: the Chebyshev probability that the assumed sensitivity fails "
                           "(not a DP δ)",
    "sensitivity_decay": "Li et al.'s θ: each MAPA stage's sensitivity is θ times the previous one",
    "sensitivity": "a given L2 sensitivity ΔS of the released (averaged) gradient",
    "initial_sensitivity": "Li et al.: the first MAPA stage's sensitivity ΔS₀ (instead of Theorem 3's)",
    "initial_clipping_norm": "Li et al.: the first MAPA stage's per-sample clip C₀ (ΔS₀ = 2C₀/b)",
    "noise_variance_bound": "Li et al.'s Δ_b = σ²/b + E‖η‖², the variance bound of one noisy gradient",
    "noise_model": "Li et al.: E‖η‖² of the upload noise as the paper states it (paper) or for the private mechanism "
                   "on R^N (corrected)",
    "update_rule": "Li et al.: how MAPA lowers the sensitivity between stages (theta or theory)",
    "p_reference": "Li et al.: which sensitivity enters Eq. (16)'s P (the current stage's or the first)",
    "max_staleness": "the largest staleness τ_max an update may have",
    "delta_slack": "δ' of advanced composition: the δ at which the composed ε is reported",
    "radius": "R: a bound on the distance ‖x_t − x*‖ of every iterate to the optimum",
    "no_compare": "skip the calibration under the other accountant",
    "staleness_threshold": "AdaSGD's τ_thres, the s-th percentile of staleness; its dampening meets 1/(τ+1) at "
                           "τ_thres/2",
    "staleness_values": "staleness values τ at which a dampening is reported",
    "staleness_mean": "mean of the Gaussian staleness law",
    "staleness_std": "standard deviation of the Gaussian staleness law",
    "rule": "the Byzantine-resilient aggregation rule (krum, multi-krum, bulyan, kardam, …; averaging is not)",
    "faults": "number of Byzantine workers f the rule must tolerate (assumed by the server)",
    # --- simulations, validations and sweeps (planner/tasks/simulate*.py, validate.py, sweep.py)
    "partition": "how a data set is split over the clients (iid, label, dirichlet)",
    "dirichlet_alpha": "concentration α of the Dirichlet class shares of partition dirichlet (small: skewed)",
    "classes_per_client": "classes each client holds with partition label",
    "compute_time": "distribution of the time of one local computation (constant, exponential, lognormal)",
    "compute_mean": "mean time of one local computation: one value or one per client",
    "latency": "distribution of the up- and down-link message latencies",
    "latency_mean": "mean message latency (in the time unit of compute_mean)",
    "eval_every": "a simulation evaluates loss and accuracy every this many rounds",
    "optimum": "also compute the optimum w* so that a simulation reports ||w − w*||²",
    "growth": "van Dijk simulation: local iterations added per round, s_{i,c} = initial_size + ⌈growth·i⌉",
    "wait_rule": "van Dijk et al.: when the server waits for late clients (none, exact, alg1_literal, …)",
    "permissible_delay": "van Dijk et al.'s τ: the delay (in local iterations) a wait rule permits",
    "round_threshold": "van Dijk et al.'s d: the round threshold of the d_round wait rules and Theorem 5's sizes",
    "clients_per_round": "clients sampled per round (Zhou et al.'s b, Flower's num_sampled_clients m)",
    "selection": "how the clients of a round are chosen (uniform, round_robin, shuffle_partition)",
    "buffer_size": "FedBuff's K: client updates aggregated per server update",
    "server_lr": "the server's step size η on the aggregated update",
    "staleness_weighting": "FedBuff: the weight ω(s) of an update of staleness s (constant, polynomial, threshold)",
    "staleness_exponent": "a of FedBuff's polynomial staleness weight (1+s)^-a",
    "staleness_cutoff": "staleness above which FedBuff's threshold weight is 0",
    "staleness_model": "Xu et al.: how stale a read is (event: measured; fixed, uniform: drawn up to max_staleness)",
    "staleness_policy": "Li et al.: what the cloud does with uploads staler than τ_max (drop or none)",
    "worker_order": "Xu et al.: which worker updates at step t (random, as the paper; round_robin: t mod K)",
    "upload_order": "Li et al.: the order edges upload in (random compute times, or round_robin: in turn)",
    "topology": "the gossip graph of the workers (ring, torus, complete, random_regular)",
    "degree": "neighbours per worker of a random regular graph",
    "preset": "a named experiment whose settings replace the options",
    "validate": "run every seed of seeds and check the paper's claims instead of one run",
    "algorithm": "which algorithm of a command runs (simulate mapa: mapa or audp)",
    "dpsgd_batch_size": "the DP-SGD baseline's mini-batch size",
    "dpsgd_epochs": "the DP-SGD baseline's passes over the data",
    "dpsgd_clipping_norm": "the DP-SGD baseline's per-example clipping norm",
    "byzantine_workers": "number of Byzantine workers there actually are (faults is what the server assumes)",
    "attack": "what a Byzantine worker sends (sign_flip, noise, stale_replay, little, none)",
    "attack_scale": "s of the sign_flip (−s·g) and noise (N(0, s²)) attacks",
    "gradients_per_step": "Kardam's R: gradients per model update",
    "dampening": "the staleness dampening Λ(τ) of asynchronous SGD (inverse, exponential, adasgd, constant)",
    "dampening_rate": "a of the exponential dampening exp(−aτ)",
    "adaptive_rate": "Kardam: learning rate γ_t = γ·φ_t (Eq. 5.2)",
    "no_filters": "Kardam without its filters (plain dampened asynchronous SGD)",
    "arrivals": "the order in which gradients reach the server (event, iid, round_robin)",
    "config": "a sweep config file (YAML)",
    "scheduler": "address of a Dask scheduler (tcp://HOST:PORT)",
    "processes": "number of local processes a sweep runs in",
    "keep_partial": "keep a failed sweep's partial table (the rows finished before the failure)",
}


def deprecated_spellings() -> list[tuple[str, str, str]]:
    """``(command, old spelling, field)`` for every old spelling the command line still accepts."""
    from fedplan.planner.tasks.base import options
    from fedplan.planner.tasks.registry import TASKS

    return [(" ".join(task.command), old, name) for task in TASKS for name, option in options(task).items()
            for old in option.deprecated]


def markdown() -> str:
    """The vocabulary and the deprecated spellings as the Markdown of ``docs/VOCABULARY.md``."""
    terms = "\n".join(f"| `{name}` | {meaning} |" for name, meaning in sorted(TERMS.items()))
    old = "\n".join(f"| `fedplan {command}` | `{spelling}` | `--{name.replace('_', '-')}` |"
                     for command, spelling, name in deprecated_spellings())
    return ("# Vocabulary\n\nEvery option of the `fedplan` command line and every field of a request (the Python "
            "API) means one thing, everywhere.\nA paper's own symbol is kept in the help text. This file is "
            "generated from `planner/tasks/vocabulary.py`:\n`python -m fedplan.planner.tasks.vocabulary > "
            "docs/VOCABULARY.md` (a test checks that it is current).\n\n"
            f"| name | meaning |\n|---|---|\n{terms}\n\n"
            "## Old spellings\n\nThese still work in this release and print a note on stderr; they go in "
            "fedplan 0.3. An old spelling may have meant something else in another command: that is why it "
            "goes.\n\n"
            f"| command | old spelling | use |\n|---|---|---|\n{old}\n")


if __name__ == "__main__":
    print(markdown(), end="")
