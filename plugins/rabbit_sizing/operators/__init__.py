"""The DAG's operators, one module per step: `cluster` (Terraform apply and destroy of one trial's cluster),
`loadgen` (every scenario of a trial with the load generator), `analysis` (the Spark job's submit), `report` (the
HTML report into the object store, linked from the task)."""
