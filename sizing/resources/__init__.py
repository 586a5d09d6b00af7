"""What a cluster is made of and what it costs, and where it runs: the resource model, below the campaign that
names its parts (it reads documents only).

- `catalog`: price catalogs (instances, volumes, their limits), loaded from `catalogs/<name>.yaml` and validated.
- `cost`: monthly cluster cost and cost per 1000 msg/s per month (seed 000's figure of merit).
- `disks`: per-node disk layouts: which volume holds which of RabbitMQ's disk workloads, by role.
- `versions`: the RabbitMQ versions a config may ask for, their Erlang series, the one version parser.
- `scalemodel`: the local scale model: factors, each node's and the generator's envelope, the machine's fit.
- `calibration`: the host calibration: the reference measurement and what its answer means.
- `localports`: a local cluster's port block, its per-node layout and the node limit that follows from it.
- `cluster`: what a stood-up cluster looks like after Terraform (`ClusterInfo`), and health verdicts.
- `existing`: `deployment: existing`: a cluster that is already running, its endpoints checked.
"""
