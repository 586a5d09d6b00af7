"""analysis: the campaign's Spark analysis in one driver: phase_summary of the given configs, then leaderboards.

    spark-submit --py-files build/sizing_jobs.zip spark_jobs/analysis.py \
        --spec campaigns/local-quick.yaml --campaign local-quick --config n1-c5.2xlarge-gp2 --run-id R1 [--validate]

1. phase_summary (spark_jobs/phase_summary.py) replaces the `tables/phase_summary/campaign=C/config=K/` partition
   of each `--config` from the raw records of the `--run-id`s (never "latest");
2. leaderboards (spark_jobs/leaderboards.py) recomputes every campaign-wide table from all of the campaign's
   phase_summary partitions, the ones just written and the other configs' alike.

Without `--config`, only step 2 runs (re-rank after a catalog change, say). `--validate` runs the GX suites on
each raw batch before it is read and on each table after it is written; the campaign-wide result is filed
under the first `--run-id`. One job rather than one per step: each spark-submit pays ~13 s of JVM start,
imports and session set-up before it reads a byte (BENCHMARKS.md, "One submit").
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from adapters.objectstore import StoreSpec
from spark_jobs import leaderboards, phase_summary
from spark_jobs.campaigns import load as load_campaign
from spark_jobs.session import get_session


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="analysis", description=__doc__.splitlines()[0])
    parser.add_argument("--spec", required=True, help="campaign spec YAML (SLO, catalog, shapes, target)")
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--config", dest="configs", action="append", default=[],
                        help="config id whose phase_summary partition is replaced; repeat for several "
                             "(none: only the leaderboards are recomputed)")
    parser.add_argument("--run-id", dest="run_ids", action="append", default=[],
                        help="run id(s) to summarise; repeat for several")
    parser.add_argument("--validate", action="store_true",
                        help="GX suites on each raw batch before it is read and on each table after it is written")
    parser.add_argument("--docs-dir", default=None, help="where GX Data Docs are built (with --validate)")
    args = parser.parse_args(argv)
    if args.configs and not args.run_ids:
        parser.error("--config needs at least one --run-id: raw records are read by run, never 'latest'")
    if args.validate and not args.run_ids:
        parser.error("--validate needs a --run-id: validation results are filed under it")
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
    with timed("session start"):
        spark = get_session(f"analysis {args.campaign}")
    spec = StoreSpec.from_env()
    if args.configs:
        with timed("phase_summary"):
            phase_summary.step(spark, spec, campaign, args.configs, args.run_ids, args.validate, args.docs_dir)
    with timed("leaderboards"):
        leaderboards.step(spark, spec, campaign, args.run_ids[0] if args.validate else None, args.docs_dir)
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
    from spark_jobs.analysis import main as _main

    sys.exit(_main())
