"""`python -m app.cli` (also the `sizing` script): demo, validate, plan, trigger, backfill, runs, query, report.

    sizing demo [--campaign campaigns/local-quick.yaml] [--run-label demo]   start if needed, run, print
    sizing demo --stop                                                      stop everything the demo started
    sizing demo --clean                                                     stop, delete stored results and state
    sizing validate SPEC                                                    exit 2 with every problem
    sizing plan SPEC [--config ID ...]                                      configs, costs, port blocks, runs
    sizing trigger [--campaign SPEC] [--run-label L] [--config ID ...]      start a sizing_campaign run (REST); every
                   [--scenario S ...] [--max-parallel-configs N]            param of the DAG has its option
                   [--baseline-run R]                                       (sizing.planning.runparams)
    sizing backfill --config ID [--config ...] [--campaign SPEC] --run-label L   rerun those configs only
    sizing runs [--campaign C]                                              the campaigns and runs in the store
    sizing compare --campaign C --base RUN_A --head RUN_B [--threshold 0.05] [--format json] [--allow-spec-change]
                                                                            every headline metric, B against A;
                                                                            exit 1 when anything regressed
    sizing trend --campaign C --config K --metric M [--scenario S]         M over every stored run, change points
    sizing query --campaign C "SELECT ..."                                  Spark SQL on the tables (jobs/query);
                                                                            Spark's log: .state/logs/query.log
    sizing export-run --campaign C --run-id R [--out tests/fixtures/runs]   a run's tables as a test fixture
    sizing report --campaign C --run-id R [-o report.html]                  fetch a run's HTML report
    sizing report --campaign C --run-id R --resource-configs A,B [--spec S] rebuild it with those clusters'
                                                                            node-resource charts

The S3 and Airflow addresses come from the environment (SIZING_S3_ENDPOINT, SIZING_S3_BUCKET, AWS_*,
SIZING_AIRFLOW_URL/_USER/_PASSWORD) or, when it names none, from the state file `make demo` writes
(.state/demo.json). Expected failures print one line on stderr and exit non-zero; `--debug` shows tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from sizing.documents.fields import MAX_DURATION_S, SpecError, number_problem
from sizing.planning.runparams import CLUSTERS, MAX_PARALLEL_CONFIGS, NAMES, RUN_PARAMS, RunParam

if TYPE_CHECKING:
    from sizing.campaign import Campaign
    from sizing.planning.plan import ConfigPlan

DAG_ID = "sizing_campaign"


REPO_ROOT = Path(__file__).resolve().parent.parent


class CliError(Exception):
    """An expected failure: its message is the one line the user sees."""

    exit_code = 1


class Refused(CliError):
    """A request refused before any figure is computed (compare: exit 2, so that 1 means "regressed")."""

    exit_code = 2


def _calibrate(args: argparse.Namespace) -> int:
    from adapters import calibration

    if args.show:
        stored = calibration.stored()
        print(stored.describe() if stored else "this host has no calibration: `sizing calibrate` measures it")
        return 0 if stored else 1
    if args.if_stale and (fresh := calibration.stored()) is not None:
        print(f"{fresh.describe()}: fresh, nothing measured")
        return 0
    # the measurement drives the load generator, which the apps never import: its own command does it
    return subprocess.run(calibration.measure_command(), check=False).returncode


def _validate(args: argparse.Namespace) -> int:
    from adapters.calibration import stored
    from adapters.planning import admitted
    from sizing.campaign import load_campaign

    # admitted as the DAG's validate_spec admits it (sizing.planning.admission), on this host's stored calibration:
    try:
        admission = admitted(load_campaign(args.spec), args.spec, host=stored)  # validate never measures
    except SpecError as err:
        print(err, file=sys.stderr)
        return 2
    for line in admission.remarks():
        print(line, file=sys.stderr)
    campaign = admission.campaign
    print(f"{args.spec}: valid campaign {campaign.name!r} ({campaign.deployment}): {len(campaign.clusters)} "
          f"config(s) x {len(campaign.scenarios)} scenario(s) x {campaign.repeats} repeat(s); "
          f"spec hash {campaign.spec_hash}")
    for line in admission.scale:
        print(f"  {line}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    from sizing.campaign import load_campaign
    from sizing.planning.plan import campaign_cost, check_budget, plan_runs, plan_trials
    from sizing.planning.timeline import planned_duration_s

    try:
        campaign = check_budget(load_campaign(args.spec))
        trials = plan_trials(campaign, args.config or None)
    except (SpecError, KeyError) as err:
        print(err, file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps([t.to_dict() for t in trials], indent=2))
        return 0
    configs = [t for t in trials if t.repeat == 1]  # plan_trials is repeat-major: one per config, in order
    where = "one after the other on the existing cluster" if campaign.existing else "a fresh cluster each"
    print(f"{len(trials)} trial(s): {len(configs)} config(s) x {campaign.repeats} repeat(s), {where}")
    width = max([28, *(len(c.config_id) for c in configs)])  # layout suffixes make ids longer
    print(f"{'config':<{width}} {'nodes':>5} {'instance':<12} {'volume':<6} {'$/month':>10}  {'runs':<22} "
          "local ports by repeat")
    for config in configs:
        runs = plan_runs(campaign, config)
        seconds = sum(planned_duration_s(campaign.scenario(r.scenario)) for r in runs)  # worst case for a search
        ports = ", ".join(str(t.local_port_base) for t in trials if t.config_id == config.config_id)
        load = f"{len(runs)}" + (f" ({seconds / 60:.1f} min of load)" if seconds else "")
        print(f"{config.config_id:<{width}} {config.shape.nodes:>5} {config.shape.instance_type:<12} "
              f"{config.shape.volume.type:<6} {config.monthly_cost:>10.2f}  {load:<22} {ports}")
        print(f"  {_disk_breakdown(campaign, config)}")
    for scenario in campaign.scenarios:
        if scenario.search is not None:
            s = scenario.search
            print(f"search {scenario.name}: at most {s.worst_case_probes()} probes of {s.probe_s:g}s "
                  f"(warm-up {s.warmup_s:g} + measure {s.measure_s:g} + drain {s.drain_s:g}) = "
                  f"{s.worst_case_s() / 60:.1f} min; ladder {', '.join(f'{r:g}' for r in s.ladder_rates())} msg/s")
    budget = campaign.budget
    parallelism = args.parallelism if args.parallelism is not None else (budget.parallelism if budget else 1)
    cost = campaign_cost(campaign, parallelism, args.config or None)
    print(f"cost of running it (worst case, apply/destroy included): {cost.summary()}")
    if budget:
        limits = [f"{budget.max_cost_usd:,.2f} {cost.currency}" if budget.max_cost_usd is not None else "",
                  f"{budget.max_hours:g} h wall at parallelism {budget.parallelism}"
                  if budget.max_hours is not None else ""]
        print(f"budget: {' and '.join(x for x in limits if x)} (within it: validation refuses a campaign over it)")
    if campaign.scale_model is not None:  # what validation (and the DAG's validate_spec) will refuse on this machine
        from adapters.planning import envelope_fit_problems

        for problem in envelope_fit_problems(campaign, parallelism):
            print(f"warning: not on this machine as planned: {problem}", file=sys.stderr)
    return 0


def _disk_breakdown(campaign: Campaign, config: ConfigPlan) -> str:
    """`per node: instance 573.12 + data io1 725.00 + wal io1 725.00 = 2023.12 USD/month; on the data volume:
    logs, segments`: what each role's volume adds to a node's price."""
    from sizing.planning.plan import role_monthly_costs
    from sizing.resources.disks import placement

    catalog, shape = campaign.catalog, config.shape
    if campaign.existing is not None:
        price = campaign.existing.monthly_cost
        return (f"existing cluster: {price:.2f} {catalog.currency}/month as the spec states" if price is not None
                else "existing cluster: no monthly price stated (existing.monthly_cost), so its cost figures read 0")
    instance = catalog.instances[shape.instance_type].hourly * catalog.hours_per_month
    volumes = role_monthly_costs(catalog, shape)
    parts = [f"instance {instance:.2f}"] + [f"{v.role} {v.volume.type} {volumes[v.role]:.2f}" for v in shape.volumes]
    shared = [role for role, holder in placement([v.role for v in shape.dedicated]).items()
              if holder == "data" and role != "data"]
    on_data = f"; on the data volume: {', '.join(shared)}" if shared else ""
    return f"per node: {' + '.join(parts)} = {instance + sum(volumes.values()):.2f} {catalog.currency}/month{on_data}"


def _demo(args: argparse.Namespace) -> int:
    from app import demo

    settings = demo.DemoSettings.from_env()
    if args.stop:
        demo.stop(settings)
        return 0
    if args.clean:
        demo.clean(settings)
        return 0
    try:
        timings = demo.demo(args.campaign, args.run_label, args.timeout, settings)
    except (demo.StackDown, demo.PortTaken, TimeoutError) as err:  # what died, what is in the way or waited for
        print(f"sizing demo: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted; the stack keeps running (stop it with `make stop`)", file=sys.stderr)
        return 130
    return 0 if timings["state"] == "success" else 1


# ------------------------------------------------------------------------------------------ object store


def _store():
    from adapters.objectstore import StoreSpec

    spec = StoreSpec.from_env()
    return spec, spec.open()


def _where(spec) -> str:
    return f"s3://{spec.bucket}" + (f" at {spec.endpoint_url}" if spec.endpoint_url else "") if spec.kind == "s3" \
        else spec.root or "."


def stored_runs(store) -> dict[str, list[str]]:
    """{campaign: [run ids with a report]} and campaigns with tables but no report (empty list)."""
    from sizing.contract import layout

    tables = store.list(layout.table_root("leaderboards")) + store.list(layout.table_root("runs"))
    out: dict[str, list[str]] = {c: [] for c in sorted({layout.partition_value(key, "campaign") for key in tables}
                                                       - {None})}
    for key in store.list(layout.REPORTS_ROOT):
        if (found := layout.report_run_of(key)) is not None:
            out.setdefault(found.campaign, []).append(found.run_id)
    return {c: sorted(set(r)) for c, r in sorted(out.items())}


def _describe(runs: dict[str, list[str]]) -> str:
    if not runs:
        return "nothing is stored yet (run `make demo`, or trigger a campaign)"
    return "stored: " + "; ".join(f"{c} (runs with a report: {', '.join(r) or 'none yet'})" for c, r in runs.items())


def _require_campaign(store, spec, campaign: str) -> dict[str, list[str]]:
    runs = stored_runs(store)
    if campaign not in runs:
        raise CliError(f"campaign {campaign!r} has no tables or reports in {_where(spec)}; {_describe(runs)}")
    return runs


def _runs(args: argparse.Namespace) -> int:
    """Each campaign's runs with a report, then the `runs` table: what each run ran on and how it ended."""
    from app.history import stored_run_records

    spec, store = _store()
    runs = stored_runs(store)
    if args.campaign:
        _require_campaign(store, spec, args.campaign)
        runs = {args.campaign: runs[args.campaign]}
    if not runs:
        raise CliError(f"{_where(spec)}: {_describe(runs)}")
    records = stored_run_records(store, args.campaign)
    print(f"{_where(spec)}:")
    for campaign, run_ids in runs.items():
        print(f"  {campaign}: runs with a report: {', '.join(run_ids) or 'none yet'}")
        mine = [r for r in records if r["campaign"] == campaign]
        if mine:
            print(_indent(text_table(RUN_HEADER, [run_line(r) for r in mine]), "    "))
    return 0


RUN_HEADER = ["run", "status", "started (UTC)", "ended (UTC)", "RabbitMQ", "Erlang", "spec", "code", "configs",
              "baseline"]


def run_line(record: dict) -> list[str]:
    """One `runs` row as the CLI lists it."""
    def when(epoch: object) -> str:
        import datetime as dt

        return dt.datetime.fromtimestamp(float(epoch), dt.UTC).strftime("%Y-%m-%d %H:%M:%S") if epoch else "-"

    commit = str(record.get("code_commit") or "-")
    return [record["run_id"], record["status"], when(record.get("started_at")), when(record.get("ended_at")),
            record.get("rabbitmq_version") or "-", record.get("erlang_version") or "-", record["spec_hash"],
            commit[:12] + ("-dirty" if commit.endswith("-dirty") else ""), record.get("configs") or "-",
            record.get("baseline_run") or "-"]


def text_table(header: list[str], rows: list[list[str]]) -> str:
    """Plain columns, left-aligned, two spaces apart."""
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows, strict=True)]
    return "\n".join("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip()
                     for line in [header, *rows])


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in text.splitlines())


# ------------------------------------------------------------------------------------------ compare and trend


def _run_records(store, spec, campaign: str, *run_ids: str) -> list[dict]:
    """The `runs` rows of these runs, or a refusal naming the campaign's stored runs."""
    from app.history import stored_run_records

    _require_campaign(store, spec, campaign)
    records = {r["run_id"]: r for r in stored_run_records(store, campaign)}
    missing = [r for r in run_ids if r not in records]
    if missing:
        have = ", ".join(records) or "none (runs analysed before the runs table existed: re-run their analysis)"
        raise Refused(f"campaign {campaign} has no run {', '.join(repr(m) for m in missing)} in the runs table; "
                      f"its runs: {have}")
    return [records[r] for r in run_ids]


def _compare(args: argparse.Namespace) -> int:
    """Exit 0: nothing regressed; 1: something regressed (a pipeline gates on it); 2: refused (unknown runs,
    different specs without --allow-spec-change, bad threshold)."""
    from app.history import run_spec, run_tables
    from sizing.contract.layout import RunRef
    from sizing.judgement.comparison import TABLE_HEADER, compare_runs, recommendation_words, table_rows
    from sizing.judgement.history import spec_differences

    if not 0 <= args.threshold < 1:
        raise Refused(f"--threshold must be a fraction in [0, 1) (0.05 = 5 %), got {args.threshold}")
    if args.base == args.head:
        raise Refused(f"--base and --head are both {args.base!r}: compare two different runs")
    spec, store = _store()
    base_record, head_record = _run_records(store, spec, args.campaign, args.base, args.head)
    campaign, head_raw = run_spec(head_record)
    _, base_raw = run_spec(base_record)
    # What the figures were measured on (the scale model and its factors) differs like the spec does
    measured = [f"measured_on: {base_record.get('measured_on')} -> {head_record.get('measured_on')}"] if (
        base_record.get("measured_on") != head_record.get("measured_on")) else []
    if (base_record["spec_hash"] != head_record["spec_hash"] or measured) and not args.allow_spec_change:
        differences = measured + spec_differences(base_raw, head_raw)
        raise Refused(f"runs {args.base} and {args.head} ran different specs or scale models "
                      f"({base_record['spec_hash']} vs "
                      f"{head_record['spec_hash']}: {len(differences)} difference(s), first: "
                      f"{differences[0] if differences else '?'}); pass --allow-spec-change to compare them anyway "
                      f"(the differences are listed first)")
    comparison = compare_runs(campaign, run_tables(store, RunRef(args.campaign, args.base), base_record),
                              run_tables(store, RunRef(args.campaign, args.head), head_record),
                              threshold=args.threshold,
                              base_spec=base_raw, head_spec=head_raw)
    if args.format == "json":
        print(json.dumps(comparison.to_dict(), indent=2, default=str))
        return 1 if comparison.regressed else 0
    print(f"{args.campaign}: run {args.head} (head) against run {args.base} (base); practical threshold "
          f"{args.threshold:.0%}, confidence {comparison.confidence:.0%}")
    if comparison.spec_differences:
        print(f"spec differences ({len(comparison.spec_differences)}), base -> head:")
        for line in comparison.spec_differences:
            print(f"  {line}")
    for side, record in (("base", base_record), ("head", head_record)):
        print(f"{side} {record['run_id']}: {record['status']}, RabbitMQ {record.get('rabbitmq_version') or '?'}, "
              f"Erlang {record.get('erlang_version') or '?'}, pika {record.get('pika_version') or '?'}, Spark "
              f"{record.get('spark_version') or '?'}, spec {record['spec_hash']}, code "
              f"{(record.get('code_commit') or '?')[:12]}, {record.get('instance_types') or '?'}")
    print(text_table(TABLE_HEADER, table_rows(comparison)))
    if comparison.base_recommended or comparison.head_recommended:
        print(f"recommended (the recommendation table): {recommendation_words(comparison)}")
    for change in comparison.changes:
        if change.note and change.verdict != "unchanged":
            print(f"  note: {change.config_id} / {change.scenario} / {change.label}: {change.note}")
    for side, items in (("base", comparison.only_in_base), ("head", comparison.only_in_head)):
        if items:
            print(f"measured in the {side} run only: {'; '.join(items)}")
    counts = comparison.counts()
    print(", ".join(f"{n} {verdict}" for verdict, n in counts.items()) + (
        " -> exit 1 (regressed)" if comparison.regressed else ""))
    return 1 if comparison.regressed else 0


def _trend(args: argparse.Namespace) -> int:
    from app.history import run_spec, run_tables
    from sizing.contract.layout import RunRef
    from sizing.criteria.stats import level_text
    from sizing.judgement.comparison import METRIC, format_value
    from sizing.judgement.trends import ALPHA, trend

    if args.metric not in METRIC or args.metric == "held":
        raise Refused(f"--metric: unknown metric {args.metric!r}; metrics: "
                      f"{', '.join(m for m in METRIC if m != 'held')}")
    spec, store = _store()
    from app.history import stored_run_records

    _require_campaign(store, spec, args.campaign)
    records = stored_run_records(store, args.campaign)
    if not records:
        raise Refused(f"campaign {args.campaign} has no run in the runs table (runs analysed before it existed: "
                      f"re-run their analysis)")
    campaign, _ = run_spec(records[-1])
    known = [c.config_id for c in campaign.clusters]
    if args.config not in known:
        raise Refused(f"--config: campaign {args.campaign} has no config {args.config!r}; its configs: "
                      f"{', '.join(known)}")
    try:
        series = trend(campaign, [run_tables(store, RunRef(args.campaign, r["run_id"]), r) for r in records],
                       args.config, args.metric, args.scenario)
    except ValueError as err:
        raise Refused(str(err)) from err
    if args.format == "json":
        print(json.dumps(series.to_dict(), indent=2, default=str))
        return 0
    metric = METRIC[args.metric]
    print(f"{args.campaign} / {args.config} / {series.scenario or '-'}: {metric.label} ({metric.unit}), "
          f"{len(series.points)} run(s), oldest first")
    changed = {c.index: c for c in series.changes}
    rows = []
    for i, point in enumerate(series.points):
        interval = (f"[{format_value(point.low, metric.unit)}, {format_value(point.high, metric.unit)}] "
                    f"({level_text(point.level)})" if point.low is not None else "(no interval)")
        mark = ""
        if i in changed:
            c = changed[i]
            mark = f"<- change: {c.relative_change:+.1%} (median {format_value(c.before, metric.unit)} -> " \
                   f"{format_value(c.after, metric.unit)}, p = {c.p_value:.3f})"
        rows.append([point.run_id, format_value(point.value, metric.unit), interval, str(point.n),
                     point.recommended or "n/a", mark])
    print(text_table(["run", "median", "interval", "repeats", "recommended", ""], rows))
    if not series.long_enough:
        print(f"change points: none flagged; Pettitt's test needs at least {series.min_runs} runs to reach "
              f"p <= {ALPHA:.2f} (this series has {len(series.points)})")
    else:
        print(f"change points (Pettitt rank test, exact permutation p <= {ALPHA:.2f}, shift >= 5 %): "
              + (", ".join(f"before {c.run_id}" for c in series.changes) or "none"))
    return 0


def _resource_configs(args: argparse.Namespace) -> tuple[str, list[str]]:
    """(spec path, config ids) of `--resource-configs`, checked against the campaign spec before any I/O."""
    from sizing.campaign import load_campaign

    wanted = [c.strip() for c in args.resource_configs.split(",") if c.strip()]
    if not wanted:
        raise CliError("--resource-configs: give one or more config ids, comma-separated (e.g. A,B)")
    spec_path = Path(args.spec) if args.spec else REPO_ROOT / "campaigns" / f"{args.campaign}.yaml"
    if not spec_path.is_file():
        raise CliError(f"--spec: no campaign spec for {args.campaign} at {spec_path}; pass --spec SPEC")
    campaign = load_campaign(str(spec_path))
    if campaign.name != args.campaign:
        raise CliError(f"--spec {spec_path} defines campaign {campaign.name!r}, not {args.campaign!r}")
    known = [c.config_id for c in campaign.clusters]
    unknown = [c for c in wanted if c not in known]
    if unknown:
        raise CliError(f"--resource-configs: campaign {campaign.name} has no config {', '.join(unknown)}; "
                       f"its configs: {', '.join(known)}")
    return str(spec_path), wanted


def _rebuild_report(args: argparse.Namespace) -> int:
    """Issue 15: the report with the node-resource charts of the chosen clusters (the stored run report is
    rebuilt from the same tables and replaced; without the switch a rebuild shows the leaderboard's top and bottom)."""
    spec_path, configs = _resource_configs(args)
    from adapters.objectstore import S3Settings
    from app.report import build_report

    spec, store = _store()
    _require_campaign(store, spec, args.campaign)
    uri = build_report(spec_path, args.run_id, S3Settings.from_env(), args.output, resource_configs=configs)
    print(uri)
    if args.output:
        print(Path(args.output).resolve())
    return 0


def _report(args: argparse.Namespace) -> int:
    from sizing.contract.layout import report_key

    if args.resource_configs is not None:
        return _rebuild_report(args)
    spec, store = _store()
    runs = _require_campaign(store, spec, args.campaign)
    if args.run_id not in runs[args.campaign]:
        have = ", ".join(runs[args.campaign]) or "none yet"
        raise CliError(f"no report for campaign {args.campaign} run {args.run_id!r} in {_where(spec)} "
                       f"(runs of {args.campaign} with a report: {have})")
    document = store.get(report_key(args.campaign, args.run_id))
    if args.output:
        Path(args.output).write_bytes(document)
        print(Path(args.output).resolve())
    else:
        sys.stdout.buffer.write(document)
    return 0


def _export_run(args: argparse.Namespace) -> int:
    """Issue 45: a run's tables as a compact fixture in the repository (app.runfixture), so that the verdicts
    measured on it can be checked again without the store."""
    from adapters.objectstore import S3Settings
    from app.report.tables import TableReader
    from app.runfixture import export
    from sizing.contract.layout import RunRef

    spec, store = _store()
    _require_campaign(store, spec, args.campaign)
    command = f"sizing export-run --campaign {args.campaign} --run-id {args.run_id} --out {args.out}"
    where = export(TableReader(S3Settings.from_env()), RunRef(args.campaign, args.run_id), Path(args.out), command)
    print(where)
    return 0


def _query(args: argparse.Namespace) -> int:
    """Prints the answer and nothing else: Spark's and the JVM's logs go to a file (named with --debug)."""
    from adapters.statepaths import state_paths

    spec, store = _store()
    _require_campaign(store, spec, args.campaign)  # before Spark starts: a typo fails in a second
    log = state_paths().query_log
    if args.debug:
        print(f"sizing query: Spark's and the JVM's log: {log}", file=sys.stderr)
    try:
        with output_to(log):
            from spark_jobs.jobs import query

            text = query.answer(args.campaign, args.sql, args.limit, args.run_id)
    except Exception as err:
        if type(err).__name__ in ("AnalysisException", "ParseException"):  # a SQL mistake: Spark's first line
            raise CliError(f"query failed: {query_error_line(str(err))}") from err
        raise
    print(text)
    return 0


def query_error_line(message: str) -> str:
    """Spark's first line of a failed query, which holds the reason and its suggestions ("Did you mean one of
    the following? [...]"); the SQLSTATE and position that follow it on that line are for Spark developers."""
    first = message.strip().splitlines()[0] if message.strip() else "(no message)"
    return first.split(" SQLSTATE:", 1)[0].strip()


@contextlib.contextmanager
def output_to(path: Path):
    """Points this process's stdout and stderr (file descriptors 1 and 2) at `path` for the block. A JVM started in
    the block inherits them and keeps writing there after the block: Spark's log4j console output, the JVM's own
    warnings and the Python workers it forks never reach the terminal."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "wb") as log:  # the last query's log only
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
    try:
        yield path
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


# ------------------------------------------------------------------------------------------ Airflow


def _trigger(args: argparse.Namespace) -> int:
    """trigger and backfill: the run's params (sizing.planning.runparams) from the options, checked against the spec as
    the DAG's validate_spec checks them (every problem, before Airflow is asked), sent as the run's conf."""
    from adapters.airflowapi import AirflowClient, AirflowLogin
    from adapters.planning import checked_params
    from sizing.planning.runparams import RunParams

    params = RunParams.from_dict({p.name: getattr(args, p.name) for p in RUN_PARAMS})
    try:
        _, admission = checked_params(params)
    except SpecError as err:
        raise CliError("; ".join(str(problem) for problem in err.problems)) from err
    for line in admission.remarks():  # what the DAG's validate_spec will say of it, said before it is triggered
        print(line, file=sys.stderr)
    conf = params.to_dict()
    try:
        login = AirflowLogin.from_env()
    except LookupError as err:
        raise CliError(str(err)) from err
    client = AirflowClient(login)
    run_id = client.trigger(DAG_ID, conf)
    print(f"triggered {DAG_ID} run {run_id}: {json.dumps(conf)}")
    print(f"follow it at {login.url}/dags/{DAG_ID}/runs/{run_id}")
    return 0


def run_param_type(param: RunParam):
    """An argparse `type` for one run param (one value of a list): parsed, then checked by the param's own rule."""
    def parse(text: str):
        value = int(text) if param.kind == CLUSTERS and text.lstrip("-").isdigit() else text
        reason = param.problem([value] if param.kind == NAMES else value)
        if reason is not None:
            raise argparse.ArgumentTypeError(reason)
        return value

    parse.__name__ = param.name  # argparse names the type in its messages
    return parse


def add_run_options(parser: argparse.ArgumentParser, required: tuple[str, ...] = ()) -> None:
    """One option per run param (sizing.planning.runparams.RUN_PARAMS: the DAG's params): every param the DAG takes can
    be sent. `required`: the params this command cannot do without."""
    for param in RUN_PARAMS:
        kwargs: dict[str, object] = {"dest": param.name, "type": run_param_type(param), "help": param.description,
                                     "metavar": param.flag.lstrip("-").upper(), "required": param.name in required}
        if param.kind == NAMES:
            kwargs.update(action="append", help=f"{param.description} Repeatable.")
        else:
            kwargs["default"] = param.default
        parser.add_argument(param.flag, **kwargs)


# ------------------------------------------------------------------------------------------ errors


def explain(err: BaseException) -> str | None:
    """One line for an expected failure, or None for a bug (shown with its traceback)."""
    name = type(err).__name__
    module = type(err).__module__ or ""
    endpoint = os.environ.get("SIZING_S3_ENDPOINT") or "the default AWS endpoint"
    if isinstance(err, CliError | SpecError):
        return str(err)
    if name in ("NoCredentialsError", "PartialCredentialsError"):
        return ("no S3 credentials: start the demo stack (`make demo`; the CLI then reads .state/demo.json) or set "
                "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and SIZING_S3_ENDPOINT")
    if name in ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError") and module.startswith("botocore"):
        return f"cannot reach the S3 endpoint {endpoint} (is the demo stack running? `make demo` starts it)"
    if name == "ClientError" and module.startswith("botocore"):
        code = err.response.get("Error", {}).get("Code", "")  # type: ignore[attr-defined]
        from adapters.objectstore import S3Settings

        bucket = S3Settings.from_env().bucket
        if code == "NoSuchBucket":
            return f"bucket {bucket!r} does not exist at {endpoint}"
        if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "403"):
            return f"S3 at {endpoint} refused the credentials ({code})"
        return f"S3 at {endpoint}: {code or err}"
    if module.startswith("requests") and name in ("ConnectionError", "ConnectTimeout", "ReadTimeout"):
        url = os.environ.get("SIZING_AIRFLOW_URL", "")
        return f"cannot reach Airflow at {url} (is the demo stack running? `make demo` starts it)"
    if name == "HTTPError" and module.startswith("requests"):
        return f"Airflow answered {err}"
    if isinstance(err, PermissionError | LookupError | ValueError | FileNotFoundError):
        return str(err).splitlines()[0] if str(err) else name
    return None


def bounded(kind: type, low: float, high: float, exclusive: bool = False):
    """An argparse `type`: the option's value parsed as `kind` and checked by the spec's own number rule (finite,
    within low..high), so that a bad number is refused by the parser, with the option's name, before anything runs."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {'an integer' if kind is int else 'a number'}, got {text!r}"
                                             ) from None
        reason = number_problem(value, low, high, integer=kind is int, exclusive=exclusive)
        if reason is not None:
            raise argparse.ArgumentTypeError(reason)
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


MAX_PARALLELISM = MAX_PARALLEL_CONFIGS  # a budget's parallelism has the same bound


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sizing", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("demo", help="run a campaign end to end on this machine (starts what it needs)")
    p.add_argument("--campaign", default="campaigns/local-quick.yaml")
    p.add_argument("--run-label", default="demo")
    p.add_argument("--timeout", type=bounded(float, 0, MAX_DURATION_S, exclusive=True), default=1800,
                   help="seconds to wait for the run")
    p.add_argument("--stop", action="store_true", help="stop everything the demo started (stored results stay)")
    p.add_argument("--clean", action="store_true",
                   help="stop, then delete the state dir: stored results, Airflow DB, logs (`make clean`)")
    p.set_defaults(func=_demo)
    p = sub.add_parser("calibrate", help="measure how much broker work a core of this host does (about a minute) "
                                         "and store it: the scale model's envelopes are given in its units")
    p.add_argument("--show", action="store_true", help="print this host's stored calibration; measure nothing")
    p.add_argument("--if-stale", action="store_true",
                   help="measure only if this host has no fresh calibration (what a run would do by itself)")
    p.set_defaults(func=_calibrate)
    p = sub.add_parser("validate", help="validate a campaign spec")
    p.add_argument("spec")
    p.set_defaults(func=_validate)
    p = sub.add_parser("plan", help="show the configs, trials (config x repeat) and runs of a campaign")
    p.add_argument("spec")
    p.add_argument("--config", action="append", help="only this config id (repeatable)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--parallelism", type=bounded(int, 1, MAX_PARALLELISM),
                   help="clusters up at once for the wall time (default: budget's, or 1)")
    p.set_defaults(func=_plan)
    for name, required, helptext in (("trigger", (), "start a sizing_campaign run over Airflow's REST API"),
                                     ("backfill", ("configs", "run_label"),
                                      "rerun some configs of a campaign run (same run label): exactly their "
                                      "partitions are replaced")):
        p = sub.add_parser(name, help=helptext)
        add_run_options(p, required)
        p.set_defaults(func=_trigger)
    p = sub.add_parser("runs", help="the campaigns with tables, their runs with a report and the runs table")
    p.add_argument("--campaign", help="only this campaign")
    p.set_defaults(func=_runs)
    p = sub.add_parser("compare", help="every headline metric of run --head against run --base, with intervals and "
                                       "verdicts; exit 1 when anything regressed")
    p.add_argument("--campaign", required=True)
    p.add_argument("--base", required=True, help="the run compared with (e.g. before an upgrade)")
    p.add_argument("--head", required=True, help="the run judged")
    p.add_argument("--threshold", type=bounded(float, 0, 1), default=0.05,  # 1 itself: _compare refuses it
                   help="practical threshold: a relative change smaller than this is no change (default 0.05)")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.add_argument("--allow-spec-change", action="store_true",
                   help="compare runs of different specs (the differences are listed first)")
    p.set_defaults(func=_compare)
    p = sub.add_parser("trend", help="one metric of one config over every stored run, with change points")
    p.add_argument("--campaign", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--metric", required=True, help="top_throughput, sustainable_rate, p99_at_target_ms, "
                                                   "cost_per_1k_at_top, ... (sizing.judgement.comparison.METRICS)")
    p.add_argument("--scenario", help="the scenario, when the metric is measured in several")
    p.add_argument("--format", choices=["table", "json"], default="table")
    p.set_defaults(func=_trend)
    p = sub.add_parser("query", help="Spark SQL over a campaign's tables and raw records")
    p.add_argument("--campaign", required=True)
    p.add_argument("--run-id", help="only this run's rows in every view (default: every stored run's, each table "
                                    "has a run_id column)")
    p.add_argument("--limit", type=bounded(int, 1, 1_000_000), default=100)
    p.add_argument("sql", help="e.g. \"SELECT config_id, cost_per_1k_at_top FROM leaderboards\"")
    p.set_defaults(func=_query)
    p = sub.add_parser("export-run", help="one run's tables as a compact test fixture (the columns the seed "
                                          "verdicts read, and meta.json)")
    p.add_argument("--campaign", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("--out", default="tests/fixtures/runs", help="fixture root (default: tests/fixtures/runs)")
    p.set_defaults(func=_export_run)
    p = sub.add_parser("report", help="fetch a run's HTML report")
    p.add_argument("--campaign", required=True)
    p.add_argument("--run-id", required=True)
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    p.add_argument("--resource-configs", metavar="A,B",
                   help="rebuild the run's report from the tables with the node-resource charts of these config ids "
                        "(default: the leaderboard's top and bottom); replaces the stored report")
    p.add_argument("--spec", help="campaign spec for --resource-configs (default: campaigns/<campaign>.yaml)")
    p.set_defaults(func=_report)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # accepted anywhere on the line
    argv = [a for a in argv if a != "--debug"]
    args = build_parser().parse_args(argv)
    args.debug = debug
    try:
        if args.command not in ("validate", "plan"):
            from app.stackstate import apply_state

            apply_state(os.environ)
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe fails here, not at the interpreter's exit
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (`sizing plan ... | head`): no error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # what is still buffered would fail at exit
        return 141  # 128 + SIGPIPE, as a shell reports a command whose pipe closed
    except Exception as err:
        if debug:
            raise
        message = explain(err)
        if message is None:  # a bug: still one line, never a traceback the user did not ask for
            first = str(err).splitlines()[0][:200] if str(err) else ""
            print(f"sizing {args.command}: internal error {type(err).__name__}: {first} (a bug; --debug shows the "
                  f"traceback)", file=sys.stderr)
            return 70  # EX_SOFTWARE
        print(f"sizing {args.command}: {' '.join(message.split())}"
              if not isinstance(err, SpecError) else str(err), file=sys.stderr)
        return 2 if isinstance(err, SpecError) else getattr(err, "exit_code", 1)


if __name__ == "__main__":
    sys.exit(main())
