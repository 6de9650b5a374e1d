"""The request/report contract: one validation point, the same message in the API and the CLI."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import ClassVar

import pytest

from fedplan.planner import cli
from fedplan.planner.tasks.accounting import CalibrateNoise, Epsilon
from fedplan.planner.tasks.base import OneOf, Report, Request, choice, count, real

REFERENCE = dict(sample_rate=0.01, noise_multiplier=1.1, steps=10_000, delta=1e-5, accountant="rdp")


@dataclass(frozen=True, kw_only=True)
class Toy(Request):
    command: ClassVar = ("toy",)
    summary: ClassVar = "a toy"
    one_of: ClassVar = (OneOf(("rounds", "epochs")),)

    rounds: int | None = count(None, help="rounds", low=1, high=100)
    epochs: float | None = real(None, help="epochs", low=0.0, low_open=True)
    mode: str = choice("a", help="mode", choices=("a", "b"))

    def run(self, *, progress=None) -> Report:
        return Report(values={"rounds": self.rounds, "statement": "a toy"})


def test_counts_accept_integral_floats_and_refuse_fractions_by_name():
    assert Toy(rounds=1e1).rounds == 10 and isinstance(Toy(rounds=1e1).rounds, int)
    with pytest.raises(ValueError, match=r"rounds must be an integer in \[1, 100\]; got 2.5"):
        Toy(rounds=2.5)
    with pytest.raises(ValueError, match=r"rounds must be an integer in \[1, 100\]; got 101"):
        Toy(rounds=101)


def test_exclusive_fields_and_choices_are_checked_once_with_the_field_names():
    with pytest.raises(ValueError, match="give exactly one of rounds, epochs; got rounds, epochs"):
        Toy(rounds=3, epochs=1.0)
    with pytest.raises(ValueError, match="give exactly one of rounds, epochs; got none"):
        Toy()
    with pytest.raises(ValueError, match="mode must be one of 'a', 'b'; got 'c'"):
        Toy(rounds=3, mode="c")


def test_a_sweep_point_is_a_replace_and_is_validated_again():
    request = Epsilon(**REFERENCE)
    assert replace(request, steps=20_000).steps == 20_000
    with pytest.raises(ValueError, match="sample_rate must be a real number in"):
        replace(request, sample_rate=2.0)


def test_requests_are_hashable_values():
    assert Epsilon(**REFERENCE) == Epsilon(**{**REFERENCE, "steps": 1e4})
    assert len({Epsilon(**REFERENCE), Epsilon(**{**REFERENCE, "steps": 1e4})}) == 1


def test_the_api_and_the_cli_give_the_same_message(capsys):
    with pytest.raises(ValueError) as raised:
        CalibrateNoise(target_epsilon=-1, target_delta=1e-5, sample_rate=0.01, steps=100)
    code = cli.main(["calibrate", "noise", "--target-epsilon", "-1", "--target-delta", "1e-5", "--sample-rate",
                     "0.01", "--steps", "100"])
    assert code == 2 and capsys.readouterr().err == f"fedplan: error: {raised.value}\n"


def test_report_renders_json_and_a_table_from_the_same_values():
    report = Epsilon(**REFERENCE).run()
    data = json.loads(report.to_json())
    assert data["epsilon"] == report["epsilon"] == report.result.epsilon
    assert data["sampling"] == "poisson" and data["neighboring_relation"] == "add_or_remove_one"
    table = report.to_table()
    assert table.splitlines()[0].startswith("epsilon") and table.endswith(report.statement)
    assert Report(values={"a": 1.5, "statement": "s"}).to_table() == "a  1.5\n\ns"


def test_segments_in_the_api_and_a_file_on_the_cli_agree(tmp_path, capsys):
    path = tmp_path / "s.csv"
    path.write_text("sample_rate,noise_multiplier,steps\n0.01,1.1,4000\n0.02,1.1,6000\n")
    api = Epsilon(segments=[(0.01, 1.1, 4000), (0.02, 1.1, 6000)], delta=1e-5, accountant="rdp").run()
    assert cli.main(["epsilon", "--schedule", str(path), "--delta", "1e-5", "--accountant", "rdp", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["epsilon"] == api["epsilon"]
    with pytest.raises(ValueError, match="give schedule .a file. or segments .a list., not both"):
        Epsilon(segments=[(0.01, 1.1, 4000)], schedule=str(path), delta=1e-5)


def test_an_old_spelling_works_with_a_note_and_cannot_be_given_twice(capsys):
    argv = ["epsilon", "-q", "0.01", "--sigma", "1.1", "--steps", "1e4", "--delta", "1e-5", "--accountant", "rdp",
            "--json"]
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["epsilon"] == Epsilon(**REFERENCE).run()["epsilon"]
    assert captured.err == ("fedplan: note: --sigma is deprecated here, use --noise-multiplier (the old spelling "
                            "goes in fedplan 0.3)\n")
    assert cli.main([*argv, "--noise-multiplier", "2"]) == 2
    assert "give --noise-multiplier once (--sigma is its deprecated spelling)" in capsys.readouterr().err


def test_an_error_about_an_internal_quantity_names_the_inputs_that_led_to_it():
    from fedplan.planner.tasks.registry import TASKS

    beta = next(task for task in TASKS if task.command == ("staleness", "beta"))
    with pytest.raises(ValueError) as failure:
        beta(staleness_threshold=5e-324).run()
    # the formula's own name (rate) is not a field of the request: the inputs the user gave follow it
    assert str(failure.value) == "rate must be a real number in (0, inf); got 0 (inputs: staleness_threshold=5e-324)"


def test_an_error_that_names_a_field_is_left_as_it_is():
    from fedplan.planner.tasks.simulate import SimulateFedbuff

    with pytest.raises(ValueError) as failure:
        SimulateFedbuff(partition="dirichlet")
    assert str(failure.value) == "partition dirichlet needs dirichlet_alpha (the concentration, e.g. 0.5)"
