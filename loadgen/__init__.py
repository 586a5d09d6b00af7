"""The load generator: runs one scenario of one config against one cluster and records what happened.

Where each concept lives (OpenMessaging-Benchmark / Jepsen style seams):

- `schedule` (pure): the open-loop send times and the client plan (which worker runs which client, on which node).
- `wire` (pure): hand-built publish frames (templates marshalled once by pika) and the ack frame.
- `frames` (pure): the receive fast path, bytes -> deliveries, confirms (incl. `multiple`), other frames.
- `protocol`: the narrow client protocol, `Link` (publish batch, ack, close), `Driver` (on_open, on_confirm,
  on_deliveries) and `Connector` (open). A new rate mode or workload group is a new driver.
- `drivers`: the open-loop publisher and the consumer (processing time, multi-ack) above a `Link`, and the
  per-second stats they fill.
- `client`: the pika implementation: `FastConnection` (a SelectConnection that is a `Link`), `PikaConnector` (a
  worker's connections: open, ready, reconnect, blocked, tick-mode reads) and `Worker`, the worker process's tick
  loop (publish what is due, acks, per-second `client_seconds` rows) on an injectable clock and IO loop; the
  generator's "behind" verdict is `sizing.criteria.rules.worker_behind`.
- `messages`: the typed values between the runner and its workers (`WorkerConfig`, `Start`/`Stop`, `Ready`,
  `Row`, `Event`, `WorkerError`, `Done`); `pool`: the worker processes behind a `Pool` protocol.
- `sink`: every record of a run by phase, one flush path; `recorder`: Parquet per `sizing.contract.records` + upload.
- `accounting`: the per-worker accounting file (writer and reader) and the loss / duplicate / reorder merge.
- `groups`: workload groups (issue 14): each named group's workers, clients, queues and timeline, planned apart.
- `session`: the workers, attempt by attempt (`Session`: plan, ready, start on the run's clock, follow, drain,
  stop; each `Attempt` a value of its own) and the `Recording` of what they report (sink, totals, progress).
- `search`: the online capacity search (issue 16): asks `sizing.criteria.search.CapacitySearch` for each probe, runs it
  as a one-phase attempt of the session, judges it from that attempt's per-second figures (`sizing.criteria.rules`), and
  records every decision as a `search_probe` event.
- `runner`: the run around its attempts (manifest, the broker's counters, samplers, fault injector, latency
  proxies, final records and accounting) over a `Pool` and an injectable `Clock`; `cli`: `python -m loadgen run`.
- `broker`: queue declaration and the management-API sampler; `nodes`: the per-node resource sampler
  (`node_seconds`, one thread per node); `nemesis` and `faults/`: fault injection, only
  imported for timelines with faults.
- `calibrate`: the host calibration's reference measurement (`sizing calibrate`; sizing.resources.calibration says what
  it means, adapters.calibration keeps it per host).
"""
