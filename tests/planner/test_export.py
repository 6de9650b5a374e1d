"""planner.export: change-points, per-round expansion, round trips and bad files."""

import pytest

from fedplan.planner.export import Schedule, load_schedule_file, render, write_schedule


def make():
    rows = [{"sample_size": 16, "noise_multiplier": 1.0}] * 3 + [{"sample_size": 32, "noise_multiplier": 1.0}] * 2
    return Schedule.from_rows(rows, metadata={"delta": 1e-5}, statement="test")


def test_rows_collapse_to_change_points_and_expand_back():
    schedule = make()
    assert [start for start, _ in schedule.change_points] == [0, 3]
    assert [row["round"] for row in schedule.rows()] == [0, 1, 2, 3, 4]
    assert [row["sample_size"] for row in schedule.rows()] == [16, 16, 16, 32, 32]


@pytest.mark.parametrize("suffix", ["json", "yaml", "yml"])
def test_round_trip(tmp_path, suffix):
    path = write_schedule(make(), tmp_path / f"s.{suffix}")
    assert load_schedule_file(path) == make()


def test_csv_has_one_row_per_change_or_per_round_on_request(tmp_path):
    text = render(make(), "csv", cumulative_epsilon=[0.1, 0.2, 0.3, 0.4, 0.5])
    lines = [line for line in text.splitlines() if not line.startswith("#")]
    assert lines == ["start_round,rounds,sample_size,noise_multiplier,cumulative_epsilon", "0,3,16,1.0,0.3",
                     "3,2,32,1.0,0.5"]
    per_round = render(make(), "csv", cumulative_epsilon=[0.1, 0.2, 0.3, 0.4, 0.5], per_round=True)
    lines = [line for line in per_round.splitlines() if not line.startswith("#")]
    assert lines[0] == "round,sample_size,noise_multiplier,cumulative_epsilon" and lines[-1] == "4,32,1.0,0.5"
    assert len(lines) == 6
    with pytest.raises(ValueError, match=r"one value per round \(5\); got 2"):
        render(make(), "csv", cumulative_epsilon=[0.1, 0.2])


@pytest.mark.parametrize("per_round", [False, True])
def test_csv_loads_back_to_the_same_change_points(tmp_path, per_round):
    path = write_schedule(make(), tmp_path / "s.csv", per_round=per_round)
    loaded = load_schedule_file(path)
    assert loaded.rounds == 5 and loaded.change_points == make().change_points


@pytest.mark.parametrize("starts, rounds", [([1], 3), ([0, 0], 3), ([0, 5], 3)])
def test_bad_change_points(starts, rounds):
    with pytest.raises(ValueError, match="change_points must start at round 0"):
        Schedule(rounds=rounds, change_points=tuple((s, {}) for s in starts))


def test_bad_files(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_schedule_file(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ValueError, match="schedule file 'broken.json' is not valid JSON"):
        load_schedule_file(broken)
    with pytest.raises(ValueError, match="must end in .csv, .json, .yaml or .yml"):
        write_schedule(make(), tmp_path / "s.txt")


# ------------------------------------------------------------------------------------------------
# library_accountant: which accountant a library export's σ is calibrated for (the real libraries' answers are
# checked in tests/interop/test_opacus_export.py and test_flower_export.py)
# ------------------------------------------------------------------------------------------------


def _federated():
    import fedplan

    return fedplan.federated(clients=100, clients_per_round=10, rounds=20, target_epsilon=2)


@pytest.mark.parametrize("name, fmt, accountant, message", [
    ("plan.toml", "flower", "prv", "library_accountant for the flower export must be one of fedplan, rdp; got prv"),
    ("plan.py", "tf-privacy", "rdp", r"library_accountant for the tf-privacy export must be one of fedplan \(TF-Pri"),
    ("plan.csv", "csv", "rdp", "library_accountant=rdp calibrates σ for a library's export .*; got format csv"),
    ("plan.py", "opacus", "moments", "library_accountant must be one of fedplan, rdp, prv; got 'moments'"),
])
def test_a_library_accountant_the_export_has_not_is_refused_before_any_work(tmp_path, name, fmt, accountant,
                                                                           message):
    import fedplan

    with pytest.raises(ValueError, match=message):
        fedplan.export(_federated(), tmp_path / name, format=fmt, library_accountant=accountant)
    assert not (tmp_path / name).exists()


def test_library_accountant_needs_an_export_and_a_target():
    import fedplan

    with pytest.raises(ValueError, match="library_accountant=rdp calibrates the σ of a library's export: give out"):
        fedplan.federated(clients=100, clients_per_round=10, rounds=20, target_epsilon=2, library_accountant="rdp")
    given = fedplan.federated(clients=100, clients_per_round=10, rounds=20, noise_multiplier=3.0)
    with pytest.raises(ValueError, match="calibrates σ to the plan's target ε; this plan was given its σ"):
        fedplan.export(given, "plan.toml", library_accountant="rdp")


def test_a_missing_library_is_named_with_the_option(tmp_path, monkeypatch):
    import sys

    import fedplan

    monkeypatch.setitem(sys.modules, "flwr.serverapp", None)  # import flwr.serverapp raises ImportError
    with pytest.raises(ValueError, match="library_accountant=rdp checks σ with Flower RdpAccountant, which needs the "
                                         "package flwr: it is not installed"):
        fedplan.export(_federated(), tmp_path / "plan.toml", library_accountant="rdp")


def _example_schedule(rows):
    from fedplan.planner.schedule import with_gaussian_privacy

    return with_gaussian_privacy(Schedule.from_rows(rows), unit="example", sampling="poisson",
                                 neighboring_relation="add_or_remove_one", dataset_size=None, delta=1e-5,
                                 target_epsilon=2.0)


def test_a_library_accountant_calibrates_one_noise_multiplier():
    from fedplan.planner.library_accountants import calibrated

    rows = [{"sample_rate": 0.01, "noise_multiplier": 1.0}] * 3 + [{"sample_rate": 0.01, "noise_multiplier": 2.0}]
    with pytest.raises(ValueError, match="calibrates one noise_multiplier for the whole schedule; this one has 2"):
        calibrated(_example_schedule(rows), "opacus", "rdp")


def test_a_calibration_beyond_the_time_limit_is_refused_before_it_starts():
    from fedplan.planner import limits
    from fedplan.planner.library_accountants import calibrated

    rows = [{"sample_rate": 0.001 * (1 + number), "noise_multiplier": 1.0} for number in range(50)]
    with limits.using(seconds=100), pytest.raises(limits.LimitError, match=(
            "library_accountant=prv calls Opacus PRVAccountant on 50 history entries, an estimated 200 s; the time "
            "limit is 100 s")):
        calibrated(_example_schedule(rows), "opacus", "prv")


def _stand_in(monkeypatch, epsilon):
    """Flower's accountant replaced by ``epsilon(schedule)`` (the search's own logic, without Flower)."""
    import dataclasses

    from fedplan.planner import library_accountants

    spec = dataclasses.replace(library_accountants._ACCOUNTANTS["flower", "rdp"], module="fedplan.bounds.accounting",
                               epsilon=lambda module, schedule: epsilon(module, schedule))
    monkeypatch.setitem(library_accountants._ACCOUNTANTS, ("flower", "rdp"), spec)


def test_a_predictor_that_misses_is_corrected_by_the_librarys_answer(monkeypatch):
    """A stand-in accountant 20 % above fedplan's RDP (the predictor): the first σ misses by 20 %, the second (moved
    by the miss) by 4 %, the third (a secant step) lands within 1 % below the target."""
    from fedplan.bounds import accounting
    from fedplan.planner.export import for_library, schedule_of

    def above(module, schedule):
        return 1.2 * module.get_epsilon(delta=1e-5, segments=schedule.segments(), accountant="rdp",
                                        **schedule.accounting_options()).epsilon

    _stand_in(monkeypatch, above)
    exported = for_library(schedule_of(_federated()), "flower", "rdp")
    record = exported.metadata["library_accountant"]
    assert record["library_calls"] == 3 and 0.99 * 2 <= record["library_epsilon"] <= 2.0
    assert record["library_epsilon"] == above(accounting, exported)


@pytest.mark.parametrize("answer, message", [
    (2.5, r"Flower RdpAccountant still reports ε = 2.5 above the target 2 at σ = .* after 4 calibrations: export "
          "with library_accountant=fedplan"),
    (5.0, r"Flower RdpAccountant reports ε = 5 where fedplan's rdp predicts 1.99.*: no σ brings it to the target "
          "ε = 2"),
])
def test_a_library_answer_above_the_target_is_an_error_never_a_fallback(monkeypatch, answer, message):
    from fedplan.planner.export import for_library, schedule_of

    _stand_in(monkeypatch, lambda module, schedule: answer)
    with pytest.raises(ValueError, match=message):
        for_library(schedule_of(_federated()), "flower", "rdp")


def _schedules_of_every_kind():
    """A schedule per way the library exports refuse or accept one."""
    import fedplan
    from fedplan.planner.export import schedule_of
    from fedplan.planner.schedule import with_gaussian_privacy

    yield "no privacy block", Schedule.from_rows([{"sample_size": 10}, {"sample_size": 20}])
    yield "federated", schedule_of(_federated())
    yield "dp-sgd", schedule_of(fedplan.dp_sgd(dataset_size=60_000, batch_size=256, epochs=3, target_epsilon=2))
    one_phase = [{"sample_rate": 0.01, "noise_multiplier": 1.0}] * 3
    yield "no dataset size", _example_schedule(one_phase)
    yield "replace-one", with_gaussian_privacy(Schedule.from_rows(one_phase), unit="example", sampling="poisson",
                                               neighboring_relation="replace_one", dataset_size=1000, delta=1e-5,
                                               target_epsilon=2.0)
    two_phases = one_phase + [{"sample_rate": 0.02, "noise_multiplier": 1.0}]
    yield "two phases", with_gaussian_privacy(Schedule.from_rows(two_phases), unit="example", sampling="poisson",
                                              neighboring_relation="add_or_remove_one", dataset_size=1000,
                                              delta=1e-5, target_epsilon=2.0)


def test_refusal_says_without_rendering_exactly_what_render_refuses():
    """The pages draw a download button per format that :func:`export.refusal` accepts and render its text only on
    a click: every refusal must be render's own, and every accepted format must render."""
    from fedplan.planner.export import FORMATS, refusal

    verdicts = {}
    for name, schedule in _schedules_of_every_kind():
        for fmt in FORMATS:
            try:
                render(schedule, fmt)
            except ValueError as error:
                expected = str(error)
            else:
                expected = None
            assert refusal(schedule, fmt) == expected, (name, fmt)
            verdicts[name, fmt] = expected is None
    # the kinds cover an accepted and a refused case of each library format
    for fmt in ("opacus", "flower", "tf-privacy"):
        assert {verdicts[name, fmt] for name, _ in _schedules_of_every_kind()} == {True, False}, fmt
    assert verdicts["no dataset size", "opacus"] and not verdicts["no dataset size", "tf-privacy"]
