"""fedplan's TF-Privacy export: the arguments of compute_dp_sgd_privacy_statement, checked against TF-Privacy's own
accounting of them. TensorFlow is not installed here; TF-Privacy's statement (tensorflow_privacy 0.9,
privacy/analysis/compute_dp_sgd_privacy_lib.py, _compute_dp_sgd_example_privacy) is ten lines over dp-accounting:
q = batch_size / number_of_examples, ceil(num_epochs / q) Poisson-sampled Gaussian steps at noise_multiplier (halved
when used_microbatching), RDP accountant with dp-accounting's default orders. They are restated below, apart from
fedplan's code."""

from __future__ import annotations

import ast
import math

import dp_accounting
import pytest

from fedplan.bounds import accounting
from fedplan.planner.export import write_schedule
from fedplan.planner.practice import plan_dp_sgd


def tf_privacy_epsilon(arguments: dict) -> float:
    """What compute_dp_sgd_privacy_statement prints as "Epsilon assuming Poisson sampling" (RDP accountant)."""
    noise = arguments["noise_multiplier"] / (2 if arguments["used_microbatching"] else 1)
    rate = arguments["batch_size"] / arguments["number_of_examples"]
    count = int(math.ceil(arguments["num_epochs"] / rate))
    event = dp_accounting.SelfComposedDpEvent(count=count, event=dp_accounting.PoissonSampledDpEvent(
        sampling_probability=rate, event=dp_accounting.GaussianDpEvent(noise)))
    return dp_accounting.rdp.RdpAccountant().compose(event).get_epsilon(arguments["delta"])


@pytest.mark.parametrize("examples, batch, epochs", [(60_000, 256, 15), (50_000, 300, 3.3), (1000, 7, 1)])
def test_the_statement_arguments_account_the_planned_steps_and_agree_with_fedplans_rdp(tmp_path, examples, batch,
                                                                                       epochs):
    planned = plan_dp_sgd(dataset_size=examples, batch_size=batch, epochs=epochs, delta=1e-5, target_epsilon=3.0)
    path = write_schedule(planned.schedule, tmp_path / "statement.py", fmt="tf-privacy")
    tree = ast.parse(path.read_text())
    arguments = next(ast.literal_eval(node.value) for node in tree.body
                     if isinstance(node, ast.Assign) and node.targets[0].id == "STATEMENT_ARGUMENTS")
    assert arguments["used_microbatching"] is False and arguments["max_examples_per_user"] is None
    rate = arguments["batch_size"] / arguments["number_of_examples"]
    assert math.ceil(arguments["num_epochs"] / rate) == planned.values["steps"]
    ours_rdp = accounting.get_epsilon(sample_rate=batch / examples, noise_multiplier=planned.values["noise_multiplier"],
                                      steps=planned.values["steps"], delta=1e-5, accountant="rdp").epsilon
    theirs = tf_privacy_epsilon(arguments)
    assert theirs == pytest.approx(ours_rdp, rel=1e-2)
    assert planned.values["epsilon"] <= min(theirs, 3.0)  # the tight PLD is below both RDP answers
    # with microbatching TF-Privacy doubles the sensitivity: the plan's σ would no longer meet the budget
    assert tf_privacy_epsilon({**arguments, "used_microbatching": True}) > 3.0
