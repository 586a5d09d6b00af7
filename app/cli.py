"""`python -m app.cli` (also the `sizing` script): demo, validate, plan, query, report.

    sizing demo [--campaign campaigns/local-quick.yaml] [--run-label demo]   start if needed, run, print
    sizing demo --stop                                                      stop everything the demo started
    sizing validate SPEC                                                    exit 2 with every problem
    sizing plan SPEC [--config ID ...]                                      configs, costs, port blocks, runs
    sizing query [--campaign C] "SELECT ..."                               Spark SQL on the tables (spark_jobs.query)
    sizing report --campaign C --run-id R [-o report.html]                  fetch a run's HTML report from S3
"""

from __future__ import annotations

import argparse
import json
import sys

from sizing.fields import SpecError


def _validate(args: argparse.Namespace) -> int:
    from sizing.spec import load_campaign

    try:
        campaign = load_campaign(args.spec)
    except SpecError as err:
        print(err, file=sys.stderr)
        return 2
    print(f"{args.spec}: valid campaign {campaign.name!r} ({campaign.deployment}): {len(campaign.clusters)} "
          f"config(s) x {len(campaign.scenarios)} scenario(s) x {campaign.repeats} repeat(s); "
          f"spec hash {campaign.spec_hash}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from sizing.plan import campaign_cost, plan_runs, plan_trials
    from sizing.spec import load_campaign
    from sizing.timeline import planned_duration_s

    try:
        campaign = load_campaign(args.spec)
        trials = plan_trials(campaign, args.config or None)
    except (SpecError, KeyError) as err:
        print(err, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([t.as_dict() for t in trials], indent=2))
        return 0
    configs = [t for t in trials if t.repeat == 1]  # plan_trials is repeat-major: one per config, in order
    print(f"{len(trials)} trial(s): {len(configs)} config(s) x {campaign.repeats} repeat(s), a fresh cluster each")
    print(f"{'config':<28} {'nodes':>5} {'instance':<12} {'volume':<6} {'$/month':>10}  {'runs':<22} "
          "local ports by repeat")
    for config in configs:
        runs = plan_runs(campaign, config)
        seconds = sum(planned_duration_s(campaign.scenario(r.scenario)) for r in runs)  # worst case for a search
        ports = ", ".join(str(t.local_port_base) for t in trials if t.config_id == config.config_id)
        load = f"{len(runs)}" + (f" ({seconds / 60:.1f} min of load)" if seconds else "")
        print(f"{config.config_id:<28} {config.shape.nodes:>5} {config.shape.instance_type:<12} "
              f"{config.shape.volume.type:<6} {config.monthly_cost:>10.2f}  {load:<22} {ports}")
    for scenario in campaign.scenarios:
        if scenario.search is not None:
            s = scenario.search
            print(f"search {scenario.name}: at most {s.worst_case_probes()} probes of {s.probe_s:g}s "
                  f"(warm-up {s.warmup_s:g} + measure {s.measure_s:g} + drain {s.drain_s:g}) = "
                  f"{s.worst_case_s() / 60:.1f} min; ladder {', '.join(f'{r:g}' for r in s.ladder_rates())} msg/s")
    budget = campaign.budget
    parallelism = args.parallelism or (budget.parallelism if budget else 1)
    cost = campaign_cost(campaign, parallelism, args.config or None)
    print(f"cost of running it (worst case, apply/destroy included): {cost.summary()}")
    if budget:
        limits = [f"{budget.max_cost_usd:,.2f} {cost.currency}" if budget.max_cost_usd is not None else "",
                  f"{budget.max_hours:g} h wall at parallelism {budget.parallelism}"
                  if budget.max_hours is not None else ""]
        print(f"budget: {' and '.join(x for x in limits if x)} (within it: validation refuses a campaign over it)")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from sizing import demo

    settings = demo.DemoSettings.from_env()
    if args.stop:
        demo.stop(settings)
        return 0
    try:
        timings = demo.demo(args.campaign, args.run_label, args.timeout, settings)
    except KeyboardInterrupt:
        print("\ninterrupted; the stack keeps running (stop it with `make stop`)", file=sys.stderr)
        return 130
    return 0 if timings["state"] == "success" else 1


def _query(rest: list[str]) -> int:
    from spark_jobs import query  # pyspark: imported only for this command

    return int(query.main(rest) or 0)


def _report(rest: list[str]) -> int:
    from app.report.__main__ import main as report_main

    return int(report_main(["fetch", *rest]) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["query"]:  # everything after `query` belongs to spark_jobs.query
        return _query(argv[1:])
    if argv[:1] == ["report"]:  # everything after `report` belongs to `python -m app.report fetch`
        return _report(argv[1:])
    parser = argparse.ArgumentParser(prog="sizing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run a campaign end to end on this machine (starts what it needs)")
    p.add_argument("--campaign", default="campaigns/local-quick.yaml")
    p.add_argument("--run-label", default="demo")
    p.add_argument("--timeout", type=float, default=1800, help="seconds to wait for the run")
    p.add_argument("--stop", action="store_true", help="stop everything the demo started")
    p.set_defaults(func=_demo)
    p = sub.add_parser("validate", help="validate a campaign spec")
    p.add_argument("spec")
    p.set_defaults(func=_validate)
    p = sub.add_parser("plan", help="show the configs, trials (config x repeat) and runs of a campaign")
    p.add_argument("spec")
    p.add_argument("--config", action="append", help="only this config id (repeatable)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--parallelism", type=int, help="clusters up at once for the wall time (default: budget's, or 1)")
    p.set_defaults(func=_plan)
    sub.add_parser("query", help="Spark SQL over the result tables (see `sizing query --help`)")
    sub.add_parser("report", help="fetch a run's HTML report (see `sizing report --help`)")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
