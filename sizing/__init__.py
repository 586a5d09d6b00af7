"""rabbit-sizing core: the pure domain, in floors that build on the ones below them only (import contract
`sizing-layers` in pyproject.toml; `pure-core` keeps clients, processes and HTTP out of all of them):

- `planning/`: what a campaign and one DAG run do: timelines, configs and trials, the run's params and plan, what a
  trial's cluster needs, admission on a machine.
- `judgement/`: what the measurements say: adverse verdicts, the recommendation, repeats' intervals, findings, two
  runs compared, trends, the upgrade question, the seed conclusions, a run's history row.
- `campaign/`: the campaign model a user writes, parsed and validated (every problem with its field path), and the
  campaign on the local scale model.
- `criteria/` and `contract/`, side by side and apart: the thresholds, predicates, statistics and search policy every
  verdict is taken with; the records, tables and object-store keys every writer and reader shares.
- `resources/`: what a cluster is made of and costs: price catalogs, cost, disk layouts, RabbitMQ versions, the
  local scale model and the host's calibration, local port blocks, a stood-up or existing cluster.
- `documents/`: a user's YAML read into checked values (the field reader, `Problem` and `SpecError`, bounded loading).

The DAGs, the load generator, the Spark jobs and the apps all build on it, and its tests need no I/O.
"""
