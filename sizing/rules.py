"""Judgement rules: the one home of every threshold and predicate that turns measurements into verdicts.

The load generator (when it flags itself as behind), the Spark jobs (validity, matched target, capacity)
and the report (which scenarios are intensity ladders) import these; none keeps a copy. The rules in
words are in spark_jobs/README.md ("Rules").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: the rules are plain functions of values
    from sizing.spec import Scenario

# A phase matched its target when the achieved confirm and consume rates both reached this share of it.
MATCH_FRACTION = 0.98
# A load-generator worker using at least this share of one core over a second is saturated: the generator,
# not the broker, may be what limits the phase. One threshold for the generator's own `worker_behind`
# events and for the analysis' validity rule.
WORKER_CPU_SATURATION = 0.95
# A worker whose send loop woke this much later than planned has fallen behind its schedule.
WORKER_TICK_LAG_S = 0.1


def worker_behind(cpu_s: float, tick_lag_s: float) -> bool:
    """The generator's own verdict on one worker-second: saturated CPU or a lagging send loop."""
    return cpu_s >= WORKER_CPU_SATURATION or tick_lag_s > WORKER_TICK_LAG_S


def is_intensity(scenario: Scenario) -> bool:
    """Ideal-conditions increasing-intensity test (seed 000); anything else is an adverse scenario (seed 002)."""
    return scenario.step_rates is not None and not scenario.faults and scenario.processing_ms is None
