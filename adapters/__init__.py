"""The edge: one adapter per outside system, shared by the Airflow plugins, the apps, the load generator and
the benchmarks.

terraform (build commands, run them), management (the RabbitMQ management API), objectstore (S3 and a local
stand-in), procs (process groups), leases (cluster slots), planning (spec parameters, state dir, trials for the
DAG), browser (headless Chromium), `airflowapi` (Airflow's REST API: login, trigger, runs, task instances, logs,
health; the CLI's, the demo's and the tests' one client), `httpprobe` (is a local service answering, a JSON
GET), `ssm` (the SSM client the aws fault executor receives), `latencyproxy` (a TCP proxy adding a known delay
each way between the load generator and the broker: seed 003's round-trip time), `filelock` (a machine-wide
flock(2) lock: the network bridge's, the calibration store's, the test lanes'). Adapters import the core and
never their users.
"""
