"""validate: run the GX suites on one batch; write the result next to it; fail naming what failed.

    spark-submit --py-files build/sizing_jobs.zip spark_jobs/jobs/validate.py --batch raw \
        --spec campaigns/local-quick.yaml --campaign local-quick --config n1-c5.2xlarge-gp2 --run-id R1
    python -m spark_jobs.jobs.validate --batch leaderboards --spec ... --campaign local-quick --run-id R1

Batches and where results go: spark_jobs/lib/gate.py. Every batch is read by this process (no Spark session: GX
validates pandas frames, and the rows would only cross into a JVM and back). Data Docs are built into --docs-dir
(default build/gx_docs). Exit code 1 when any expectation failed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from adapters.objectstore import StoreSpec
from sizing.contract import layout
from spark_jobs.lib import gate
from spark_jobs.lib.campaigns import load as load_campaign


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="validate", description=__doc__.splitlines()[0])
    parser.add_argument("--batch", required=True, choices=list(gate.BATCHES))
    parser.add_argument("--spec", required=True)
    parser.add_argument("--campaign", required=True)
    parser.add_argument("--config", default=gate.CAMPAIGN_WIDE, help="config id (raw, phase_summary)")
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--docs-dir", default="build/gx_docs")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    campaign = load_campaign(args.spec)
    if campaign.name != args.campaign:
        raise SystemExit(f"--campaign {args.campaign!r} but {args.spec} defines campaign {campaign.name!r}")
    if args.batch != "leaderboards" and args.config == gate.CAMPAIGN_WIDE:
        raise SystemExit(f"--batch {args.batch} needs --config")
    spec = StoreSpec.from_env()
    config = args.config if args.batch != "leaderboards" else gate.CAMPAIGN_WIDE
    outcome = gate.validate_batch(spec, args.batch, campaign, config, args.run_id, args.docs_dir)
    key = layout.validation_key(args.batch, args.campaign, config, args.run_id)
    print(f"validate {args.batch} {args.campaign}/{config}/{args.run_id}: {outcome.message()}\n"
          f"result: {spec.uri(key)}")
    return 0 if outcome.success else 1


if __name__ == "__main__":
    sys.exit(main())
