"""app_pages/plan_validation.py, the run section the Validate page and the Planner's "Validate this plan" share."""

from __future__ import annotations

from tests.pages.helpers import claims_table, open_page


def test_a_finished_run_has_no_cancel_button():
    page = open_page("7_Validate.py", timeout=300)
    assert [b.disabled for b in page.button if b.label == "Cancel"] == [True]  # nothing runs yet to cancel
    next(b for b in page.text_input if b.label.startswith("Seeds")).set_value("1").run()
    next(b for b in page.button if b.label == "Run simulation").click().run()
    assert not page.exception and claims_table(page) is not None  # the claims of the finished run
    assert not [b for b in page.button if b.label == "Cancel"]  # was still drawn under "done in … s"
