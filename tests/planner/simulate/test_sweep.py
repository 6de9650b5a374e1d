"""planner.simulate.sweep: config validation from the requests' fields, grid/random cells, rows = fedplan simulate
runs, backends agree."""

import csv
import json
import math
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import pyarrow.parquet as pq
import pytest

from fedplan.planner import limits
from fedplan.planner.cli import main
from fedplan.planner.simulate import data as data_module
from fedplan.planner.simulate import sweep as sweeps
from fedplan.planner.simulate.sweep import RUNNERS, load_sweep, parse_sweep, run_sweep, write_table
from fedplan.planner.tasks.base import Report
from fedplan.planner.tasks.simulate import SimulateFedbuff

#: A tiny FedBuff problem: one run takes a few milliseconds.
TINY = {"n_samples": 300, "n_features": 4, "clients": 4, "rounds": 5, "sample_rate": 0.1, "buffer_size": 2,
        "clipping_norm": 1.0, "eval_every": 5}


def tiny_sweep(**changes):
    """The TINY options without those the change sweeps."""
    swept = {*changes.get("grid", {}), *changes.get("random", {}).get("parameters", {})}
    options = {name: value for name, value in TINY.items() if name not in swept}
    return parse_sweep(config={"algorithm": "fedbuff", "options": options, **changes})


def without_wall_time(rows):
    return [{key: value for key, value in row.items() if key != "wall_time_s"} for row in rows]


def test_grid_is_the_cartesian_product_in_written_order_and_runs_are_cell_major():
    sweep = tiny_sweep(grid={"noise_multiplier": [0.5, 1, 2], "server-lr": [1, 2]}, seeds=[7, 3])
    assert sweep.parameters == ("noise_multiplier", "server_lr") and sweep.size == 12
    assert sweep.cells[:3] == ({"noise_multiplier": 0.5, "server_lr": 1.0}, {"noise_multiplier": 0.5, "server_lr": 2.0},
                               {"noise_multiplier": 1.0, "server_lr": 1.0})
    assert all(isinstance(cell["server_lr"], float) for cell in sweep.cells)  # float options become floats
    runs = sweep.runs()
    assert [(run.index, run.cell, run.seed) for run in runs[:4]] == [(0, 0, 7), (1, 0, 3), (2, 1, 7), (3, 1, 3)]
    assert runs[7].options == {**TINY, "noise_multiplier": 1.0, "server_lr": 2.0}
    assert runs[7].request == SimulateFedbuff(**TINY, noise_multiplier=1.0, server_lr=2.0, seed=3)
    assert sweep.columns[:6] == ("run", "cell", "algorithm", "noise_multiplier", "server_lr", "seed")


def test_a_row_is_the_run_fedplan_simulate_gives_for_the_same_options_and_seed(capsys):
    result = run_sweep(sweep=tiny_sweep(grid={"noise_multiplier": [0.0, 2.0]}, seeds=[0, 4]), processes=1)
    row = result.rows[3]
    assert (row["noise_multiplier"], row["seed"]) == (2.0, 4)
    argv = ["simulate", "fedbuff", "--json", "--seed", "4", "--noise-multiplier", "2"]
    for name, value in TINY.items():
        argv += [f"--{name.replace('_', '-')}", str(value)]
    assert main(argv) == 0
    direct = json.loads(capsys.readouterr().out)
    for key in ("rounds", "final_loss", "final_accuracy", "epsilon", "delta", "virtual_time", "diverged"):
        assert row[key] == direct[key], key
    assert result.rows[0]["epsilon"] is None and row["epsilon"] > 0  # no noise: no finite epsilon to report
    assert result.rows[0]["final_loss"] != result.rows[1]["final_loss"]  # the seed reaches the run


def test_random_sweep_is_reproducible_within_its_ranges_and_follows_its_seed():
    random = {"samples": 200, "seed": 3, "parameters": {
        "noise_multiplier": {"log_uniform": [0.1, 10]}, "buffer_size": {"integers": [2, 4]},
        "server_lr": {"uniform": [0.5, 1.5]}, "staleness_weighting": {"choice": ["constant", "threshold"]}}}
    sweep = tiny_sweep(random=random)
    assert sweep.cells == tiny_sweep(random=random).cells and sweep.mode == "random" and sweep.size == 200
    assert sweep.cells != tiny_sweep(random={**random, "seed": 4}).cells
    sigma = np.array([cell["noise_multiplier"] for cell in sweep.cells])
    assert sigma.min() >= 0.1 and sigma.max() <= 10
    # log-uniform on [0.1, 10]: log10(sigma) is uniform on [-1, 1], half the draws below 1 (binomial sd 0.035)
    assert abs(np.mean(sigma < 1.0) - 0.5) < 0.12 and np.mean(sigma < 0.5) < 0.5
    assert {cell["buffer_size"] for cell in sweep.cells} == {2, 3, 4}
    assert all(type(cell["buffer_size"]) is int for cell in sweep.cells)
    assert all(0.5 <= cell["server_lr"] <= 1.5 for cell in sweep.cells)
    assert {cell["staleness_weighting"] for cell in sweep.cells} == {"constant", "threshold"}


def test_seeds_as_a_count_and_the_default():
    assert tiny_sweep(seeds=3).seeds == (0, 1, 2)
    assert tiny_sweep().seeds == (0,) and tiny_sweep().cells == ({},) and tiny_sweep().mode == "seeds"


@pytest.mark.parametrize(("changes", "message"), [
    ({"grd": {}}, "'grd' is not a sweep key"),
    ({"algorithm": "fedprox"}, "sweep config: algorithm must be one of 'vandijk'"),
    ({"options": {**TINY, "learning_rat": 1}}, "options.learning_rat is not an option of fedplan simulate fedbuff"),
    ({"options": {**TINY, "servr_lr": 1}}, "(did you mean server_lr?)"),
    ({"options": {**TINY, "rounds": 2.5}}, "sweep config: options.rounds must be an integer"),
    ({"options": {**TINY, "staleness_weighting": "linear"}},
     "options.staleness_weighting must be one of 'constant', 'polynomial'"),
    ({"options": {**TINY, "staleness": "linear"}}, "options.staleness must be one of 'constant', 'polynomial'"),
    ({"options": {**TINY, "staleness": "constant", "staleness_weighting": "constant"}},
     "options gives staleness_weighting twice (under its old and its new name)"),
    ({"options": {**TINY, "buffer_size": 0}}, "options.buffer_size must be an integer in [1, 1e+12]; got 0"),
    ({"grid": {"partition": ["iid", "dirichlet"]}},
     "cell 1 (partition='dirichlet'): partition dirichlet needs dirichlet_alpha"),
    ({"options": {**TINY, "validate": True}}, "options.validate is not an option of fedplan simulate fedbuff"),
    ({"options": {**TINY, "optimum": "yes"}}, "options.optimum must be true or false; got 'yes'"),
    ({"grid": {"noise_multiplier": 1}}, "grid.noise_multiplier must be a non-empty list of values; got 1"),
    ({"grid": {"noise_multiplier": [1, "x"]}}, "grid.noise_multiplier[1] must be a real number"),
    ({"grid": {"noise_multiplier": [1, -1]}}, "grid.noise_multiplier[1] must be a real number in [0, inf); got -1"),
    ({"options": TINY, "grid": {"rounds": [1, 2]}}, "rounds is both a fixed option and a grid parameter"),
    ({"grid": {"seed": [1, 2]}}, "grid.seed is not an option"),
    ({"grid": {"rounds": [1]}, "random": {}}, "give grid or random, not both"),
    ({"random": {"samples": 0, "parameters": {}}}, "random.samples must be an integer in [1, inf); got 0"),
    ({"random": {"samples": 2, "parameters": {"server_lr": {"normal": [0, 1]}}}},
     "random.parameters.server_lr must be one distribution {kind: values} with kind one of uniform"),
    ({"random": {"samples": 2, "parameters": {"server_lr": {"log_uniform": [0, 1]}}}},
     "random.parameters.server_lr.log_uniform[0] must be a real number in (0, inf); got 0"),
    ({"random": {"samples": 2, "parameters": {"buffer_size": {"uniform": [2, 5]}}}},
     "random.parameters.buffer_size (draw 0) must be an integer"),
    ({"random": {"samples": 2, "size": 3, "parameters": {}}}, "random.size is not a key of random"),
    ({"seeds": [1, 1]}, "seeds must be distinct; got [1, 1]"),
    ({"seeds": [0, -1]}, "seeds[1] must be an integer in [0, inf); got -1"),
])
def test_bad_configs_name_the_key(changes, message):
    with pytest.raises(ValueError, match="^sweep config: ") as error:
        tiny_sweep(**changes)
    assert message in str(error.value)


def test_a_required_option_must_be_given():
    with pytest.raises(ValueError, match="options.clients_per_round is required by fedplan simulate fedsgd-dpc"):
        parse_sweep(config={"algorithm": "fedsgd-dpc", "options": {"rounds": 3}})
    swept = parse_sweep(config={"algorithm": "fedsgd-dpc", "options": {"rounds": 3, "target_epsilon": 1},
                                "grid": {"clients_per_round": [2]}})
    assert swept.cells == ({"clients_per_round": 2},)
    # the cells' requests are built before anything runs: relations between options are checked there
    with pytest.raises(ValueError, match=r"^sweep config: cell 0 \(clients_per_round=2\): give exactly one of "
                                         "target_epsilon"):
        parse_sweep(config={"algorithm": "fedsgd-dpc", "options": {"rounds": 3}, "grid": {"clients_per_round": [2]}})


def test_old_option_names_are_accepted_and_named_in_the_summary():
    sweep = parse_sweep(config={"algorithm": "fedbuff", "grid": {"alpha": [0.5]},
                                "options": {**TINY, "staleness": "constant", "partition": "dirichlet"}})
    assert sweep.options["staleness_weighting"] == "constant" and sweep.parameters == ("dirichlet_alpha",)
    assert sweep.renamed == (("staleness", "staleness_weighting"), ("alpha", "dirichlet_alpha"))
    result = run_sweep(sweep=sweep, processes=1)
    assert "Old option names in the config: staleness (now staleness_weighting), alpha (now dirichlet_alpha)" \
        in result.to_dict()["statement"]
    assert result.rows[0]["dirichlet_alpha"] == 0.5


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_run_names_its_parameters_and_seed(workers, tmp_path):
    # the file exists and is small, so the config is accepted; it is read (and refused) when its run starts
    broken = tmp_path / "broken.libsvm"
    broken.write_text("1 1:0.5\nnot a label\n")
    sweep = tiny_sweep(grid={"dataset": ["synthetic", str(broken)]}, seeds=[5])
    with pytest.raises(ValueError, match=r"^run 1 \(dataset='.*broken.libsvm', seed 5\): .*broken.libsvm.*line 2"):
        run_sweep(sweep=sweep, processes=workers)


def test_a_value_no_run_could_use_is_refused_before_any_run():
    with pytest.raises(ValueError, match=r"^sweep config: cell 1 \(compute_mean=\[1.0, 2.0\]\): compute_mean must have "
                                         r"one value, or one per client \(clients=4\); got 2"):
        tiny_sweep(grid={"compute_mean": [[1.0], [1.0, 2.0]]}, seeds=[5])


def test_diverged_runs_are_flagged_and_never_the_best_cell():
    options = {**TINY, "dataset": "synthetic-linear"}
    result = run_sweep(sweep=parse_sweep(config={"algorithm": "fedbuff", "options": options,
                                                 "grid": {"server_lr": [1.0, 1e200]}, "seeds": 2}), processes=1)
    assert [row["diverged"] for row in result.rows] == [False, False, True, True]
    assert "stopped being finite" in result.rows[2]["divergence"] and result.rows[2]["final_loss"] is None
    summary = result.to_dict()
    assert summary["diverged"] == 2 and summary["best"]["server_lr"] == 1.0
    assert summary["best"]["mean_final_loss"] == pytest.approx((result.rows[0]["final_loss"]
                                                                + result.rows[1]["final_loss"]) / 2, rel=1e-15)


def test_cell_summary_reports_the_largest_epsilon_over_seeds():
    result = run_sweep(sweep=tiny_sweep(grid={"noise_multiplier": [1.0]}, seeds=4), processes=1)
    epsilons = [row["epsilon"] for row in result.rows]
    assert len(set(epsilons)) > 1  # clients release different numbers of times per seed
    assert result.cell_summaries()[0]["max_epsilon"] == max(epsilons)
    assert sweeps._max_epsilon([{"epsilon": 1.0}, {"epsilon": None}]) is None


def test_a_swept_option_named_like_a_result_keeps_both_columns():
    result = run_sweep(sweep=tiny_sweep(options={k: v for k, v in TINY.items() if k != "rounds"},
                                        grid={"rounds": [2, 3]}), processes=1)
    assert "result_rounds" in result.sweep.columns and "rounds" in result.sweep.columns
    assert [(row["rounds"], row["result_rounds"]) for row in result.rows] == [(2, 2), (3, 3)]


@dataclass(frozen=True, kw_only=True)
class Custom(SimulateFedbuff):
    """A registered request may answer with SimulationResult.to_dict keys of its own."""

    def run(self, *, progress=None) -> Report:
        return Report(values={"rounds": self.rounds, "final_loss": self.server_lr * 10 + self.seed, "diverged": False})


def test_a_new_runner_is_one_registry_entry(monkeypatch):
    monkeypatch.setitem(RUNNERS, "custom", Custom)
    result = run_sweep(sweep=parse_sweep(config={"algorithm": "custom", "grid": {"server_lr": [1, 2]}, "seeds": 2}),
                       processes=1)
    assert [row["final_loss"] for row in result.rows] == [10.0, 11.0, 20.0, 21.0]
    assert [row["algorithm"] for row in result.rows] == ["custom"] * 4 and result.rows[0]["rounds"] == 100


@contextmanager
def helpers_joining():
    """Within the block, helper processes start after this process's first run however short the work and busy the
    machine, and its second run waits until a helper is up (from a cold fork server that takes seconds), so that
    helpers take part in even a small sweep. A helper's runs are not held up: it imports this module anew."""
    execute, runs = sweeps.execute, []

    def second_waits(run):
        runs.append(run)
        give_up = time.monotonic() + 60
        while len(runs) == 2 and not sweeps._fork_server_up and time.monotonic() < give_up:  # set by a helper's start
            time.sleep(0.01)
        return execute(run)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sweeps, "START_COLD_SECONDS", 0.0)
        patch.setattr(sweeps, "START_WARM_SECONDS", 0.0)
        patch.setattr(sweeps._IdleCores, "now", lambda self: float(self.cores))
        patch.setattr(sweeps, "_fork_server_up", False)
        patch.setattr(sweeps, "execute", second_waits)
        yield


def unshared_rows(sweep):
    """The sweep's rows, every run building its own data (outside a sweep nothing is shared)."""
    return without_wall_time(sweeps.execute(run) for run in sweep.runs())


def test_a_run_failing_in_a_helper_process_fails_the_sweep_with_its_name(tmp_path):
    broken = tmp_path / "broken.libsvm"
    broken.write_text("1 1:0.5\nnot a label\n")
    # this process works through the 20 runs on synthetic data (2 000 rounds: still at it when the helper's first run,
    # which imports scikit-learn to read the file, fails), the helper takes the other data set's group
    sweep = tiny_sweep(grid={"dataset": ["synthetic", str(broken)], "server_lr": [float(lr) for lr in range(1, 21)]},
                       seeds=[5], options={**TINY, "rounds": 2000, "eval_every": 2000})
    with helpers_joining(), pytest.raises(ValueError, match=r"^run 20 \(dataset='.*broken.libsvm', server_lr=1.0, "
                                                            r"seed 5\): .*broken.libsvm.*line 2"):
        run_sweep(sweep=sweep, processes=2)


def test_processes_and_a_dask_local_cluster_give_the_inline_table_for_100_runs():
    from distributed import LocalCluster

    sweep = tiny_sweep(grid={"noise_multiplier": [0.5, 1, 2, 4], "server_lr": [0.5, 1, 2, 3, 4]}, seeds=5)
    assert sweep.size == 100
    inline = run_sweep(sweep=sweep, processes=1)
    seen, progress = [], []
    with helpers_joining():
        processes = run_sweep(sweep=sweep, processes=2, on_row=seen.append,
                              progress=lambda done, total: progress.append((done, total)))
    assert processes.processes_used == 2 and processes.note == ""
    assert progress[0] == (0, 100) and progress[-1] == (100, 100) and len(progress) == 101
    assert sorted(row["run"] for row in seen) == list(range(100))
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster:
        cluster_result = run_sweep(sweep=sweep, scheduler=cluster.scheduler_address)
    local_cluster = run_sweep(sweep=sweep, scheduler="local", processes=2)
    assert [row["run"] for row in cluster_result.rows] == list(range(100))
    assert without_wall_time(inline.rows) == unshared_rows(sweep)
    for other in (cluster_result, processes, local_cluster):
        assert without_wall_time(other.rows) == without_wall_time(inline.rows)
    assert cluster_result.backend.startswith("Dask at inproc://") and processes.backend == "2 processes"
    assert local_cluster.backend == "Dask LocalCluster of 2 processes"
    assert len({row["final_loss"] for row in inline.rows}) == 100
    # 5 data sets (one per seed): built once in this process, once or twice with a helper (which may share the
    # last runs of one), once per batch on Dask
    assert inline.built == {"load_dataset": 5, "make_problem": 5}
    assert 5 <= processes.built["load_dataset"] <= 6 and processes.built["make_problem"] == processes.built[
        "load_dataset"]
    assert local_cluster.built["load_dataset"] >= 5


def test_a_data_set_is_built_once_per_process_that_runs_it(monkeypatch):
    builds = []
    draw = data_module.synthetic_logistic
    monkeypatch.setattr(data_module, "synthetic_logistic", lambda *args, **kwargs: builds.append(args) or draw(
        *args, **kwargs))
    sweep = tiny_sweep(grid={"noise_multiplier": [0.5, 1, 2, 4], "server_lr": [0.5, 1, 2, 3, 4]}, seeds=[3])
    inline = run_sweep(sweep=sweep, processes=1)
    assert len(builds) == 1 and inline.built == {"load_dataset": 1, "make_problem": 1}  # 20 runs, one data set
    assert without_wall_time(inline.rows) == unshared_rows(sweep) and len(builds) == 21
    with helpers_joining():
        two = run_sweep(sweep=sweep, processes=2)  # the helper's builds are counted there and reported back
    assert two.processes_used == 2 and two.built == {"load_dataset": 2, "make_problem": 2}
    assert without_wall_time(two.rows) == without_wall_time(inline.rows)
    assert "Each process built a data set once and shared it with its runs (load_dataset 2×, make_problem 2×)" \
        in two.to_dict()["statement"]


def test_runs_are_handed_out_by_data_set_one_group_per_process_until_the_last_runs():
    runs = tiny_sweep(grid={"server_lr": [1, 2, 3, 4]}, seeds=3).runs()  # cell-major: seeds 0, 1, 2, 0, 1, 2, ...
    groups = sweeps._Groups(runs)
    assert len(groups) == 12

    def taken(taker, count):
        return [(run.seed, run.cell) for run in groups.take(taker, count)]

    assert taken("here", 1) == [(0, 0)]  # a group for each taker, in order of first run, from its front
    assert taken("helper", 2) == [(1, 0), (1, 1)]
    assert taken("here", 5) == [(0, 1), (0, 2), (0, 3)]  # never more than one group at a time
    assert taken("here", 1) == [(2, 0)]
    assert taken("helper", 1) == [(1, 2)]
    assert taken("other", 2) == [(2, 3), (2, 2)]  # every group started: the back of the largest one left
    assert taken("helper", 9) == [(1, 3)] and taken("helper", 9) == [(2, 1)] and len(groups) == 0


def test_shared_data_are_one_read_only_object_per_arguments():
    shared = sweeps._SharedData()
    with shared.active(group=(2,)):
        first = SimulateFedbuff(**TINY, seed=2).problem(2)
        again = SimulateFedbuff(**TINY, noise_multiplier=3.0, seed=2).problem(2)
        other = SimulateFedbuff(**TINY, seed=1).problem(1)
    assert again is first and other is not first and shared.built == {"load_dataset": 2, "make_problem": 2}
    assert not first.dataset.X_train.flags.writeable and not first.dataset.y_test.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        first.dataset.X_train[0, 0] = 1.0  # a run that writes into shared data fails instead of changing the next's
    fresh = SimulateFedbuff(**TINY, seed=2).problem(2)  # no sharing outside a sweep
    assert fresh is not first and fresh.dataset.X_train.flags.writeable
    np.testing.assert_array_equal(fresh.clients[3].X, first.clients[3].X)
    unhashable = sweeps._shared(lambda *, sizes: object())  # an unhashable argument: built every time
    with shared.active():
        assert unhashable(sizes=[1]) is not unhashable(sizes=[1])
    with shared.active(group=(2,)):  # the same group's next runs
        assert SimulateFedbuff(**TINY, seed=2).problem(2) is first
    with shared.active(group=(1,)):  # the runs of another group: the process holds its data alone
        assert not shared.entries and SimulateFedbuff(**TINY, seed=2).problem(2) is not first


def test_a_sweep_shorter_than_starting_a_helper_or_on_a_busy_machine_runs_here_and_says_so(monkeypatch):
    sweep = tiny_sweep(grid={"server_lr": [1, 2]}, seeds=2)
    monkeypatch.setattr(sweeps, "_fork_server_up", False)  # as in a new process
    result = run_sweep(sweep=sweep, processes=2)
    assert (result.backend, result.processes_used) == ("2 processes", 1)
    assert result.note.startswith("ran in this process alone: its 4 runs take at least ")
    assert "less than 1.25 × the 2 s helper processes take to start" in result.note
    assert f"It {result.note}." in result.to_dict()["statement"]
    monkeypatch.setattr(sweeps, "_fork_server_up", True)  # a later sweep: a helper is a fork of the running server
    assert "less than 1.25 × the 0.05 s helper" in run_sweep(sweep=sweep, processes=2).note
    monkeypatch.setattr(sweeps, "START_WARM_SECONDS", 0.0)
    monkeypatch.setattr(sweeps._IdleCores, "now", lambda self: 0.7)
    busy = run_sweep(sweep=sweep, processes=2)
    assert busy.processes_used == 1 and busy.note.startswith("ran in this process alone: other programs left 0.7 of "
                                                             "the machine's")
    assert run_sweep(sweep=sweep, processes=1).note == ""


def test_the_work_left_is_weighed_by_each_run_s_estimate_at_the_fastest_pace_measured():
    sweep = tiny_sweep(grid={"rounds": [10, 100], "buffer_size": [2, 4]})
    pace = sweeps._Pace(sweep.runs())
    assert [pace.work[index] / pace.work[0] for index in range(4)] == [1, 2, 10, 20]  # updates: rounds × buffer size
    assert pace.seconds_for(pace.work_left) == 0  # nothing timed yet
    pace.timed(sweep.runs()[0], sweeps._SharedData())
    assert pace.work_left == pytest.approx(32 * pace.work[0])
    assert pace.seconds_for(pace.work_left) == pytest.approx(32 * pace.seconds)
    pace.fastest /= 2  # a faster run later: the work left takes at least that pace
    assert pace.seconds_for(pace.work_left) == pytest.approx(16 * pace.seconds)


def test_small_runs_travel_in_batches_that_leave_every_process_work():
    pace = sweeps._Pace([])
    assert pace.batch_size(100, 2) == 1  # nothing timed yet
    pace.seconds, pace.runs = 0.01, 10  # 1 ms a run: 0.2 s of work would be 200 runs, but 100 left share 4 ways
    assert pace.batch_size(100, 2) == 25 and pace.batch_size(7, 2) == 2
    pace.seconds, pace.runs = 0.5, 10  # 50 ms a run: 4 runs make 0.2 s
    assert pace.batch_size(1000, 2) == 4
    pace.seconds, pace.runs = 30.0, 10  # 3 s a run: one at a time
    assert pace.batch_size(1000, 8) == 1


def test_scheduler_errors_are_value_errors(monkeypatch):
    sweep = tiny_sweep()
    with pytest.raises(ValueError, match="cannot reach the Dask scheduler 'nope://x:1': unknown address scheme"):
        run_sweep(sweep=sweep, scheduler="nope://x:1")
    monkeypatch.setattr(sweeps, "CONNECT_TIMEOUT", "0.2s")
    with pytest.raises(ValueError, match="cannot reach the Dask scheduler 'tcp://127.0.0.1:1'"):
        run_sweep(sweep=sweep, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(ValueError, match="processes is for local runs"):
        run_sweep(sweep=sweep, scheduler="tcp://127.0.0.1:1", processes=2)
    with pytest.raises(ValueError, match=r"processes must be an integer in \[1, inf\); got 0"):
        run_sweep(sweep=sweep, processes=0)


def test_parquet_and_csv_tables_load_back_identical(tmp_path):
    result = run_sweep(sweep=tiny_sweep(grid={"noise_multiplier": [0.0, 1.0], "compute_mean": [[1.0, 2.0, 1.0, 3.0]]},
                                        seeds=2), processes=1)
    columns = result.sweep.columns
    parquet = write_table(rows=result.rows, path=tmp_path / "t.parquet", columns=columns, metadata={"config": {"a": 1}})
    table = pq.read_table(parquet)
    assert table.column_names == list(columns) and table.to_pylist() == list(result.rows)
    assert json.loads(table.schema.metadata[b"fedplan"]) == {"config": {"a": 1}}
    path = write_table(rows=result.rows, path=tmp_path / "t.csv", columns=columns)
    with path.open() as handle:
        loaded = list(csv.DictReader(handle))
    assert list(loaded[0]) == list(columns) and len(loaded) == 4
    for row, text in zip(result.rows, loaded, strict=True):
        assert float(text["final_loss"]) == row["final_loss"]  # repr round-trips floats exactly
        assert json.loads(text["compute_mean"]) == row["compute_mean"] and text["epsilon"] == (
            "" if row["epsilon"] is None else repr(row["epsilon"]))
    assert math.isfinite(float(loaded[3]["epsilon"]))
    with pytest.raises(ValueError, match="out must end in .parquet or .csv; got 't.xlsx'"):
        write_table(rows=result.rows, path="t.xlsx", columns=columns)


def test_load_sweep_reads_yaml_and_reports_bad_files(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("algorithm: fedbuff\noptions: {rounds: 3}\ngrid:\n  buffer-size: [2, 3]\nseeds: 2\n")
    assert load_sweep(path=path).cells == ({"buffer_size": 2}, {"buffer_size": 3})
    path.write_text("algorithm: [fedbuff\n")
    with pytest.raises(ValueError, match="is not valid YAML"):
        load_sweep(path=path)
    with pytest.raises(ValueError, match="config must name an existing file; '.*missing.yaml' does not exist"):
        load_sweep(path=tmp_path / "missing.yaml")
    path.write_text("algorithm: fedbuff\nseeds: 1000000000\n")
    with pytest.raises(ValueError, match=r"sweep config: seeds: 1000000000 seeds is 1e\+09 runs; the limit is 10000 "
                                         r"\(raise it with --max-runs or FEDPLAN_MAX_RUNS\)"):
        load_sweep(path=path)
    path.write_text("algorithm: fedbuff\noptions: {rounds: 3}\ngrid:\n  buffer-size: [2, 3]\n  server-lr: [1, 2]\n"
                    "seeds: 3\n")
    with limits.using(runs=11), pytest.raises(ValueError, match=r"grid: 2 × 2 cells × 3 seed\(s\) is 12 runs; "
                                                                  r"the limit is 11"):
        load_sweep(path=path)
    with limits.using(runs=12):
        assert len(load_sweep(path=path).cells) == 4
    path.write_text("- 1\n")
    with pytest.raises(ValueError, match="sweep config: the config must be a mapping"):
        load_sweep(path=path)


def test_a_json_config_is_read_as_json_and_a_huge_yaml_one_is_refused_before_parsing(tmp_path, monkeypatch):
    import yaml

    config = {"algorithm": "fedbuff", "options": {"rounds": 3, "delta": 1e-5}, "grid": {"buffer-size": [2, 3]},
              "seeds": 2}
    (tmp_path / "s.json").write_text(json.dumps(config))
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(config))
    from_json, from_yaml = load_sweep(path=tmp_path / "s.json"), load_sweep(path=tmp_path / "s.yaml")
    assert from_json.cells == from_yaml.cells == ({"buffer_size": 2}, {"buffer_size": 3})
    assert from_json.config == from_yaml.config
    # a 12 MB file (the fuzzer's 200 000 segments) ran past 45 s in PyYAML: JSON goes to json, and YAML above
    # 512 KiB is refused by its size, without being parsed
    big = tmp_path / "big.yaml"
    big.write_text("a: [" + ", ".join(["1"] * 200_000) + "]\n")
    monkeypatch.setattr(yaml, "load", lambda *args, **kwargs: pytest.fail("parsed a YAML config above the limit"))
    with pytest.raises(ValueError, match=r"config file 'big.yaml' is 586 KiB of YAML; the limit is 512 KiB .*: give "
                                         r"it as JSON \(a .json file\), or its parameters as grid or random axes"):
        load_sweep(path=big)
    (tmp_path / "bad.json").write_text("algorithm: fedbuff\n")
    with pytest.raises(ValueError, match="config file 'bad.json' is not valid JSON"):
        load_sweep(path=tmp_path / "bad.json")


@pytest.mark.parametrize(("algorithm", "options", "nested"), [
    ("adp2sgd", {"n_samples": 300, "n_features": 4, "workers": 4, "steps": 20}, None),
    ("mapa", {"n_samples": 300, "n_features": 4, "edges": 3, "iterations": 30, "upload_epsilon": [2.0]}, None),
    ("kardam", {"n_samples": 300, "n_features": 4, "clients": 5, "rounds": 10, "faults": 1}, None),
    ("byzantine", {"n_samples": 300, "n_features": 4, "clients": 7, "rounds": 10, "faults": 1}, None),
    ("dpscd", {"preset": "ridge", "epochs": 1}, "dpscd"),
    ("dpscd-dpsgd", {"preset": "ridge", "epochs": 1, "dpsgd_epochs": 1}, "dpsgd"),
])
def test_the_other_engines_run_as_registered_and_match_fedplan_simulate(capsys, algorithm, options, nested):
    # two equal cells: the second cell's runs use the data its first built, and give the rows a new build gives
    name, value = next(iter(options.items()))
    config = {"algorithm": algorithm, "options": {key: item for key, item in options.items() if key != name},
              "grid": {name: [value, value]}, "seeds": [0, 1]}
    result = run_sweep(sweep=parse_sweep(config=config), processes=1)
    assert [{**row, "run": 0, "cell": 0} for row in without_wall_time(result.rows[:2])] == \
        [{**row, "run": 0, "cell": 0} for row in without_wall_time(result.rows[2:])]
    row = result.rows[1]
    argv = [*RUNNERS[algorithm].command, "--json", "--seed", "1"]
    for name, value in options.items():
        argv += [f"--{name.replace('_', '-')}", *map(str, value if isinstance(value, list) else [value])]
    assert main(argv) == 0
    direct = json.loads(capsys.readouterr().out)
    direct = direct[nested] if nested else direct
    assert row["final_loss"] is not None and math.isfinite(row["final_loss"])
    for key in ("rounds", "final_loss", "epsilon", "diverged"):
        assert row[key] == direct[key], key
    assert result.rows[0]["final_loss"] != row["final_loss"]


def test_load_sweep_reads_exponent_floats_without_a_dot(tmp_path):
    # PyYAML (YAML 1.1) reads 1e-5 as a string; a sweep config means the number (as the CLI's --delta 1e-5 does).
    path = tmp_path / "s.yaml"
    path.write_text("algorithm: fedbuff\noptions: {rounds: 3, delta: 1e-5}\n"
                    "random:\n  samples: 2\n  parameters:\n    server_lr: {log_uniform: [1e-2, 1E+0]}\nseeds: 1\n")
    sweep = load_sweep(path=path)
    assert sweep.options["delta"] == 1e-5
    assert all(0.01 <= cell["server_lr"] <= 1.0 for cell in sweep.cells)
