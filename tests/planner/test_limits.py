"""Size and memory limits (planner/limits.py): decided before work, named in the error, raisable by the user."""

from __future__ import annotations

import re

import pytest

from fedplan.planner import limits
from fedplan.planner.cli import main
from fedplan.planner.tasks.simulate import SimulateFedbuff


@pytest.mark.parametrize("text, size", [("2GiB", 2 * 2**30), ("512M", 512 * 2**20), ("1e9", 10**9), ("10 kb", 10240),
                                        (4096, 4096)])
def test_sizes_read_as_users_type_them(text, size):
    assert limits.parse_size("max_memory", text) == size


@pytest.mark.parametrize("text", ["", "lots", "-1", "0", "1e30", "2 parsecs", "nan"])
def test_bad_sizes_are_refused_by_name(text):
    with pytest.raises(ValueError, match="max_memory must be a size"):
        limits.parse_size("max_memory", text)


def test_a_synthetic_data_set_over_the_memory_limit_is_refused_at_construction():
    # 4 copies × 8 bytes × 10⁹ × 21 columns = 626 GiB
    refused = ("n_samples=1000000000 × n_features=20 would need about 626 GiB of memory for the synthetic data set; "
               "the limit is 2 GiB (raise it with --max-memory or FEDPLAN_MAX_MEMORY)")
    with pytest.raises(limits.LimitError, match=re.escape(refused)):
        SimulateFedbuff(n_samples=10**9)
    with pytest.raises(limits.LimitError, match=r"clients=1000000000 would need about 3.73 TiB"):
        SimulateFedbuff(clients=10**9)
    # 4 × 8 × 10⁶ × 21 = 641 MiB: refused under 512 MiB, accepted under the default
    with limits.using(memory=512 * limits.MIB), pytest.raises(limits.LimitError, match="641 MiB"):
        SimulateFedbuff(n_samples=10**6)
    assert SimulateFedbuff(n_samples=10**6).n_samples == 10**6


def test_the_command_line_raises_a_limit_for_one_command(capsys, monkeypatch):
    assert main(["simulate", "fedbuff", "--n-samples", "1e6", "--max-memory", "512MiB", "--rounds", "1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the limit is 512 MiB (raise it with --max-memory" in err
    monkeypatch.setenv("FEDPLAN_MAX_MEMORY", "100MiB")
    assert main(["simulate", "fedbuff", "--n-samples", "1e6", "--rounds", "1"]) == 2
    assert "the limit is 100 MiB" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # argparse's own usage error: exit 2
        main(["simulate", "fedbuff", "--n-samples", "1e6", "--max-memory", "lots", "--rounds", "1"])
    assert usage.value.code == 2
    assert "argument --max-memory: must be a size such as 512MiB or 2GiB; got 'lots'" in capsys.readouterr().err


def test_the_environment_variable_must_be_a_size(monkeypatch):
    monkeypatch.setenv("FEDPLAN_MAX_FILE_SIZE", "big")
    with pytest.raises(ValueError, match="FEDPLAN_MAX_FILE_SIZE must be a size"):
        limits.current()


def test_a_billion_mapa_iterations_export_without_a_per_iteration_array(tmp_path):
    from fedplan.planner.tasks.registry import TASKS

    schedule_type = next(task for task in TASKS if task.command == ("mapa", "schedule"))
    with limits.using(memory=64 * limits.MIB):  # a per-iteration array alone would be 7.45 GiB
        report = schedule_type(iterations=10**9, initial_gap=1.0, out=str(tmp_path / "m.csv")).run()
    assert report.values["out"].endswith("m.csv")
    last = (tmp_path / "m.csv").read_text().strip().splitlines()[-1].split(",")
    per_upload = max(report.result.result.privacy.per_iteration_epsilon)
    assert float(last[-1]) == pytest.approx(10**9 * per_upload, rel=1e-12)  # basic composition t·ε at t = T


def test_per_round_rows_are_checked_against_the_memory_limit_and_need_a_csv(tmp_path):
    import fedplan

    with pytest.raises(ValueError, match="per_round writes one CSV row per round; the json export"):
        fedplan.federated(clients=1000, clients_per_round=10, rounds=100, noise_multiplier=1.0,
                          out=str(tmp_path / "a.json"), per_round=True)
    with pytest.raises(limits.LimitError, match="per_round with 1000000000 rounds would need about"):
        fedplan.federated(clients=10**9, clients_per_round=1, rounds=10**9, noise_multiplier=1.0,
                          out=str(tmp_path / "a.csv"), per_round=True)


def test_a_simulation_longer_than_the_time_limit_is_refused_before_it_starts():
    # 10⁷ rounds × 10 updates at (4e-5 + 2e-7 × 20) s = 4 400 s > 3 600 s
    refused = ("rounds=10000000 × buffer_size=10 is about 1e+08 client updates, an estimated 1.22 h; the time limit "
               "is 1 h (raise it with --max-seconds or FEDPLAN_MAX_SECONDS)")
    with pytest.raises(limits.LimitError, match=re.escape(refused)):
        SimulateFedbuff(rounds=10**7)
    with limits.using(seconds=2 * 3600):
        assert SimulateFedbuff(rounds=10**7).rounds == 10**7
    with limits.using(seconds=1), pytest.raises(limits.LimitError, match=r"an estimated 4.4 s; the time limit is 1 s"):
        SimulateFedbuff(rounds=10**4)  # 10⁵ updates × 4.4e-5 s


def test_validations_count_their_seeds_and_one_update_per_step_algorithms_count_steps():
    from fedplan.planner.tasks.simulate_papers import SimulateAdp2sgd
    from fedplan.planner.tasks.validate import ValidateTheorem5

    with limits.using(seconds=1), pytest.raises(limits.LimitError, match=r"^rounds=1000 × clients=10 × 3 seeds is "
                                                                         r"about 3e\+04 client updates"):
        ValidateTheorem5(rounds=1000)
    with limits.using(seconds=1), pytest.raises(limits.LimitError, match=r"^steps=100000 is about 1e\+05 client"):
        SimulateAdp2sgd(steps=100_000)


def test_a_schedule_of_too_many_distinct_segments_is_refused_and_the_time_budget_holds_inside_a_composition():
    import time

    from fedplan.bounds import accounting
    from fedplan.planner.tasks.accounting import Epsilon

    rates = [0.001 + 1e-5 * i for i in range(300)]
    segments = [(q, 1.1, 5) for q in rates]
    with limits.using(segments=299), pytest.raises(limits.LimitError, match="segments has 300 distinct "
                                                                            r"\(sample_rate, noise_multiplier\) pairs; "
                                                                            "the limit is 299"):
        Epsilon(segments=segments, delta=1e-5)
    accounting.clear_cache()
    start = time.monotonic()
    result = Epsilon(segments=segments, delta=1e-5, time_budget=0.5).run().result
    elapsed = time.monotonic() - start
    # 300 PLD builds take seconds; the deadline is checked between segments, so the RDP answer comes soon after 0.5 s
    assert result.accountant == "rdp" and "time budget of 0.5 s" in result.fallback_reason
    assert elapsed < 3


def test_presets_and_sweeps_are_checked_against_the_time_limit():
    from fedplan.planner.simulate.sweep import parse_sweep
    from fedplan.planner.tasks.simulate import PRESET_SECONDS, SimulatePreset

    with limits.using(seconds=20), pytest.raises(limits.LimitError, match=r"^preset vandijk-dp, an estimated 50 s; the "
                                                                          r"time limit is 20 s"):
        SimulatePreset(preset="vandijk-dp")
    assert SimulatePreset(preset="vandijk-dp-constant").seconds() == PRESET_SECONDS["vandijk-dp-constant"]
    config = {"algorithm": "preset", "grid": {"preset": ["vandijk-dp-constant", "vandijk-dp-constant"]}, "seeds": 2}
    with limits.using(seconds=59), pytest.raises(limits.LimitError, match=r"^sweep config: 2 cell\(s\) × 2 seed\(s\) "
                                                                          r"of preset, an estimated 60 s"):
        parse_sweep(config=config)
    with limits.using(seconds=60):
        assert len(parse_sweep(config=config).cells) == 2


def test_a_yaml_schedule_above_the_yaml_limit_is_refused_before_parsing(tmp_path, capsys, monkeypatch):
    import yaml

    from fedplan.planner.cli import main

    path = tmp_path / "plan.yaml"
    path.write_text("segments:\n" + "- {sample_rate: 0.01, noise_multiplier: 1.1, steps: 3}\n" * 12_000)
    monkeypatch.setattr(yaml, "load", lambda *args, **kwargs: pytest.fail("parsed a YAML file above the limit"))
    assert main(["epsilon", "--schedule", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "schedule file 'plan.yaml' is 645 KiB of YAML; the limit is 512 KiB" in err
    assert err.endswith("give it as JSON (a .json file)\n")


def test_a_dpscd_comparison_is_refused_from_its_iterations_before_anything_runs(monkeypatch, capsys):
    # The fuzz input that ran past its 45 s cap (CI seed 3007276267): epochs 917.6 makes SeqDP-SCD's batch of 5
    # ⌊917.5859310859299 · 2000 / 5⌋ = 367 034 Python iterations. The preset's other runs: DP-SCD ⌊917.58… · 2000/50⌋,
    # DP-SGD 10 · 2000/50, PrimalDP-SCD 10 · 20/10 (N = 2 000 training examples of M = 20 features).
    from fedplan.planner.tasks import simulate_papers

    def ran(**_):
        raise AssertionError("a run started although the estimate is over the limit")

    monkeypatch.setattr(simulate_papers, "compare_algorithms", ran)
    monkeypatch.setattr(simulate_papers, "validate_dpscd", ran)
    request = simulate_papers.SimulateDpscd(learning_rate=1.363151193569909e+91, epochs=917.5859310859299, seed=98)
    iterations = ("DP-SCD 36703 iterations, DP-SGD 400 iterations, SeqDP-SCD 367034 iterations, PrimalDP-SCD 20 "
                  "iterations on N = 2000 examples of M = 20 features, an estimated ")
    with limits.using(seconds=15), pytest.raises(limits.LimitError, match=re.escape(iterations) +
                                                 r"\d+ s; the time limit is 15 s"):
        request.run()
    # 367 034 SeqDP-SCD iterations at 250 µs + 5 × 35 µs each are 156 s on their own
    assert 156 < request.seconds() < 400
    with limits.using(seconds=3), pytest.raises(limits.LimitError, match=r"^DP-SCD 40000 iterations, DP-SGD 40000 "
                                                                         r"iterations, × 3 seeds on N = 2000"):
        simulate_papers.SimulateDpscd(validate=True, epochs=1000, dpsgd_epochs=1000).run()
    assert main(["simulate", "dpscd", "--epochs", "917.5", "--max-seconds", "15"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "SeqDP-SCD 367000 iterations" in err and "the time limit is 15 s" in err
    assert main(["simulate", "dpscd", "--epochs", "1e300"]) == 2  # ⌊1e300 · 2000/50⌋ has 302 digits
    assert "fedplan: error: DP-SCD 4e+301 iterations, DP-SGD 400 iterations, SeqDP-SCD 4e+302 iterations" in \
        capsys.readouterr().err
    # API fuzz seed 99: epochs 8.6e307 gives T beyond the largest float (OverflowError); ⌊8.6087e307 · 40⌋ = 3.44e309
    with pytest.raises(limits.LimitError, match=r"^DP-SCD 3.44e\+309 iterations, .* an estimated inf h; the time"):
        simulate_papers.SimulateDpscd(epochs=8.608657830830611e+307, accountant="rdp").run()


def test_a_sweep_of_dpscd_runs_is_checked_against_the_time_limit():
    from fedplan.planner.simulate.sweep import parse_sweep

    config = {"algorithm": "dpscd", "grid": {"epochs": [1, 1000]}}
    with limits.using(seconds=15), pytest.raises(limits.LimitError, match=r"^sweep config: 2 cell\(s\) × 1 seed\(s\) "
                                                                          r"of dpscd, an estimated \d+ s"):
        parse_sweep(config=config)
    assert len(parse_sweep(config={"algorithm": "dpscd", "grid": {"epochs": [1, 2]}}).cells) == 2


def test_a_dpscd_estimate_loads_each_data_source_once_and_equals_the_estimate_on_the_loaded_problem(monkeypatch):
    from fedplan.planner.tasks import simulate_papers

    loads = []
    load = simulate_papers.load_dataset
    monkeypatch.setattr(simulate_papers, "load_dataset", lambda *a, **k: loads.append(a) or load(*a, **k))
    simulate_papers._data_shape.cache_clear()
    requests = [simulate_papers.SimulateDpscd(preset="svm", dataset="breast_cancer", batch_size=b, seed=7)
                for b in (10, 20, 40)]
    seconds = [request.seconds() for request in requests for _ in range(2)]
    assert len(loads) == 1  # six estimates of one source and seed: one load
    for request, estimate in zip(requests, seconds[::2], strict=True):
        assert estimate == request.seconds(*request.settings())  # the same numbers as on the loaded problem


def test_a_presets_dataset_is_a_binary_libsvm_file_and_its_time_scales_with_the_files_size(tmp_path):
    # API fuzz seed 4242: dataset="synthetic-softmax" ran the w8a preset on a 10-class synthetic set, 36 s against the
    # 15 s measured on w8a (the time limit's estimate), past the 45 s cap on a loaded machine.
    from fedplan.planner.tasks.simulate import PRESET_SECONDS, W8A_BYTES, SimulatePreset

    with pytest.raises(ValueError, match=r"^dataset must be the path of a LIBSVM file such as w8a.libsvm .*got "
                                         r"'synthetic-softmax'"):
        SimulatePreset(preset="vandijk-dp-constant", dataset="synthetic-softmax")
    double = tmp_path / "double.libsvm"
    double.write_bytes(b"1 1:0.5\n" * (2 * W8A_BYTES // 8 + 1))  # twice w8a's bytes
    assert SimulatePreset(preset="vandijk-dp-constant", dataset=str(double)).seconds() == pytest.approx(
        2 * PRESET_SECONDS["vandijk-dp-constant"], rel=1e-5)
    with limits.using(seconds=20), pytest.raises(limits.LimitError, match=r"^preset vandijk-dp-constant on .*double"
                                                                          r"\.libsvm, an estimated 30 s"):
        SimulatePreset(preset="vandijk-dp-constant", dataset=str(double))
    classes = tmp_path / "three_classes.libsvm"
    classes.write_text("".join(f"{i % 3} 1:{i / 100} 2:{1 - i / 100}\n" for i in range(200)))
    with pytest.raises(ValueError, match=r"^dataset must hold a binary task, as w8a does .* is multiclass"):
        SimulatePreset(preset="vandijk-dp-constant", dataset=str(classes)).run()


def test_byzantine_batches_count_in_the_time_estimate_and_the_memory_limit():
    # API fuzz seed 5150: batch_size = 1e12 asked numpy for 72.8 TiB of row indices (MemoryError traceback); the time
    # estimate had counted one update per worker and round whatever the batch (measured: 9.9 s at batch 1e5, 50
    # rounds, estimated 0.022 s).
    from fedplan.planner.tasks.simulate import estimated_seconds
    from fedplan.planner.tasks.simulate_papers import SimulateByzantine, SimulateKardam

    # 50 rounds × 10 workers: 500 updates at 4e-5 + 2e-7·20 s and 5e7 examples at 4e-7 + 1.2e-8·20 s
    assert estimated_seconds(SimulateByzantine(batch_size=100_000, rounds=50)) == pytest.approx(
        500 * 4.4e-5 + 5e7 * 6.4e-7, rel=1e-6)
    with pytest.raises(limits.LimitError, match=r"^rounds=100 × clients=10 gradients of batch_size=1000000000000 "
                                                r"examples is about 1.45e\+13 client updates"):
        SimulateByzantine(rule="krum", batch_size=10**12, seed=1)
    with pytest.raises(limits.LimitError, match=r"^clients=10 × batch_size=1000000000000 would need about .* TiB of "
                                                r"memory for one round's honest mini-batches"):
        SimulateKardam(batch_size=10**12)
