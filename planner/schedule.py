"""A training schedule as change-points, with the privacy block that says what runs and how it was accounted.

Data only (no files, no rendering): :mod:`planner.export` writes and reads it, :mod:`planner.library_exports`
renders it for Opacus, Flower and TF-Privacy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from fedplan.planner.display import guarantee_text

#: The privacy block of a schedule: what runs and how it was accounted.
PRIVACY_KEYS = {
    "mechanism": "gaussian (noise std = noise_multiplier × clipping norm on the sum) or laplace (pure ε)",
    "unit": "example (record-level guarantee), client (user-level: every record of a client at once) or batch "
            "(neighbouring mini-batches, a paper's own relation: per record up to the batch size times more)",
    "sampling": "poisson, fixed_size, with_replacement or shuffle (bounds/sampling.py)",
    "neighboring_relation": "add_or_remove_one or replace_one",
    "dataset_size": "N records (or clients) a step samples from, or null",
    "client_sample_rate": "two-stage sampling: probability a record's client joins a round, or null",
    "delta": "δ of the guarantee",
    "epsilon": "ε of the whole schedule at δ, by the accountant",
    "accountant": "pld, rdp, exact (gaussian); basic or optimal composition (laplace)",
    "bound": "tight or upper bound",
    "target_epsilon": "the ε the plan was calibrated to (null if none)",
    "max_examples_per_user": "a user-level guarantee by group privacy: the most examples one user holds",
    "user_epsilon": "ε per user (group privacy over max_examples_per_user examples)",
    "user_delta": "δ per user (group privacy over max_examples_per_user examples)",
    "epsilon_per_release": "laplace only: ε of one release",
    "releases": "laplace only: releases composed per protected unit",
}
UNITS = ("example", "client", "batch")
GAUSSIAN_REQUIRED = ("mechanism", "unit", "sampling", "neighboring_relation", "delta", "epsilon", "accountant")


@dataclass(frozen=True)
class Schedule:
    """Per-round training parameters as change-points, with the privacy block and metadata that go with them."""

    rounds: int
    change_points: tuple[tuple[int, dict], ...]
    metadata: dict = field(default_factory=dict)
    statement: str = ""
    privacy: dict | None = None

    def __post_init__(self) -> None:
        starts = [start for start, _ in self.change_points]
        if not starts or starts[0] != 0 or starts != sorted(set(starts)) or starts[-1] >= self.rounds:
            raise ValueError(f"change_points must start at round 0 and increase strictly below rounds = {self.rounds}; "
                             f"got starts {starts[:5]}{'…' if len(starts) > 5 else ''}")
        if self.privacy is not None:
            _check_privacy(self.privacy)

    @classmethod
    def from_rows(cls, rows: list[dict], *, metadata: dict | None = None, statement: str = "",
                  privacy: dict | None = None) -> Schedule:
        """Collapse one dict per round into change-points (a new point wherever a value changes)."""
        points: list[tuple[int, dict]] = []
        for index, row in enumerate(rows):
            if not points or points[-1][1] != row:
                points.append((index, dict(row)))
        return cls(rounds=len(rows), change_points=tuple(points), metadata=dict(metadata or {}),
                   statement=statement, privacy=privacy)

    def phases(self) -> list[tuple[int, int, dict]]:
        """``(start_round, rounds, values)`` of each change-point."""
        ends = [start for start, _ in self.change_points[1:]] + [self.rounds]
        return [(start, end - start, values) for (start, values), end in zip(self.change_points, ends, strict=True)]

    def rows(self) -> list[dict]:
        """One dict per round, ``round`` first."""
        return [{"round": start + offset, **values} for start, length, values in self.phases()
                for offset in range(length)]

    @property
    def is_gaussian(self) -> bool:
        return self.privacy is not None and self.privacy.get("mechanism") == "gaussian"

    def segments(self) -> list[tuple[float, float, int]]:
        """``(sample_rate, noise_multiplier, steps)`` of each phase: what the accountant composes."""
        if not self.is_gaussian:
            mechanism = None if self.privacy is None else self.privacy.get("mechanism")
            raise ValueError(f"only a Gaussian schedule has accounting segments; this one's mechanism is {mechanism} "
                             "(its ε is in its privacy block)")
        segments = []
        for number, (_, length, values) in enumerate(self.phases(), start=1):
            missing = [name for name in ("sample_rate", "noise_multiplier") if values.get(name) is None]
            if missing:
                raise ValueError(f"change-point {number} has no {' or '.join(missing)}, which a Gaussian schedule "
                                 "needs in every phase")
            segments.append((float(values["sample_rate"]), float(values["noise_multiplier"]), length))
        return segments

    def accounting_options(self) -> dict:
        """The sampling model of :meth:`segments`, as :func:`bounds.accounting.get_epsilon` takes it."""
        privacy = self.privacy or {}
        return {"sampling": privacy["sampling"], "neighboring_relation": privacy["neighboring_relation"],
                "dataset_size": privacy.get("dataset_size"), "client_sample_rate": privacy.get("client_sample_rate")}

    def epsilon_after_each_phase(self) -> list[float] | None:
        """ε at the schedule's δ after each phase (the privacy block's accountant), or None without a Gaussian
        privacy block (a Laplace plan states its composed ε in the block)."""
        if not self.is_gaussian:
            return None
        from fedplan.bounds import accounting

        accountant = "rdp" if self.privacy["accountant"] == "rdp" else "pld"
        return accounting.epsilon_after_each_segment(delta=self.privacy["delta"], segments=self.segments(),
                                                     accountant=accountant, **self.accounting_options())[1]

    def to_dict(self) -> dict:
        return {"rounds": self.rounds,
                "change_points": [{"start_round": start, **values} for start, values in self.change_points],
                "privacy": self.privacy, "metadata": self.metadata, "statement": self.statement}


def _check_privacy(privacy: dict) -> None:
    if not isinstance(privacy, dict):
        raise ValueError(f"privacy must be an object with keys {', '.join(PRIVACY_KEYS)}; got {privacy!r}")
    unknown = sorted(set(privacy) - set(PRIVACY_KEYS))
    if unknown:
        raise ValueError(f"privacy has unknown keys {unknown}; allowed: {', '.join(PRIVACY_KEYS)}")
    if privacy.get("mechanism") not in ("gaussian", "laplace"):
        raise ValueError(f"privacy mechanism must be gaussian or laplace; got {privacy.get('mechanism')!r}")
    if privacy.get("unit") not in UNITS:
        raise ValueError(f"privacy unit must be one of {', '.join(UNITS)}; got {privacy.get('unit')!r}")
    if privacy["mechanism"] == "gaussian":
        missing = [name for name in GAUSSIAN_REQUIRED if privacy.get(name) is None]
        if missing:
            raise ValueError(f"a Gaussian schedule's privacy block needs {', '.join(missing)}")


def theorem_line(schedule: Schedule) -> str | None:
    """The verdict on the paper's theorem behind the schedule's metadata (its checked ``hypotheses``): "theorem:
    guarantee" or "theorem: no guarantee (failing: …)"; None for a schedule without a theorem."""
    if "hypotheses" not in schedule.metadata:
        return None
    return f"theorem: {guarantee_text(schedule.metadata['hypotheses'])} for the paper's numbers in the metadata"


def guarantee_line(privacy: dict | None) -> str:
    """One line stating the guarantee, its unit, sampling and neighbouring relation."""
    if privacy is None:
        return "no privacy block: the paper's metadata below states the guarantee"
    unit = {"example": "per example (record-level)",
            "client": "per client (user-level: all of a client's records at once)",
            "batch": "per mini-batch (the paper's neighbouring batches; per record up to the batch size times more)"
            }[privacy["unit"]]
    epsilon = privacy.get("epsilon")
    head = f"(ε = {epsilon:.6g}, δ = {privacy.get('delta', 0):g})-DP {unit}" if epsilon is not None else \
        f"δ = {privacy.get('delta', 0):g}, {unit}"
    if privacy["mechanism"] == "laplace":
        return (f"{head}: Laplace releases, ε = {privacy.get('epsilon_per_release', 0):.6g} each, "
                f"{privacy.get('releases')} per unit, {privacy.get('accountant')} composition")
    size = f" of N = {privacy['dataset_size']}" if privacy.get("dataset_size") else ""
    user = ""
    if privacy.get("max_examples_per_user") is not None:
        user = (f"; per user of up to {privacy['max_examples_per_user']} examples (ε = {privacy['user_epsilon']:.6g}, "
                f"δ = {privacy['user_delta']:.3g}) by group privacy")
    return (f"{head}; sampling {privacy['sampling']}{size}; neighbouring relation {privacy['neighboring_relation']}; "
            f"accountant {privacy['accountant']} ({privacy.get('bound', 'tight')}){user}")


def schedule_from_dict(data: dict) -> Schedule:
    """Inverse of :meth:`Schedule.to_dict` (validates the layout)."""
    if not isinstance(data, dict) or "rounds" not in data or "change_points" not in data:
        raise ValueError("a schedule file must hold an object with 'rounds' and 'change_points'")
    points = []
    for point in data["change_points"]:
        if not isinstance(point, dict) or "start_round" not in point:
            raise ValueError(f"every change-point must be an object with start_round; got {point!r}")
        values = dict(point)
        points.append((whole_number("start_round", values.pop("start_round")), values))
    return Schedule(rounds=whole_number("rounds", data["rounds"]), change_points=tuple(points),
                    metadata=dict(data.get("metadata") or {}), statement=str(data.get("statement") or ""),
                    privacy=data.get("privacy"))


def whole_number(name: str, value) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number; got {value!r}") from None
    if not number.is_integer():
        raise ValueError(f"{name} must be a whole number; got {value!r}")
    return int(number)


def with_gaussian_privacy(schedule: Schedule, *, unit: str, sampling: str, neighboring_relation: str,
                          dataset_size: int | None, delta: float, target_epsilon: float | None = None) -> Schedule:
    """``schedule`` with the privacy block of a Gaussian run: its ε is what ``fedplan epsilon --schedule`` computes
    for the exported segments (the tight PLD where it applies), so an export loads back with the same ε."""
    from dataclasses import replace

    from fedplan.bounds import accounting

    model = {"sampling": sampling, "neighboring_relation": neighboring_relation, "dataset_size": dataset_size,
             "client_sample_rate": None}
    probe = replace(schedule, privacy={"mechanism": "gaussian", "unit": unit, **model, "delta": delta, "epsilon": 0.0,
                                       "accountant": "pld"})
    spent = accounting.get_epsilon(delta=delta, segments=probe.segments(), **model)
    return replace(probe, privacy={**probe.privacy, "epsilon": spent.epsilon, "accountant": spent.accountant,
                                   "bound": spent.bound, "target_epsilon": target_epsilon})
