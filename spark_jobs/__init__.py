"""PySpark jobs: raw load-generator records in the object store -> Parquet tables, validated by GX.

Each job (phase_summary, leaderboards, validate, query) = parse args -> read -> pure DataFrame transforms ->
write, and imports no other job; shared code is in library modules (tableio, gate, validation, rules_columns,
s3source, session, ...; see README.md "Modules"). Shared with the rest of the project: the data contract and
table schemas (`sizing.records`, `sizing.layout`, `sizing.histogram`), the judgement rules (`sizing.rules`) and
the cost model (`sizing.cost`).
"""
