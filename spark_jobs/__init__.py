"""PySpark jobs: raw load-generator records in the object store -> Parquet tables, validated by GX.

Each job = parse args -> read -> pure DataFrame transforms -> write. Only the data contract
(`sizing.records`, `sizing.layout`, `sizing.histogram`, `sizing.cost`) is shared with the rest of the project.
"""
