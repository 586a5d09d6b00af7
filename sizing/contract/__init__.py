"""The contract every writer and reader shares: the records' and tables' columns, and where each object lives in
the store. It stands on the resources only (a column per disk role) and beside `sizing.criteria`, apart from it.

- `records`: the raw-record types and the analysis' tables: every column, its type and meaning, the run key.
- `layout`: the object-store keys of the tables, reports, validations and specs (keys only, no I/O).
- `raw_layout`: the keys of the load generator's raw records, which the apps never read.
- `histogram`: mergeable latency histograms with a bounded relative error, and their wire format.
"""
