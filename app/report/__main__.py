"""CLI: build (or rebuild) a campaign report from the S3 tables. Fetch a built one with `sizing report`
(`python -m app.cli report`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from adapters.objectstore import S3Settings
from app.report.build import build_report
from sizing.campaign import load_campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.report", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="render the report from the campaign's tables and upload it")
    build.add_argument("--campaign", required=True, help="campaign name (must match the spec's name)")
    build.add_argument("--run-id", required=True)
    build.add_argument("--spec", required=True, help="campaign spec YAML, e.g. campaigns/local-quick.yaml")
    build.add_argument("-o", "--output", help="local copy (default build/reports/<campaign>/<run>/report.html)")
    build.add_argument("--baseline-run", help="open with the comparison with this run (default: the baseline the "
                                              "run's runs-table row names, if any)")
    args = parser.parse_args(argv)
    name = load_campaign(args.spec).name
    if name != args.campaign:
        parser.error(f"--campaign {args.campaign!r} does not match the spec's name {name!r}")
    uri = build_report(args.spec, args.run_id, S3Settings.from_env(), args.output, baseline_run=args.baseline_run)
    print(uri)
    if args.output:
        print(Path(args.output).resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
