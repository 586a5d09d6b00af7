"""The load generator: runs one scenario of one config against one cluster and records what happened.

schedule (pure) -> client (pika, one IO loop per worker process) -> recorder (Parquet + S3) <- runner.
Fault injection lives in `loadgen.nemesis` and is only imported for timelines with faults.
"""
