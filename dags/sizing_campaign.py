"""sizing_campaign: size RabbitMQ clusters for one campaign spec, end to end.

validate_spec -> plan_configs -> cluster[config] (mapped group, one per config):
    wait_for_slot -> terraform_apply (setup) -> wait_healthy -> run_scenarios -> upload -> terraform_destroy (teardown)
-> phase_summary[config] -> leaderboards -> validate_tables -> report

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
    def spark_args(job: str, configs: list[dict]) -> list[list[str]]:
        """Runs once every config's group is done (a failed config does not abandon the others), and
        analyses the configs whose raw runs all landed; the failed config still fails the DAG run."""
        from rabbit_sizing.spark import per_config_args
        from rabbit_sizing.uploads import configs_with_complete_raw

        complete = configs_with_complete_raw(configs)
        if not complete:
            from airflow.sdk.exceptions import AirflowFailException

            raise AirflowFailException("no config has complete raw results: nothing to analyse")
        return per_config_args(job, complete)

    @task
    def campaign_args(run: dict) -> list[str]:
        from rabbit_sizing.spark import job_args

        return job_args("leaderboards", run["campaign"], run["run_label"])

    @task(outlets=[REPORT])
    def report(run: dict) -> str:
        """Calls sizing.report.build_report when the report module exists (it is written separately)."""
        from rabbit_sizing.reporting import build_report_if_available

        return build_report_if_available(run)

    run = validate_spec()
    configs = plan_configs(run)
    clusters = per_config.expand(config=configs)

    summary_args = spark_args.override(task_id="phase_summary_args")("phase_summary", configs)
    clusters >> summary_args
    phase_summary = SparkSubmitOperator.partial(
        task_id="phase_summary", conn_id=SPARK_CONN_ID, application=_app("phase_summary"), conf=SPARK_CONF,
        name="phase_summary", max_active_tis_per_dagrun=1, outlets=[PHASE_SUMMARY],
    ).expand(application_args=summary_args)
    board_args = campaign_args(run)
    leaderboards = SparkSubmitOperator(
        task_id="leaderboards", conn_id=SPARK_CONN_ID, application=_app("leaderboards"), conf=SPARK_CONF,
        name="leaderboards", application_args=board_args, outlets=[LEADERBOARDS],
    )
    validate_tables = SparkSubmitOperator(
        task_id="validate_tables", conn_id=SPARK_CONN_ID, application=_app("validate"), conf=SPARK_CONF,
        name="validate", application_args=board_args, outlets=[VALIDATION],
    )
    phase_summary >> leaderboards >> validate_tables >> report(run)


def _app(job: str) -> str:
    from rabbit_sizing.spark import application

    return application(job)


DAG = sizing_campaign()
