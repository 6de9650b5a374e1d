"""The Planner computes a plan in the background (app_pages/background.py): a plan that takes longer than the inline
wait shows progress and keeps the previous plan in view, marked; the next run after it finished shows the new one."""

from __future__ import annotations

import threading
import time

import pytest

from fedplan.app_pages import background
from tests.pages.helpers import metric, open_page


@pytest.fixture(autouse=True)
def kept_although_unwatched(monkeypatch):
    """AppTest does not redraw the progress line as a browser does every 0.3 s, so the janitor would stop the work
    after UNWATCHED_SECONDS; a plan's child, at niceness 10 on a machine busy with other tests, can take longer."""
    monkeypatch.setattr(background, "UNWATCHED_SECONDS", 600.0)


def _planning(app) -> list[str]:
    """The texts of the plan's progress lines (the validation section draws its own progress bar)."""
    return [element.proto.text for element in app.get("progress") if element.proto.text.startswith("Planning")]


def _wait_for_plan(field: tuple) -> None:
    """Until the Planner's background plan of inputs holding ``field`` (name, value) has finished."""
    deadline = time.monotonic() + 300
    while not any(key[0] == "plan" and field in key[1] and work.future.done()
                  for key, work in list(background._WORK.items())):
        assert time.monotonic() < deadline, "the plan did not finish"
        time.sleep(0.2)


def test_a_slow_plan_shows_progress_and_the_previous_plan_marked_then_the_new_plan(monkeypatch):
    planner = open_page("0_Planner.py")
    assert metric(planner, "Rounds") == "193" and not _planning(planner)
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "0")
    planner.text_input(key="planner_target_epsilon").set_value("0.93").run()
    assert not planner.exception
    assert _planning(planner)
    assert any("for the earlier inputs: the new one is being planned" in info.value for info in planner.info)
    assert metric(planner, "Rounds") == "193"  # the earlier plan, still in view
    _wait_for_plan(("target_epsilon", 0.93))
    planner.run()
    assert not _planning(planner) and not any("earlier inputs" in info.value for info in planner.info)
    assert float(metric(planner, "ε (PLD")) <= 0.93  # the new plan spends the new budget


def _progress(app, label: str) -> list[str]:
    return [element.proto.text for element in app.get("progress") if element.proto.text.startswith(label)]


def _held(monkeypatch, request_type) -> threading.Event:
    """``request_type.run`` waits for the returned event: the computation is still going on the next script run
    (computed in a thread of this process, which the event reaches; not in a forked child, the default)."""
    monkeypatch.setenv("FEDPLAN_PAGE_WORK", "thread")
    release, run = threading.Event(), request_type.run

    def held_run(self, *args, **kwargs):
        assert release.wait(60), "the test did not release the computation"
        return run(self, *args, **kwargs)

    monkeypatch.setattr(request_type, "run", held_run)
    return release


def _finished(type_name: str, field: tuple) -> bool:
    return any(key[0] == "form" and key[1].endswith(type_name) and field in key[2] and work.future.done()
               for key, work in list(background._WORK.items()))


def _wait(type_name: str, field: tuple) -> None:
    deadline = time.monotonic() + 120
    while not _finished(type_name, field):
        assert time.monotonic() < deadline, f"{type_name} {field} did not finish"
        time.sleep(0.05)


def test_a_form_page_computes_in_the_background_and_keeps_the_earlier_answer_marked(monkeypatch):
    """The pages drawn by widgets.form_page (DP-SGD and federated, FedSGD-DPC, MAPA) calibrate in a server thread: a
    run that would wait shows progress (its label, the page's spinner text) and, where the page keeps its last
    answer, that answer marked as for the earlier inputs; the next run after it finished shows the new answer."""
    from collections import OrderedDict

    from fedplan.planner.tasks.fedsgd_dpc import FedsgdDpcOptimum
    from fedplan.planner.tasks.practice import DPSGD

    monkeypatch.setattr(background, "_WORK", OrderedDict())  # nothing computed by the other tests of this process
    fedsgd = open_page("3_FedSGD_DPC.py")
    assert metric(fedsgd, "T*") == "120"
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "0")
    release = _held(monkeypatch, FedsgdDpcOptimum)
    fedsgd.text_input[8].set_value("0.2").run()
    assert not fedsgd.exception and _progress(fedsgd, "Searching the integer optimum")
    assert metric(fedsgd, "T*") == "120"  # the earlier answer, in view and marked
    assert fedsgd.info[0].value.startswith("The answer below is for the earlier inputs: the new one is being computed")
    release.set()
    _wait("FedsgdDpcOptimum", ("target_epsilon", 0.2))
    fedsgd.run()
    assert metric(fedsgd, "T*") == "480" and not _progress(fedsgd, "Searching")
    assert not any("earlier inputs" in info.value for info in fedsgd.info)
    # a page without a kept answer shows the progress line alone, then the answer
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "600")
    dp_sgd = open_page("8_DP_SGD_and_federated.py")
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "0")
    release = _held(monkeypatch, DPSGD)
    dp_sgd.text_input(key="dpsgd-epsilon").set_value("2.5").run()
    assert _progress(dp_sgd, "Calibrating") and "Steps" not in [m.label for m in dp_sgd.metric]  # DP-SGD's
    release.set()
    _wait("DPSGD", ("target_epsilon", 2.5))
    dp_sgd.run()
    assert not _progress(dp_sgd, "Calibrating") and "Steps" in [m.label for m in dp_sgd.metric]


def test_the_accountant_accounts_and_calibrates_in_the_background(monkeypatch):
    """The Accountant's ε (PLD and RDP, each its own progress line) and its calibrations run in a server thread:
    the earlier answer stays in view, marked, until the new one is ready (the PLD of fixed-size sampling took
    0.6 s in the script run)."""
    from collections import OrderedDict

    from fedplan.planner.tasks.accounting import CalibrateNoise, Epsilon

    monkeypatch.setattr(background, "_WORK", OrderedDict())
    accountant = open_page("1_Accountant.py")
    before = metric(accountant, "ε (PLD")
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "0")
    release = _held(monkeypatch, Epsilon)
    accountant.text_input[1].set_value("1.5").run()  # σ 1.1 → 1.5
    assert not accountant.exception and _progress(accountant, "Accounting (PLD)")
    assert not _progress(accountant, "Accounting (RDP)")  # asked once the PLD answer is in
    assert metric(accountant, "ε (PLD") == before
    assert accountant.info[0].value.startswith("The answer below is for the earlier inputs: the new one is being")
    release.set()
    _wait("Epsilon", ("noise_multiplier", 1.5))
    accountant.run()  # the PLD answer is in; RDP's starts (and is not held)
    deadline = time.monotonic() + 60
    while _progress(accountant, "Accounting"):
        assert time.monotonic() < deadline, "the RDP answer did not come"
        time.sleep(0.05)
        accountant.run()
    tight = Epsilon(sample_rate=0.01, noise_multiplier=1.5, steps=10_000, delta=1e-5, time_budget=10.0).run()
    assert float(metric(accountant, "ε (PLD")) == pytest.approx(tight["epsilon"], rel=1e-4)
    assert float(metric(accountant, "ε (PLD")) < float(before)
    assert not any("earlier inputs" in info.value for info in accountant.info)
    # a calibration: progress, then σ
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "600")
    accountant.radio[0].set_value("Calibrate a parameter").run()
    sigma = metric(accountant, "σ (PLD")
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "0")
    release = _held(monkeypatch, CalibrateNoise)
    accountant.text_input(key="calibration_target_epsilon").set_value("3").run()
    assert _progress(accountant, "Calibrating") and metric(accountant, "σ (PLD") == sigma
    release.set()
    _wait("CalibrateNoise", ("target_epsilon", 3.0))
    accountant.run()
    assert not _progress(accountant, "Calibrating") and float(metric(accountant, "σ (PLD")) < float(sigma)


def test_increasing_sizes_plans_and_searches_in_the_background(monkeypatch):
    """The increasing-sizes plan is computed in a server thread (the earlier plan in view, marked); a refused plan
    then offers the nearest σ with a plan."""
    from collections import OrderedDict

    from fedplan.planner.tasks.vandijk import VandijkSelect

    monkeypatch.setattr(background, "_WORK", OrderedDict())
    page = open_page("2_Increasing_sample_sizes.py")
    assert metric(page, "Rounds") == "185 / 185"
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "0")
    release = _held(monkeypatch, VandijkSelect)
    page.text_input(key="vandijk_noise_multiplier").set_value("10").run()
    assert not page.exception and _progress(page, "Selecting parameters")
    assert metric(page, "Rounds") == "185 / 185"
    assert page.info[0].value == "The answer below is for the earlier inputs: the new one is being computed (above)."
    release.set()
    _wait("VandijkSelect", ("noise_multiplier", 10.0))
    page.run()
    assert not _progress(page, "Selecting") and metric(page, "Rounds") != "185 / 185"
    page.text_input(key="vandijk_noise_multiplier").set_value("3").run()  # no plan: refused in the background
    deadline = time.monotonic() + 60
    while _progress(page, "Selecting"):
        assert time.monotonic() < deadline, "the refusal did not come"
        time.sleep(0.1)
        page.run()
    assert [button.label for button in page.button] == ["σ = 5.87"]  # the nearest σ, searched in the script run



def test_a_refusal_that_arrives_in_a_later_run_goes_under_the_box_edited(monkeypatch):
    """Clients = 100 has no increasing-sizes plan and names several boxes; when its refusal is computed after the run
    that saw the edit (a busy server), it still goes right under the Clients box, not at the top of the form."""
    from fedplan.planner.tasks.plan import Plan

    planner = open_page("0_Planner.py")
    monkeypatch.setattr(background, "_WORK", type(background._WORK)())  # no refusal another test already computed
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "0")
    release = _held(monkeypatch, Plan)
    planner.text_input(key="planner_clients").set_value("100").run()
    assert _planning(planner) and not planner.error  # the refusal is not known yet
    release.set()
    _wait_for_plan(("clients", 100))
    planner.run()
    [error] = planner.error
    assert "Clients" in error.value
    column = list(planner.columns[0])
    clients = next(index for index, node in enumerate(column) if getattr(node, "key", None) == "planner_clients")
    assert column[clients + 1] is error or getattr(column[clients + 1], "value", None) == error.value
