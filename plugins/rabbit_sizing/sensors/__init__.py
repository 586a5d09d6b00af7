"""The DAG's sensors: `cluster` (a free cluster slot, then a healthy cluster)."""
