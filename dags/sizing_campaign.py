"""sizing_campaign: size RabbitMQ clusters for one campaign spec, end to end.

validate_spec -> plan_configs -> cluster[config] (mapped group, one per config):
    wait_for_slot -> terraform_apply (setup) -> wait_healthy -> run_scenarios -> upload -> terraform_destroy (teardown)
-> analysis_inputs -> phase_summary[config] -> leaderboards -> report
   (Spark jobs via SparkSubmitOperator; each runs the Great Expectations suites on what it reads and writes)

Backfill one config: trigger with `configs: [<config_id>]` (and the same `run_label`); the raw run
partitions and the per-config table partitions of that config are replaced, nothing else is touched.
Parse-time cost: only airflow.sdk, the Spark provider's operator and this project's thin plugin
modules are imported; specs are read by the tasks, never at parse time.
"""

from __future__ import annotations

import os

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.sdk import Asset, Param, dag, task, task_group
from rabbit_sizing.operators.cluster import ClusterApplyOperator, ClusterDestroyOperator
from rabbit_sizing.operators.loadgen import LoadgenOperator
from rabbit_sizing.sensors.cluster import ClusterHealthySensor, ClusterSlotSensor

BUCKET = os.environ.get("SIZING_S3_BUCKET", "rabbit-sizing")
# Assets downstream DAGs can schedule on (e.g. a dashboard refresh when leaderboards change).
RAW = Asset(uri=f"s3://{BUCKET}/raw/", name="sizing_raw_runs", group="rabbit-sizing")
PHASE_SUMMARY = Asset(uri=f"s3://{BUCKET}/tables/phase_summary/", name="sizing_phase_summary", group="rabbit-sizing")
LEADERBOARDS = Asset(uri=f"s3://{BUCKET}/tables/leaderboards/", name="sizing_leaderboards", group="rabbit-sizing")
VALIDATION = Asset(uri=f"s3://{BUCKET}/validation/", name="sizing_validation", group="rabbit-sizing")
REPORT = Asset(uri=f"s3://{BUCKET}/reports/", name="sizing_report", group="rabbit-sizing")

SPARK_CONN_ID = "spark_default"
PY_FILES = "{{ ti.xcom_pull(task_ids='analysis_inputs', key='py_files') }}"
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"}


@dag(
    dag_id="sizing_campaign",
    schedule=None,
    catchup=False,
    max_active_runs=1,
    tags=["rabbit-sizing"],
    doc_md=__doc__,
    default_args={"retries": 0},
    params={
        "campaign": Param("campaigns/local-quick.yaml", type="string", minLength=1,
                          description="Campaign spec: a path (relative to the repo) or inline YAML."),
        "configs": Param([], type="array", items={"type": "string"},
                         description="Only these config ids (e.g. n3-c5.2xlarge-gp2); empty = all. "
                                     "One id = backfill that config."),
        "scenarios": Param([], type="array", items={"type": "string"}, description="Only these scenarios."),
        "run_label": Param("r1", type="string", pattern="^[A-Za-z0-9_-]+$",
                           description="Names the run partitions; the same label replaces, a new one adds."),
        "max_parallel_configs": Param(None, type=["null", "integer"], minimum=1,
                                      description="Clusters up at once (default: 1 local, 4 aws)."),
    },
)
def sizing_campaign():
    @task
    def validate_spec(params=None) -> dict:
        """Fail fast, with every problem and its field path, before anything is provisioned."""
        from airflow.sdk.exceptions import AirflowFailException
        from rabbit_sizing.planning import state_dir, validate_run

        from sizing.fields import SpecError

        try:
            run = validate_run(params, state_dir() / "specs")
        except SpecError as err:
            raise AirflowFailException(str(err)) from err
        return run.as_dict()

    @task
    def plan_configs(run: dict) -> list[dict]:
        from rabbit_sizing.planning import CampaignRun, plan_config_dicts, slot_offset

        configs = plan_config_dicts(CampaignRun.from_dict(run), slot_offset())
        print("configs:", ", ".join(f"{c['config_id']} (ports {c['local_port_base']}+)" for c in configs))
        return configs

    @task(outlets=[RAW])
    def upload(config: dict, runs: list[dict]) -> list[str]:
        from rabbit_sizing.uploads import publish_run_logs

        return publish_run_logs(config, runs)

    @task_group(group_id="cluster")
    def per_config(config):
        slot = ClusterSlotSensor(task_id="wait_for_slot", config=config, timeout=6 * 3600)
        apply = ClusterApplyOperator(task_id="terraform_apply", config=config)
        healthy = ClusterHealthySensor(task_id="wait_healthy", cluster=apply.output)
        load = LoadgenOperator(task_id="run_scenarios", config=config, cluster=apply.output)
        uploaded = upload(config, load.output)
        destroy = ClusterDestroyOperator(task_id="terraform_destroy", config=config)
        slot >> apply >> healthy >> load >> uploaded >> destroy.as_teardown(setups=apply)

    @task(trigger_rule="all_done")
    def analysis_inputs(run: dict, configs: list[dict]) -> list[dict]:
        """Runs once every config's group is done (a failed config does not abandon the others) and
        analyses the configs whose raw runs all landed; a failed config still fails the DAG run."""
        from airflow.sdk.exceptions import AirflowFailException
        from rabbit_sizing.spark import analysis_args, build_py_files
        from rabbit_sizing.uploads import configs_with_complete_raw

        complete = configs_with_complete_raw(configs)
        if not complete:
            raise AirflowFailException("no config has complete raw results: nothing to analyse")
        from airflow.sdk import BaseHook, get_current_context

        # A local master imports sizing/ and spark_jobs/ from the repo (PYTHONPATH); a remote one needs the zip.
        master = BaseHook.get_connection(SPARK_CONN_ID).host or ""
        py_files = "" if master.startswith("local") else str(build_py_files())
        get_current_context()["ti"].xcom_push(key="py_files", value=py_files)
        print(f"spark master {master}; py-files: {py_files or '(none: local master, repo on PYTHONPATH)'}")
        return analysis_args(run, complete)["per_config"]

    @task(multiple_outputs=True)
    def campaign_args(run: dict) -> dict:
        from rabbit_sizing.spark import analysis_args

        return analysis_args(run, [])

    @task(outlets=[REPORT])
    def report(run: dict) -> str:
        """Renders the HTML report (verdict, charts, leaderboards, data quality) next to the tables."""
        from rabbit_sizing.reporting import build_campaign_report

        return build_campaign_report(run)

    run = validate_spec()
    configs = plan_configs(run)
    clusters = per_config.expand(config=configs)

    inputs = analysis_inputs(run, configs)
    clusters >> inputs

    def spark(task_id: str, job: str, args, outlets, per_config: bool):
        kwargs = dict(task_id=task_id, conn_id=SPARK_CONN_ID, application=_app(job), py_files=PY_FILES,
                      conf=SPARK_CONF, env_vars=_spark_env(), name=task_id, outlets=outlets)
        if per_config:  # one job per config, one at a time (each spark-submit is ~400 MB and two cores' worth)
            return SparkSubmitOperator.partial(max_active_tis_per_dagrun=1, **kwargs).expand(application_args=args)
        return SparkSubmitOperator(application_args=args, **kwargs)

    boards = campaign_args(run)
    phase_summary = spark("phase_summary", "phase_summary", inputs.map(_phase_summary_args),
                          [PHASE_SUMMARY, VALIDATION], True)
    leaderboards = spark("leaderboards", "leaderboards", boards["leaderboards"], [LEADERBOARDS, VALIDATION], False)
    phase_summary >> leaderboards >> report(run)


def _app(job: str) -> str:
    from rabbit_sizing.spark import application

    return application(job)


def _phase_summary_args(item: dict) -> list[str]:
    return item["phase_summary"]


def _spark_env() -> dict[str, str]:
    from rabbit_sizing.spark import driver_env

    return driver_env()


DAG = sizing_campaign()
