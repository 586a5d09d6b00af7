"""The Spark jobs spark-submit runs (spark_jobs.lib.submit.JOBS): each is its CLI and imports no other job.

- `analysis`: the DAG's analysis task: phase_summary of the given configs, then each run's `runs` row and
  campaign-wide tables (with --validate, the GX gates around every batch).
- `validate`: the GX suites on one batch, the result filed next to it.
- `query`: `sizing query`, Spark SQL over a campaign's tables and raw records.
"""
