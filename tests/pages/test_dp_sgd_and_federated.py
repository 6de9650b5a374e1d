"""The DP-SGD and federated page: fedplan dp-sgd and fedplan federated from widgets, with the libraries' downloads."""

from __future__ import annotations

import pytest

import fedplan
from fedplan.planner.display import epsilon_text
from fedplan.planner.tasks.practice import DPSGD
from tests.pages.helpers import capture_downloads, error_under, errors, open_page, refusal


@pytest.fixture
def page():
    return open_page("8_DP_SGD_and_federated.py")


def metrics(page) -> list[tuple[str, str]]:
    return [(item.label, item.value) for item in page.metric]


def test_the_defaults_answer_both_questions_with_the_libraries_configurations(page):
    assert not page.exception and not page.error
    dp_sgd = fedplan.dp_sgd(dataset_size=60_000, batch_size=256, epochs=15, target_epsilon=3, delta=1e-5)
    federated = fedplan.federated(clients=1000, clients_per_round=50, rounds=200, target_epsilon=3, delta=1e-5)
    shown = metrics(page)
    assert shown[0] == ("Noise σ", f"{dp_sgd['noise_multiplier']:.6g}")
    assert shown[2] == ("Steps", "3516") and shown[3] == ("Guarantee", "per example")
    assert shown[4] == ("Noise σ", f"{federated['noise_multiplier']:.6g}")
    assert shown[6] == ("Rounds", "200") and shown[7] == ("Guarantee", "per client")
    labels = [button.label for button in page.get("download_button")]
    assert labels == ["CSV", "JSON", "YAML", "Opacus", "TF-Privacy", "CSV", "JSON", "YAML", "Flower"]


def test_each_download_has_its_own_file_name(monkeypatch):
    # the Opacus and TF-Privacy files are both .py: one name (fedplan_dp-sgd.py) made one overwrite the other
    files = capture_downloads(monkeypatch)
    open_page("8_DP_SGD_and_federated.py")
    assert {"fedplan_dp-sgd_opacus.py", "fedplan_dp-sgd_tf_privacy.py", "fedplan_dp-sgd.csv"} <= set(files)
    assert "OPACUS" in files["fedplan_dp-sgd_opacus.py"]().upper()
    assert "compute_dp_sgd_privacy_statement" in files["fedplan_dp-sgd_tf_privacy.py"]()


def test_a_noise_multiplier_gives_its_epsilon_and_a_user_bound(page):
    page.radio[0].set_value("a noise multiplier σ (report ε)").run()
    page.text_input(key="dpsgd-user").set_value("4").run()
    assert not page.exception and not page.error
    expected = fedplan.dp_sgd(dataset_size=60_000, batch_size=256, epochs=15, noise_multiplier=1.1, delta=1e-5,
                              max_examples_per_user=4)
    assert metrics(page)[1] == ("ε per user", epsilon_text(expected["user_epsilon"]))  # rounded up, never down
    assert expected["user_epsilon"] == pytest.approx(4 * expected["epsilon"])  # group privacy, k = 4 (Vadhan 2.2)
    assert page.info[0].value.startswith(f"**ε = {epsilon_text(expected['user_epsilon'])} per user** at δ = ")


def test_bad_input_is_the_requests_message_under_its_widget(page):
    page.text_input(key="dpsgd-b").set_value("70000").run()
    assert not page.exception
    assert refusal(DPSGD, dataset_size=60_000, batch_size=70_000, epochs=15, target_epsilon=3) == (
        "batch_size must be at most dataset_size = 60000; got 70000")
    message = "Batch size B must be at most Training examples N = 60000; got 70000"  # the boxes' labels
    assert errors(page) == [message]
    assert error_under(page, "Batch size B (q = B/N)") == message


def test_a_per_user_budget_is_headed_by_the_per_user_epsilon(page):
    """Budget ε = 3 per user of up to 10 examples: the page headed "ε 0.3000", the per-example ε (at δ = 6.7e-8),
    as if the run spent a tenth of the budget. The budget is spent per user (group privacy: 10 × 0.299986 at δ =
    1e-5); the headline is now that ε, named per user, with the per-example one and both δ said in words beside it."""
    page.text_input(key="dpsgd-user").set_value("10").run()
    assert not page.exception and not page.error
    per_example = fedplan.dp_sgd(dataset_size=60_000, batch_size=256, epochs=15, target_epsilon=3, delta=1e-5,
                                 max_examples_per_user=10)
    user = 10 * per_example["epsilon"]  # group privacy (kε, k e^((k-1)ε) δ), computed here
    assert 0.99 * 3 <= user <= 3  # the calibration spends the budget (within 1 % below), per user
    label, value = metrics(page)[1]
    assert label == "ε per user" and user <= float(value) <= user + 1e-4  # never below the per-user ε
    assert metrics(page)[3] == ("Guarantee", "per user")
    assert "at δ = 1e-05" in page.metric[1].help and "PLD, tight" in page.metric[1].help
    [info] = [element.value for element in page.info]
    assert f"from ε = {epsilon_text(per_example['epsilon'])} per example at δ = 6.72e-08 (PLD, tight)" in info
