"""analysis: the campaign's Spark analysis in one driver: phase_summary of the given configs, then per run the
`runs` row and the campaign-wide tables.

    spark-submit --py-files build/sizing_jobs.zip spark_jobs/jobs/analysis.py \
        --spec campaigns/local-quick.yaml --campaign local-quick --config n1-c5.2xlarge-gp2 --run-id R1 \
        [--baseline-run R0] [--validate]

1. phase_summary (spark_jobs/lib/phase_summary/) replaces the `tables/phase_summary/campaign=C/config=K/run=R/`
   partition of each `--config` and `--run-id` from its raw records (never "latest"); every other run's rows stay;
2. for each `--run-id`: its `runs` row (spark_jobs/lib/history.py: the run's manifests, versions, spec, baseline) and
   its campaign-wide tables (spark_jobs/lib/leaderboards.py) from that run's phase_summary rows of every config, each
   into the run's partition `tables/<table>/campaign=C/run=R/`.

Without `--config`, only step 2 runs (re-rank after a catalog change, say); without `--run-id` too, for every
run with phase_summary rows. Tables written before they were partitioned by run are moved into run partitions
first (tableio.migrate_legacy_partitions) and their runs re-ranked. `--validate` runs the GX suites on the raw
batches (from the job's start, in a thread, without Spark: nothing is written unless they pass) and on each table
after it is written, filed under its run. One job rather than one per
step: each spark-submit pays ~13 s of JVM start, imports and session set-up before it reads a byte
(BENCHMARKS.md, "One submit").
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from adapters.objectstore import StoreSpec
from spark_jobs.lib import gate, history, leaderboards, phase_summary
from spark_jobs.lib.campaigns import load as load_campaign
from spark_jobs.lib.session import get_session
from spark_jobs.lib.tableio import migrate_legacy_partitions, stored_runs


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="analysis", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="campaign spec YAML (SLO, catalog, shapes, target)")
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--config", dest="configs", action="append", default=[],
                        help="config id whose phase_summary partition is replaced; repeat for several "
                             "(none: only the leaderboards are recomputed)")
    parser.add_argument("--run-id", dest="run_ids", action="append", default=[],
                        help="run id(s) to summarise; repeat for several")
    parser.add_argument("--baseline-run", default=None,
                        help="the run these runs are compared with (recorded in their `runs` rows; the report "
                             "opens with the comparison)")
    parser.add_argument("--validate", action="store_true",
                        help="GX suites on each raw batch before anything is written and on each table after it "
                             "is written")
    parser.add_argument("--docs-dir", default=None, help="where GX Data Docs are built (with --validate)")
    args = parser.parse_args(argv)
    if args.configs and not args.run_ids:
        parser.error("--config needs at least one --run-id: raw records are read by run, never 'latest'")
    if args.validate and not args.run_ids:
        parser.error("--validate needs a --run-id: validation results are filed under it")
    if args.baseline_run is not None and args.baseline_run in args.run_ids:
        parser.error(f"--baseline-run {args.baseline_run}: a run is not compared with itself")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    campaign = load_campaign(args.spec)
    if campaign.name != args.campaign:
        raise SystemExit(f"--campaign {args.campaign!r} but {args.spec} defines campaign {campaign.name!r}")
    for config in args.configs:
        try:
            campaign.cluster(config)  # an unknown config fails before the session starts or anything is read
        except KeyError as exc:
            raise SystemExit(f"--config: {exc.args[0]}") from None
    spec = StoreSpec.from_env()
    # The raw gate needs no Spark: it starts now, so that it overlaps the session's start too.
    raw_gate = gate.RawGate(spec, campaign, args.configs, args.run_ids, args.docs_dir) \
        if args.validate and args.configs else None
    with timed("session start"):
        spark = get_session(f"analysis {args.campaign}")
    migrated = migrate_legacy_partitions(spec, campaign.name)
    if migrated:
        print(f"analysis: moved the tables of run(s) {', '.join(migrated)} into run partitions", flush=True)
    if args.configs:
        with timed("phase_summary"):
            phase_summary.step(spark, spec, campaign, args.configs, args.run_ids, args.validate, args.docs_dir,
                               raw_gate)
    runs = list(dict.fromkeys([*args.run_ids, *migrated])) if args.run_ids \
        else stored_runs(spec, "phase_summary", campaign.name)
    for run_id in runs:
        with timed(f"runs and leaderboards of {run_id}"):
            history.write_runs(spark, spec, campaign, [run_id], args.baseline_run if run_id in args.run_ids else None)
            leaderboards.step(spark, spec, campaign, run_id, args.validate and run_id in args.run_ids, args.docs_dir)
    return 0


@contextmanager
def timed(what: str) -> Iterator[None]:
    """Progress in the task log: how long each part of the job took."""
    start = time.monotonic()
    yield
    print(f"analysis: {what} took {time.monotonic() - start:.1f} s", flush=True)


if __name__ == "__main__":
    # Run the importable module's main: the functions shipped to Python workers then all come from the
    # spark_jobs package (in the --py-files zip), never from a second copy loaded as __main__.
    from spark_jobs.jobs.analysis import main as _main

    sys.exit(_main())
