"""What the Spark jobs share (spark_jobs/README.md, "Modules", says what each holds).

Steps of the analysis: `phase_summary` (a package: one module per table it writes, spark_jobs/lib/phase_summary),
`leaderboards`, `history`. Reading and writing: `tableio`, `s3source` (the object-store data source), `session`,
`settings`, `campaigns`. Checks: `gate`, `validation` (GX). Transforms: `rules_columns`, `histmerge`, `recovery`,
`series` (what the per-second series tables share). Submitting: `submit` (the --py-files zip and argv).
"""
