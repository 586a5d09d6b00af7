"""What the Spark jobs share (spark_jobs/README.md, "Modules", says what each holds).

Steps of the analysis: `phase_summary`, `leaderboards`, `history`. Reading and writing: `tableio`, `s3source`
(the object-store data source), `session`, `settings`, `campaigns`. Checks: `gate`, `validation` (GX).
Transforms: `rules_columns`, `histmerge`, `recovery`, `series` (the per-second series tables). Submitting: `submit`
(the --py-files zip and argv).
"""
