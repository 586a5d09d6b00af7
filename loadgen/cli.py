"""`python -m loadgen run ...`: one scenario of one config against one cluster.

Every option can also come from the environment (LOADGEN_CAMPAIGN, LOADGEN_CONFIG, LOADGEN_SCENARIO,
LOADGEN_RUN_ID, LOADGEN_REPEAT, LOADGEN_CLUSTER_JSON, LOADGEN_WORKERS, LOADGEN_OUT), which is how the
container image is usually driven. The object store comes from SIZING_S3_ENDPOINT / SIZING_S3_BUCKET.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from sizing.campaign import load_campaign
from sizing.documents.fields import SpecError
from sizing.resources.cluster import ClusterInfo


def _env(name: str, default: str | None = None) -> str | None:
    return os.environ.get(f"LOADGEN_{name}", default)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m loadgen", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run one scenario of one config against one cluster")
    run.add_argument("--campaign", default=_env("CAMPAIGN"), help="campaign YAML (LOADGEN_CAMPAIGN)")
    run.add_argument("--config", default=_env("CONFIG"), help="config id, e.g. n3-c5.2xlarge-gp2 (LOADGEN_CONFIG)")
    run.add_argument("--scenario", default=_env("SCENARIO"), help="scenario name (LOADGEN_SCENARIO)")
    run.add_argument("--run-id", default=_env("RUN_ID"), help="run label from the orchestrator (LOADGEN_RUN_ID)")
    run.add_argument("--repeat", type=int, default=int(_env("REPEAT", "1")), help="1-based repeat (LOADGEN_REPEAT)")
    run.add_argument("--cluster-json", default=_env("CLUSTER_JSON"),
                     help="ClusterInfo as JSON text or a file (terraform output -json is accepted too)")
    run.add_argument("--workers", type=int, default=int(_env("WORKERS", "0")),
                     help="worker processes (default: one per CPU, at most one per client)")
    run.add_argument("--out", default=_env("OUT", "artifacts/loadgen"), help="local record directory")
    run.add_argument("--no-upload", action="store_true", default=_env("NO_UPLOAD") == "1",
                     help="write records locally only")
    run.add_argument("--tick-ms", type=float, default=5.0, help="publish/ack tick of each worker (ms)")
    run.add_argument("--drain-timeout", type=float, default=30.0, help="longest wait for consumers after the end (s)")
    run.add_argument("--sample-interval", type=float, default=5.0, help="management API sampling period (s)")
    run.add_argument("--progress-interval", type=float, default=5.0, help="progress line period (s)")
    run.add_argument("--io-mode", choices=("tick", "event"), default=_env("IO_MODE", "tick"),
                     help="tick: read sockets once per tick (fewer syscalls); event: read on every readable event")
    run.add_argument("--log-level", default=_env("LOG_LEVEL", "WARNING"))
    calibrate = sub.add_parser("calibrate", help="measure this host's calibration and store it (loadgen.calibrate)")
    calibrate.add_argument("--log-level", default="WARNING")
    return parser


def load_cluster(value: str) -> ClusterInfo:
    """ClusterInfo from JSON text or a file holding either ClusterInfo or `terraform output -json`."""
    text = value
    if not value.lstrip().startswith("{"):
        text = Path(value).read_text()
    data = json.loads(text)
    if "cluster" in data and "nodes" not in data:
        return ClusterInfo.from_terraform_outputs(data)
    return ClusterInfo.from_dict(data)


def default_workers(clients: int) -> int:
    return max(1, min(os.cpu_count() or 1, clients))


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    if args.command == "calibrate":
        return _calibrate()
    missing = [name for name in ("campaign", "config", "scenario", "run_id", "cluster_json")
               if not getattr(args, name)]
    if missing:
        print(f"missing: {', '.join('--' + m.replace('_', '-') for m in missing)}", file=sys.stderr)
        return 2
    from loadgen.runner import Runner, RunOptions  # after argument checks: keeps --help fast

    try:
        campaign = load_campaign(args.campaign)
        cluster = load_cluster(args.cluster_json)
        campaign.cluster(args.config)
        scenario = campaign.scenario(args.scenario)
    except (SpecError, KeyError, ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    groups = [g.workload for g in scenario.workload_groups]  # issue 14: the clients of every workload group
    workers = args.workers or default_workers(max(sum(w.publishers.count for w in groups),
                                                  sum(w.consumers.count for w in groups)))
    options = RunOptions(workers=workers, out_dir=Path(args.out), upload=not args.no_upload,
                         tick_s=args.tick_ms / 1000, drain_timeout_s=args.drain_timeout,
                         sample_interval_s=args.sample_interval, progress_interval_s=args.progress_interval,
                         io_mode=args.io_mode)
    runner = Runner(campaign, args.config, args.scenario, args.run_id, cluster, repeat=args.repeat,
                    options=options, echo=lambda line: print(line, flush=True))
    return runner.run()


def _calibrate() -> int:
    from adapters import calibration
    from loadgen.calibrate import CalibrationError, measure

    try:
        measured = measure(echo=lambda line: print(line, flush=True))
    except CalibrationError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    path = calibration.store(measured)
    print(f"{measured.describe()}; {measured.msg_s:,.0f} msg/s at {measured.node_cores:g} cores, the node charged "
          f"{measured.node_cpu_s:.2f} CPU-s over {measured.measured_s:.0f} s; stored in {path}")
    return 0
