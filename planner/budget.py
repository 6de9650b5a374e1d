"""A runtime guard for a training loop: account the steps (or rounds) that actually run against a plan's budget,
and refuse the one that would overspend it.

::

    budget = fedplan.Budget(fedplan.dp_sgd(dataset_size=60_000, batch_size=256, epochs=15, target_epsilon=3))
    for batch in loader:
        budget.step()              # raises BudgetExceededError *before* a step past the budget is taken
        train_step(batch)
    budget.spent()                 # the tight ε of what ran

A step may deviate from the plan (``step(sample_rate=…, noise_multiplier=…)``): a step that samples no more and
adds no less noise than the plan's step at the same index (each step's privacy loss is monotone in q and 1/σ,
so the plan then dominates what ran) is admitted without accounting; any other history is accounted exactly by
the plan's accountant, sampling and neighbouring relation before the step is admitted.
"""

from __future__ import annotations

from fedplan.bounds import accounting
from fedplan.bounds.validation import check_int, check_real
from fedplan.planner.export import schedule_of


class BudgetExceededError(RuntimeError):
    """The next step would spend more than the budget (nothing was accounted for it)."""


class Budget:
    """The steps a run has taken, accounted against the plan's ε at the plan's δ (or ``target_epsilon``)."""

    def __init__(self, plan, *, target_epsilon: float | None = None):
        schedule = schedule_of(plan)
        if not schedule.is_gaussian:
            mechanism = None if schedule.privacy is None else schedule.privacy["mechanism"]
            raise ValueError(f"Budget follows Gaussian plans (DP-SGD, federated averaging); this plan's mechanism is "
                             f"{mechanism}")
        privacy = schedule.privacy
        self.delta = privacy["delta"]
        limit = target_epsilon if target_epsilon is not None else (privacy.get("target_epsilon")
                                                                   or privacy["epsilon"])
        self.target_epsilon = check_real("target_epsilon", limit, low=0.0, low_open=True)
        self._options = {**schedule.accounting_options(),
                         "accountant": "rdp" if privacy["accountant"] == "rdp" else "pld"}
        self._plan_segments = schedule.segments()
        self._history: list[tuple[float, float, int]] = []
        # the plan's own steps (or quieter ones) are safe without accounting only while the plan fits the budget
        self._dominated = privacy["epsilon"] <= self.target_epsilon

    @property
    def steps(self) -> int:
        """Steps admitted so far."""
        return sum(count for _, _, count in self._history)

    def _plan_slice(self, start: int, count: int) -> list[tuple[float | None, float | None, int]]:
        """The plan's (q, σ, steps) pieces covering steps ``start`` … ``start + count - 1``; a piece past the plan's
        end has q = σ = None."""
        pieces, position, end = [], 0, start + count
        for q, sigma, steps in self._plan_segments:
            low, high = max(start, position), min(end, position + steps)
            if low < high:
                pieces.append((q, sigma, high - low))
            position += steps
        if end > position:
            pieces.append((None, None, end - max(start, position)))
        return pieces

    def _next(self, steps: int, sample_rate, noise_multiplier) -> list[tuple[float, float, int]]:
        """The steps asked for, as segments: the plan's values where none are given (its last past its end)."""
        steps = check_int("steps", steps, low=1, high=accounting.MAX_STEPS)
        if sample_rate is not None:
            sample_rate = accounting.check_sample_rate(sample_rate)
        if noise_multiplier is not None:
            noise_multiplier = accounting.check_noise_multiplier(noise_multiplier)
        last_q, last_sigma, _ = self._plan_segments[-1]
        return accounting.merged_segments([(sample_rate if sample_rate is not None else (last_q if q is None else q),
                         noise_multiplier if noise_multiplier is not None else (last_sigma if sigma is None else sigma),
                         count) for q, sigma, count in self._plan_slice(self.steps, steps)])

    def _still_dominated(self, segments) -> bool:
        """Whether every step sampled at most and added at least the plan's step at the same index."""
        index = self.steps
        for q, sigma, count in segments:
            for planned_q, planned_sigma, _ in self._plan_slice(index, count):
                if planned_q is None or q > planned_q or sigma < planned_sigma:
                    return False
            index += count
        return True

    def _account(self, segments) -> float:
        """ε of the history followed by ``segments``, by the plan's accountant."""
        history = accounting.merged_segments(self._history + segments)
        return accounting.get_epsilon(delta=self.delta, segments=history, **self._options).epsilon

    def epsilon_after(self, steps: int = 1, *, sample_rate: float | None = None,
                      noise_multiplier: float | None = None) -> float | None:
        """ε after the history plus these steps, or None when the plan dominates them (then ε ≤ the plan's)."""
        segments = self._next(steps, sample_rate, noise_multiplier)
        if self._dominated and self._still_dominated(segments):
            return None
        return self._account(segments)

    def would_exceed(self, steps: int = 1, *, sample_rate: float | None = None,
                     noise_multiplier: float | None = None) -> bool:
        """Whether taking these steps would spend more than the budget."""
        epsilon = self.epsilon_after(steps, sample_rate=sample_rate, noise_multiplier=noise_multiplier)
        return epsilon is not None and epsilon > self.target_epsilon

    def step(self, steps: int = 1, *, sample_rate: float | None = None, noise_multiplier: float | None = None) -> None:
        """Admit ``steps`` steps (the plan's sample rate and noise unless given), or raise
        :class:`BudgetExceededError` and admit none."""
        segments = self._next(steps, sample_rate, noise_multiplier)
        dominated = self._dominated and self._still_dominated(segments)
        if not dominated:
            epsilon = self._account(segments)
            if epsilon > self.target_epsilon:
                raise BudgetExceededError(
                    f"step {self.steps + 1}: {steps} more step(s) would spend ε = {epsilon:.6g} > the budget "
                    f"{self.target_epsilon:g} at δ = {self.delta:g} ({self.steps} step(s) taken)")
        self._dominated = dominated
        self._history = accounting.merged_segments(self._history + segments)

    def spent(self) -> float:
        """The ε (at the plan's δ) of the steps admitted so far, by the plan's accountant (0 before any)."""
        if not self._history:
            return 0.0
        return accounting.get_epsilon(delta=self.delta, segments=self._history, **self._options).epsilon
