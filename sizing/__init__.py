"""rabbit-sizing core: the pure domain (campaign spec, timelines, plan and trials, cost model, search policy,
judgement rules, storage layout, record schemas).

No clients, processes or HTTP (import contract `pure-core` in pyproject.toml): the DAGs, the load generator,
the Spark jobs and the apps all build on it, and its tests need no I/O.
"""
