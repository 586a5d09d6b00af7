"""PySpark jobs: raw load-generator records in the object store -> Parquet tables, validated by GX.

Three parts, dependencies one way (the `spark-jobs-layers` import contract):

- `spark_jobs.jobs`: the entry points spark-submit runs (`analysis`, `validate`, `query`), each parse args ->
  read -> pure DataFrame transforms -> write; no job imports another.
- `spark_jobs.lib`: what the jobs share (the analysis' steps, table I/O, the object-store data source, the GX gate
  and suites, Spark settings, the spark-submit argv).
- `spark_jobs.tools`: developer tools on top of the library (synthetic records for tests and benchmarks, the
  driver JVM's class-data-sharing archive that setup builds); no job or library module imports them.

Shared with the rest of the project: the data contract and table schemas (`sizing.contract.records`,
`sizing.contract.layout`, `sizing.contract.histogram`), the judgement rules (`sizing.criteria.rules`) and the cost model
(`sizing.resources.cost`). See README.md.
"""
