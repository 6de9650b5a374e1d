"""The Planner computes a plan in the background (pages/background.py): a plan that takes longer than the inline
wait shows progress and keeps the previous plan in view, marked; the next run after it finished shows the new one."""

from __future__ import annotations

import time

from fedplan.pages import background
from tests.pages.helpers import metric, open_page


def _planning(app) -> list[str]:
    """The texts of the plan's progress lines (the validation section draws its own progress bar)."""
    return [element.proto.text for element in app.get("progress") if element.proto.text.startswith("Planning")]


def test_a_slow_plan_shows_progress_and_the_previous_plan_marked_then_the_new_plan(monkeypatch):
    planner = open_page("0_Planner.py")
    assert metric(planner, "Rounds") == "193" and not _planning(planner)
    monkeypatch.setenv("FEDPLAN_INLINE_WAIT", "0")
    planner.text_input(key="planner_target_epsilon").set_value("0.93").run()
    assert not planner.exception
    assert _planning(planner)
    assert any("for the earlier inputs: the new one is being planned" in info.value for info in planner.info)
    assert metric(planner, "Rounds") == "193"  # the earlier plan, still in view
    deadline = time.monotonic() + 300
    while not any(key[0] == "plan" and ("target_epsilon", 0.93) in key[1] and work.future.done()
                  for key, work in list(background._WORK.items())):
        assert time.monotonic() < deadline, "the plan did not finish"
        time.sleep(0.2)
    planner.run()
    assert not _planning(planner) and not any("earlier inputs" in info.value for info in planner.info)
    assert float(metric(planner, "ε (PLD")) <= 0.93  # the new plan spends the new budget
