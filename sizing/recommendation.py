"""A sizing campaign's recommendation (pure: plain values in, typed values out): the cheapest config that meets the
target under ideal conditions and holds every required adverse scenario, each judged.

Inputs are what the analysis wrote: the cost-at-target board (a config is on it when a phase matched the target
within the SLO; its value is the cost per 1000 msg/s per month there), the `adverse` table's `held` per config and
scenario (sizing.adverse: each scenario by its own criterion; null when too few of its phases were conclusive), its
`reason`, and each config's count of invalid phases. A required scenario without a judgement is "not judged", never a
pass, and the verdict says why (`not_judged_text`: the adverse table's reason, e.g. the invalid phases it could not
count); a scenario with `required: false` is judged and reported but decides nothing. The report's verdict reads
`standings` and `recommended`; nothing else decides the size.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sizing.adverse import NOT_JUDGED
from sizing.rules import is_adverse
from sizing.spec import Campaign, families


@dataclass(frozen=True)
class BoardEntry:
    """One row of the cost-at-target board: the config's rank and its cost per 1000 msg/s per month at the target."""
    config_id: str
    rank: int
    cost_at_target: float


@dataclass(frozen=True)
class ConfigVerdict:
    config_id: str
    monthly_cost: float
    cost_at_target: float | None  # None: did not meet target + SLO under ideal conditions
    target_rank: int | None
    adverse_passed: tuple[str, ...]
    adverse_failed: tuple[str, ...]
    invalid_phases: int
    adverse_unjudged: tuple[str, ...] = ()  # required adverse scenarios the `adverse` table has no judgement for
    unjudged_reasons: tuple[str, ...] = ()  # why, one per adverse_unjudged (NO_ROW: the table has no row for it)
    optional_failed: tuple[str, ...] = ()  # adverse scenarios with `required: false` it did not hold (reported only)

    @property
    def meets_ideal(self) -> bool:
        return self.cost_at_target is not None

    @property
    def passes_all(self) -> bool:
        """Meets the target under ideal conditions and holds every required adverse scenario, each judged."""
        return self.meets_ideal and not self.adverse_failed and not self.adverse_unjudged

    def not_judged_text(self) -> str:
        """The required scenarios not judged, each with why: `broker-kill (no conclusive repeat of ...)`."""
        return ", ".join(f"{name} ({why})" for name, why in zip(self.adverse_unjudged, self.unjudged_reasons,
                                                                 strict=True))


NO_ROW = "no judgement in the adverse table"
_NOT_JUDGED_PREFIX = f"{NOT_JUDGED}: "


def standings(campaign: Campaign, monthly: Mapping[str, float], board: Iterable[BoardEntry],
              held: Mapping[tuple[str, str], bool | None], invalid_phases: Mapping[str, int],
              reasons: Mapping[tuple[str, str], str] | None = None) -> list[ConfigVerdict]:
    """Every config of `monthly` (config -> cluster cost per month) with its place on the cost-at-target board and
    its adverse judgements (`held`: (config, scenario) -> held; None or a missing key: not judged, `reasons` says
    why). Ordered by rank on the board, configs off it last by monthly cost: the first that passes_all is the
    recommendation."""
    reasons = reasons or {}

    def why(config_id: str, name: str) -> str:
        text = reasons.get((config_id, name)) or NO_ROW
        return text[len(_NOT_JUDGED_PREFIX):] if text.startswith(_NOT_JUDGED_PREFIX) else text

    on_board = {entry.config_id: entry for entry in board}
    written = families(campaign.scenarios)  # an isolated scenario's runs are judged as the one scenario
    required = [s.name for s in written if is_adverse(s) and s.required]
    optional = [s.name for s in written if is_adverse(s) and not s.required]
    out = []
    for config_id, cost in monthly.items():
        entry = on_board.get(config_id)
        out.append(ConfigVerdict(
            config_id, cost, entry.cost_at_target if entry else None, entry.rank if entry else None,
            adverse_passed=tuple(name for name in required if held.get((config_id, name)) is True),
            adverse_failed=tuple(name for name in required if held.get((config_id, name)) is False),
            invalid_phases=int(invalid_phases.get(config_id, 0)),
            adverse_unjudged=tuple(name for name in required if held.get((config_id, name)) is None),
            unjudged_reasons=tuple(why(config_id, name) for name in required if held.get((config_id, name)) is None),
            optional_failed=tuple(name for name in optional if held.get((config_id, name)) is not True)))
    return sorted(out, key=lambda v: (v.target_rank is None, v.target_rank or 0, v.monthly_cost))


def recommended(verdicts: Iterable[ConfigVerdict]) -> ConfigVerdict | None:
    """The cheapest config per 1000 msg/s at the target that holds every required scenario, or None."""
    return next((v for v in sorted(verdicts, key=lambda v: (v.target_rank is None, v.target_rank or 0,
                                                            v.monthly_cost)) if v.passes_all), None)
