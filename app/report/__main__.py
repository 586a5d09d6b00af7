"""CLI: build a campaign report from the S3 tables, or fetch a built one."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from adapters.objectstore import S3Settings
from app.report.build import build_report, fetch_report
from sizing.spec import load_campaign


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m app.report", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="render the report from the campaign's tables and upload it")
    build.add_argument("--campaign", required=True, help="campaign name (must match the spec's name)")
    build.add_argument("--run-id", required=True)
    build.add_argument("--spec", required=True, help="campaign spec YAML, e.g. campaigns/local-quick.yaml")
    build.add_argument("-o", "--output", help="local copy (default build/reports/<campaign>/<run>/report.html)")
    fetch = sub.add_parser("fetch", help="download a built report")
    fetch.add_argument("--campaign", required=True)
    fetch.add_argument("--run-id", required=True)
    fetch.add_argument("-o", "--output", help="file to write (default: stdout)")
    args = parser.parse_args(argv)
    settings = S3Settings.from_env()
    if args.command == "build":
        name = load_campaign(args.spec).name
        if name != args.campaign:
            parser.error(f"--campaign {args.campaign!r} does not match the spec's name {name!r}")
        uri = build_report(args.spec, args.run_id, settings, args.output)
        print(uri)
        if args.output:
            print(Path(args.output).resolve())
        return 0
    document = fetch_report(args.campaign, args.run_id, settings)
    if args.output:
        Path(args.output).write_bytes(document)
        print(Path(args.output).resolve())
    else:
        sys.stdout.buffer.write(document)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
