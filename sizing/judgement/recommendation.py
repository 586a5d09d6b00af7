"""A sizing campaign's recommendation (pure: plain values in, typed values out): the cheapest config that meets the
target under ideal conditions and holds every required adverse scenario, each judged.

Inputs are what the analysis wrote: the cost-at-target board (a config is on it when a phase matched the target
within the SLO; its value is the cost per 1000 msg/s per month there), the `adverse` table's `held` per config and
scenario (sizing.judgement.adverse: each scenario by its own criterion; null when too few of its phases were
conclusive), its `reason`, and each config's count of invalid phases. A required scenario without a judgement is "not
judged", never a pass, and the verdict says why (`not_judged_text`: the adverse table's reason, e.g. the invalid phases
it could not count); a scenario with `required: false` is judged and reported but decides nothing.

The analysis writes the answer to the `recommendation` table (`from_tables`, then `table_rows`: one row per config);
the report's verdict, `query`, `compare` and `trend` read it back (`from_row`, `recommended_config`); nothing else
decides the size.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from sizing.campaign import Campaign, families
from sizing.criteria.rules import is_adverse
from sizing.criteria.stats import number
from sizing.judgement.adverse import NOT_JUDGED, held_value
from sizing.resources.versions import version_key


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
    shape_id: str = ""  # the config without its RabbitMQ version ("" : the config id itself)
    rabbitmq_version: str | None = None  # the version the spec asks for (None: the target's installed one)

    @property
    def shape(self) -> str:
        """The config's shape across versions (its id when the spec names no version)."""
        return self.shape_id or self.config_id

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

    def to_row(self, standing: int, is_recommended: bool) -> dict[str, Any]:
        """The config's `recommendation` row (sizing.contract.records.RECOMMENDATION, without campaign and run_id)."""
        def names(values: tuple[str, ...]) -> str | None:
            return ",".join(values) or None

        return {"config_id": self.config_id, "shape_id": self.shape,
                "rabbitmq_version": self.rabbitmq_version, "standing": standing, "monthly_cost": self.monthly_cost,
                "cost_per_1k_at_target": self.cost_at_target, "rank_at_target": self.target_rank,
                "meets_target": self.meets_ideal, "adverse_held": names(self.adverse_passed),
                "adverse_failed": names(self.adverse_failed), "adverse_not_judged": names(self.adverse_unjudged),
                "not_judged_reasons": json.dumps(list(self.unjudged_reasons)) if self.unjudged_reasons else None,
                "optional_failed": names(self.optional_failed), "invalid_phases": self.invalid_phases,
                "passes_all": self.passes_all, "recommended": is_recommended}

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> ConfigVerdict:
        """A `recommendation` row read back (as stored, or from a pandas frame: NaN is null)."""
        def names(value: Any) -> tuple[str, ...]:
            return tuple(value.split(",")) if isinstance(value, str) and value else ()

        reasons = row.get("not_judged_reasons")
        return cls(str(row["config_id"]), float(row["monthly_cost"]), number(row.get("cost_per_1k_at_target")),
                   _integer(row.get("rank_at_target")), names(row.get("adverse_held")),
                   names(row.get("adverse_failed")), int(row.get("invalid_phases") or 0),
                   names(row.get("adverse_not_judged")),
                   tuple(json.loads(reasons)) if isinstance(reasons, str) and reasons else (),
                   names(row.get("optional_failed")), str(row.get("shape_id") or row["config_id"]),
                   row["rabbitmq_version"] if isinstance(row.get("rabbitmq_version"), str) else None)


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
    shapes = {shape.config_id: shape for shape in campaign.clusters}
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
            optional_failed=tuple(name for name in optional if held.get((config_id, name)) is not True),
            shape_id=replace(shapes[config_id], rabbitmq_version=None).config_id if config_id in shapes else config_id,
            rabbitmq_version=shapes[config_id].rabbitmq_version if config_id in shapes else None))
    return sorted(out, key=lambda v: (v.target_rank is None, v.target_rank or 0, v.monthly_cost))


def recommended(verdicts: Iterable[ConfigVerdict]) -> ConfigVerdict | None:
    """The cheapest config per 1000 msg/s at the target that holds every required scenario, or None."""
    return next((v for v in sorted(verdicts, key=lambda v: (v.target_rank is None, v.target_rank or 0,
                                                            v.monthly_cost)) if v.passes_all), None)


def from_tables(campaign: Campaign, leaderboards: Iterable[Mapping[str, Any]],
                adverse_rows: Iterable[Mapping[str, Any]], phase_rows: Iterable[Mapping[str, Any]]
                ) -> list[ConfigVerdict]:
    """`standings` from the analysis' own rows: the leaderboards (one per config: monthly cost, and its cost and rank
    at the target when it met it), the adverse table's judgements (a null `held` is no judgement; its reason says
    why) and phase_summary's `valid` flags (each config's invalid phases)."""
    board_rows = list(leaderboards)
    monthly = {str(r["config_id"]): float(r["monthly_cost"]) for r in board_rows}
    board = [BoardEntry(str(r["config_id"]), int(rank), float(cost)) for r in board_rows
             if (rank := _integer(r.get("rank_at_target"))) is not None
             and (cost := number(r.get("cost_per_1k_at_target"))) is not None]
    held: dict[tuple[str, str], bool | None] = {}
    reasons: dict[tuple[str, str], str] = {}
    for r in adverse_rows:
        key = (str(r["config_id"]), str(r["scenario"]))
        held[key] = held_value(r.get("held"))
        if isinstance(r.get("reason"), str):
            reasons[key] = r["reason"]
    invalid: dict[str, int] = {}
    for r in phase_rows:
        if r.get("valid") is False or r.get("valid") == 0:
            invalid[str(r["config_id"])] = invalid.get(str(r["config_id"]), 0) + 1
    return standings(campaign, monthly, board, held, invalid, reasons)


def recommended_per_version(verdicts: Sequence[ConfigVerdict]) -> dict[str | None, ConfigVerdict | None]:
    """The recommendation for each RabbitMQ version the configs run (one entry, None's, when no config names one): a
    user picks the version before the size, so a campaign over several versions answers for each."""
    versions = dict.fromkeys(v.rabbitmq_version for v in verdicts)
    return {version: recommended([v for v in verdicts if v.rabbitmq_version == version]) for version in versions}


def table_rows(verdicts: Sequence[ConfigVerdict]) -> list[dict[str, Any]]:
    """The `recommendation` table's rows (without campaign and run_id) of `standings`' verdicts, in their order."""
    chosen = {id(best) for best in recommended_per_version(verdicts).values() if best is not None}
    return [v.to_row(standing, id(v) in chosen) for standing, v in enumerate(verdicts, start=1)]


def recommended_ids(rows: Iterable[Mapping[str, Any]]) -> list[str]:
    """The configs a run's `recommendation` rows mark recommended (one per RabbitMQ version), in their order."""
    return [str(r["config_id"]) for r in rows if r.get("recommended") is True or r.get("recommended") == 1]


def recommended_config(rows: Iterable[Mapping[str, Any]]) -> str | None:
    """The config a run's `recommendation` rows recommend, or, over several RabbitMQ versions, each version's (comma
    list; their ids name the version). None: none could be."""
    return ", ".join(recommended_ids(rows)) or None


@dataclass(frozen=True)
class VersionChange:
    """One conclusion about one cluster shape that differs between the RabbitMQ versions it ran on."""
    shape_id: str
    conclusion: str  # "recommended", "meets the target", "holds <scenario>"
    by_version: tuple[tuple[str, str], ...]  # (version, "yes" | "no" | "not judged"), in the versions' order

    def words(self) -> str:
        return (f"{self.shape_id}: {self.conclusion}: "
                + ", ".join(f"{answer} on {version}" for version, answer in self.by_version))


def version_changes(verdicts: Sequence[ConfigVerdict],
                    recommended_ids: Iterable[str] | None = None) -> list[VersionChange]:
    """Where a conclusion about a shape changes with the RabbitMQ version (issue 33: the studies on 4.0): for each
    shape run on two or more versions, whether it is recommended (for its version), meets the target, and holds each
    required adverse scenario, when the answers differ. `recommended_ids`: the configs the recommendation table
    marks (default: recommended_per_version's); the rest is read from the verdicts as stored."""
    chosen = (set(recommended_ids) if recommended_ids is not None else
              {best.config_id for best in recommended_per_version(verdicts).values() if best is not None})
    by_shape: dict[str, list[ConfigVerdict]] = {}
    for v in verdicts:
        by_shape.setdefault(v.shape, []).append(v)
    out = []
    for shape_id, arms in by_shape.items():
        if len(arms) < 2:
            continue
        arms = sorted(arms, key=lambda v: version_key(v.rabbitmq_version) if v.rabbitmq_version else ())

        def yes(flag: bool) -> str:
            return "yes" if flag else "no"

        conclusions: list[tuple[str, list[str]]] = [
            ("recommended", [yes(v.config_id in chosen) for v in arms]),
            ("meets the target", [yes(v.meets_ideal) for v in arms])]
        scenarios = dict.fromkeys(name for v in arms for name in (*v.adverse_passed, *v.adverse_failed,
                                                                    *v.adverse_unjudged))
        for name in scenarios:
            conclusions.append((f"holds {name}", ["yes" if name in v.adverse_passed else "no" if name in
                                                  v.adverse_failed else "not judged" for v in arms]))
        for conclusion, answers in conclusions:
            if len(set(answers)) > 1:
                out.append(VersionChange(shape_id, conclusion, tuple(
                    (v.rabbitmq_version or "installed", answer) for v, answer in zip(arms, answers, strict=True))))
    return out


def _integer(value: Any) -> int | None:
    figure = number(value)
    return None if figure is None else int(figure)
