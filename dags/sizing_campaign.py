"""sizing_campaign: size RabbitMQ clusters for one campaign spec, end to end.

validate_spec -> plan_trials -> cluster[trial] (mapped group, one per config and repeat, each on a fresh cluster):
    wait_for_slot -> terraform_apply (setup) -> wait_healthy -> run_scenarios -> upload -> terraform_destroy (teardown)
-> analysis_inputs -> analysis -> report (a UI link opens it) -> trials_succeeded
   (analysis: one SparkSubmitOperator job, phase_summary of every complete config then the leaderboards,
   Great Expectations on every batch it reads and table it writes)

Any task may run on any worker (CeleryExecutor, KubernetesExecutor): what one task leaves for another travels
through XCom or the object store (the resolved spec, load-run logs, cluster-slot leases of aws/existing), never a
worker's disk. The local target is the exception, refused on such an executor: its clusters are processes of one
host.

A campaign with `repeats: N` runs N trials per config, repeat-major (every config's repeat 1 first), each
on its own cluster, ports, Terraform state and slot lease; the analysis then sees each config once.
Backfill one config: trigger with `configs: [<config_id>]` (and the same `run_label`); the raw run
partitions (every repeat) and the per-config table partitions of that config are replaced, nothing
else is touched.
Parse-time cost: only airflow.sdk, the Spark provider's operator, this project's thin plugin modules and the
params contract (sizing.planning.runparams, standard library only) are imported (the spark-submit settings come through
rabbit_sizing.spark from spark_jobs.lib.submit and spark_jobs.lib.settings, which import the standard library only,
never pyspark); specs are read by the tasks, never at parse time.
"""

from __future__ import annotations

from airflow.sdk import Asset, Param, dag, task, task_group
from rabbit_sizing.operators.analysis import AnalysisSubmitOperator
from rabbit_sizing.operators.cluster import ClusterApplyOperator, ClusterDestroyOperator
from rabbit_sizing.operators.loadgen import LoadgenOperator
from rabbit_sizing.operators.report import ReportOperator
from rabbit_sizing.sensors.cluster import ClusterHealthySensor, ClusterSlotSensor

from adapters.objectstore import S3Settings
from sizing.contract import layout, raw_layout
from sizing.planning.runparams import RUN_PARAMS

BUCKET = S3Settings.from_env().bucket
# Assets downstream DAGs can schedule on (e.g. a dashboard refresh when leaderboards change).
RAW = Asset(uri=layout.s3_uri(BUCKET, raw_layout.RAW_ROOT), name="sizing_raw_runs", group="rabbit-sizing")
PHASE_SUMMARY = Asset(uri=layout.s3_uri(BUCKET, layout.table_root("phase_summary")), name="sizing_phase_summary",
                      group="rabbit-sizing")
LEADERBOARDS = Asset(uri=layout.s3_uri(BUCKET, layout.table_root("leaderboards")), name="sizing_leaderboards",
                     group="rabbit-sizing")
VALIDATION = Asset(uri=layout.s3_uri(BUCKET, layout.VALIDATION_ROOT), name="sizing_validation", group="rabbit-sizing")
REPORT = Asset(uri=layout.s3_uri(BUCKET, layout.REPORTS_ROOT), name="sizing_report", group="rabbit-sizing")

SPARK_CONN_ID = "spark_default"
# The cluster group's map index in the UI: "n3-c5.2xlarge-gp2-r2" rather than "7".
TRIAL_LABEL = "{{ task.trial.cluster_key }}"


@dag(
    dag_id="sizing_campaign",
    schedule=None,
    catchup=False,
    max_active_runs=1,
    tags=["rabbit-sizing"],
    doc_md=__doc__,
    default_args={"retries": 0},
    # One params contract (sizing.planning.runparams): the CLI's trigger options and the task's checks come from it too.
    params={p.name: Param(p.default, description=p.description, **p.schema()) for p in RUN_PARAMS},
)
def sizing_campaign():
    @task
    def validate_spec(params=None) -> dict:
        """Fail fast, with every problem and its field path, before anything is provisioned."""
        from airflow.configuration import conf
        from airflow.sdk.exceptions import AirflowFailException

        from adapters.calibration import current, measure_by_command
        from adapters.planning import publish_spec, validate_run
        from adapters.statepaths import state_paths
        from sizing.documents.fields import SpecError
        from sizing.planning.runplan import local_target_refusal

        try:  # one admission (sizing.planning.admission): its warnings and notes in the CLI's words
            # this host's calibration, measured here (about a minute) if it has none: the envelopes are in its units
            run = validate_run(params, state_paths().specs, say=print,
                               host=lambda: current(measure_by_command, echo=print))
        except SpecError as err:
            raise AirflowFailException(str(err)) from err
        refusal = local_target_refusal(run.deployment, conf.get("core", "executor"))
        if refusal:
            raise AirflowFailException(refusal)
        print(f"resolved spec: {run.spec_path} (every worker reads it from {publish_spec(run.spec_path)})")
        return run.to_dict()

    @task
    def plan_trials(run: dict) -> list[dict]:
        from adapters.planning import slot_offset, spec_on_this_worker
        from sizing.campaign import load_campaign
        from sizing.planning.runplan import CampaignRun, plan_run_trials

        typed = CampaignRun.from_dict(run)
        trials = plan_run_trials(typed, load_campaign(spec_on_this_worker(typed.spec_path)), slot_offset())
        print(f"{len(trials)} trial(s), one fresh cluster each:",
              ", ".join(f"{t.cluster_key} (ports {t.local_port_base}+)" for t in trials))
        return [t.to_dict() for t in trials]

    @task(outlets=[RAW], map_index_template="{{ trial_label }}")
    def upload(trial: dict, runs: list[dict]) -> list[str]:
        from airflow.sdk import get_current_context
        from rabbit_sizing.sensors.cluster import slot_kept
        from rabbit_sizing.uploads import publish_run_logs

        from sizing.planning.plan import Trial

        typed = Trial.from_dict(trial)
        context = get_current_context()
        context["trial_label"] = typed.cluster_key  # TaskFlow's way to name a map index
        with slot_kept(typed, context["ti"].dag_id, context["run_id"]):
            return publish_run_logs(typed, runs)

    @task_group(group_id="cluster")
    def per_trial(trial):
        label = {"map_index_template": TRIAL_LABEL}
        slot = ClusterSlotSensor(task_id="wait_for_slot", trial=trial, timeout=6 * 3600, **label)
        apply = ClusterApplyOperator(task_id="terraform_apply", trial=trial, **label)
        healthy = ClusterHealthySensor(task_id="wait_healthy", trial=trial, cluster=apply.output, **label)
        load = LoadgenOperator(task_id="run_scenarios", trial=trial, cluster=apply.output, **label)
        uploaded = upload(trial, load.output)
        destroy = ClusterDestroyOperator(task_id="terraform_destroy", trial=trial, **label)
        # A destroy that fails may leave a cluster running (and billing): that fails the run.
        slot >> apply >> healthy >> load >> uploaded >> destroy.as_teardown(setups=apply, on_failure_fail_dagrun=True)

    @task(trigger_rule="all_done")
    def analysis_inputs(run: dict, trials: list[dict] | None) -> list[str]:
        """Runs once every trial's group is done (a failed trial does not abandon the others) and passes on the
        configs whose every repeat's raw runs landed; the failed cluster tasks it records make `trials_succeeded`
        fail the run at the end."""
        from airflow.sdk import get_current_context
        from airflow.sdk.exceptions import AirflowFailException
        from rabbit_sizing.uploads import configs_with_complete_raw

        from sizing.planning.plan import Trial
        from sizing.planning.runplan import failed_tasks

        if trials is None:  # all_done runs it after a refused spec too: say that, not a TypeError
            raise AirflowFailException("no trials were planned (validate_spec or plan_trials failed): nothing ran")
        ti = get_current_context()["ti"]
        states = ti.get_task_states(dag_id=ti.dag_id, task_group_id="cluster", run_ids=[ti.run_id])
        failed = failed_tasks(states.get(ti.run_id, {}))
        ti.xcom_push(key="failed_cluster_tasks", value=failed)
        complete = configs_with_complete_raw([Trial.from_dict(t) for t in trials])
        if not complete:
            raise AirflowFailException(f"no config has complete raw results: nothing to analyse (failed: {failed})")
        if failed:
            print(f"failed cluster tasks: {', '.join(failed)}; analysing the configs that are complete")
        return [trial.config_id for trial in complete]  # one trial per config

    @task
    def trials_succeeded() -> None:
        """Fails the run when any trial failed. Airflow decides a run's state on its leaves, and the analysis
        runs `all_done` so that one failed trial does not cost the others their results: this leaf says so."""
        from airflow.sdk import get_current_context
        from airflow.sdk.exceptions import AirflowFailException

        failed = get_current_context()["ti"].xcom_pull(task_ids="analysis_inputs", key="failed_cluster_tasks")
        if failed:
            raise AirflowFailException(f"{len(failed)} cluster task(s) failed (the tables and report cover the "
                                       f"configs whose every repeat landed): {', '.join(failed)}")

    run = validate_spec()
    trials = plan_trials(run)
    clusters = per_trial.expand(trial=trials)

    inputs = analysis_inputs(run, trials)
    clusters >> inputs

    # One spark-submit for the whole analysis: each submit pays ~13 s of JVM, imports and session start-up, once
    # per config when phase_summary was a task per config (21 configs at seed scale). The task builds what the
    # executors need itself (py-files zip, their interpreter, credentials): it may run on any worker.
    analysis = AnalysisSubmitOperator(
        task_id="analysis", conn_id=SPARK_CONN_ID, run=run, configs=inputs, conf=_spark_conf(),
        env_vars=_spark_env(), outlets=[PHASE_SUMMARY, LEADERBOARDS, VALIDATION])
    # The HTML report next to the tables; the task's "Campaign report" link opens it from the UI.
    report = ReportOperator(task_id="report", run=run, outlets=[REPORT])
    analysis >> report >> trials_succeeded()


def _spark_conf() -> dict[str, str]:
    from rabbit_sizing.spark import submit_conf

    return submit_conf()


def _spark_env() -> dict[str, str]:
    from rabbit_sizing.spark import driver_env

    return driver_env()


DAG = sizing_campaign()
