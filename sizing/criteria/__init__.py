"""What every verdict is taken with: plain functions of values that the load generator, the Spark jobs, the report
and the campaign's own checks share. It imports nothing of the core (a scenario is read through a Protocol).

- `rules`: every threshold and predicate that turns measurements into verdicts (validity, matched target,
  capacity, bottleneck, probe verdicts, scenario kinds); written to evaluate on values, Series and Spark Columns.
- `stats`: intervals of stated coverage across repeats and within one run, effects and comparisons.
- `search`: the capacity-search policy (`SearchSpec`, `CapacitySearch`): the next probe from the verdicts so far.
- `recovery`: recovery time and unavailability after a fault, from per-second throughput.
"""
