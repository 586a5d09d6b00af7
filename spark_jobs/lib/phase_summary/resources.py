"""phase_summary's resource columns: each node over each phase's steady window from the node fold's partials, the
busiest node per figure, against the config's limits (node_phase_stats, with_resource_limits)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from sizing.campaign import Campaign
from sizing.campaign.envelopes import config_limits
from sizing.contract import records
from sizing.contract.records import (
    Column as Declared,  # a fold's column: name, type, meaning (pyspark's Column is another)
)
from sizing.resources.disks import DATA_ROLE, VOLUME_ROLES
from spark_jobs.lib.phase_summary.keys import PHASE_KEY, RUN_COLS
from spark_jobs.lib.phase_summary.node_fold import NODE_KEY, NODE_MEANS, NODE_PHASE
from spark_jobs.lib.s3source import ddl_to_arrow

# resource_limits_frame's rows: one per config (sizing.campaign.envelopes.config_limits).
RESOURCE_LIMITS_COLUMNS = (
    Declared("config_id", "string", "cluster config"),
    Declared("network_limit_mbit_s", "float64", "the instance's network limit, Mbit/s"),
    Declared("volume_iops_limit", "float64", "a data volume's IOPS limit"),
    Declared("volume_mb_s_limit", "float64", "a data volume's throughput limit, MB/s"),
    Declared("ebs_iops_limit", "float64", "the instance's EBS IOPS ceiling"),
    Declared("ebs_mb_s_limit", "float64", "the instance's EBS throughput ceiling, MB/s"),
    *(column for role in VOLUME_ROLES for column in (
        Declared(f"{role}_iops_limit", "float64", f"the {role} volume's own IOPS limit (null: none of its own)"),
        Declared(f"{role}_mb_s_limit", "float64", f"the {role} volume's own MB/s limit (null: none of its own)"))))
RESOURCE_LIMITS_DDL = records.columns_ddl(RESOURCE_LIMITS_COLUMNS)
MB = 1e6


# _final_nodes' rows: one per node phase of a run.
PER_NODE_COLUMNS = (*NODE_PHASE,
    Declared("cpu_mean", "float64", "mean busy share of the node's cores"),
    Declared("cpu_p95", "float64", "p95 busy share"),
    Declared("machine_mean", "float64", "mean busy share of the machine's cores"),
    Declared("run_queue_max", "float64", "highest run queue"),
    Declared("write_mb_s", "float64", "mean disk write, MB/s"),
    Declared("read_mb_s", "float64", "mean disk read, MB/s"),
    Declared("write_iops", "float64", "mean disk write ops/s"),
    Declared("net_mb_s", "float64", "mean network in + out, MB/s"),
    Declared("client_mb_s", "float64", "of which with clients, MB/s"),
    Declared("internode_mb_s", "float64", "of which between nodes, MB/s"),
    Declared("peak_mbit_s", "float64", "the busier NIC direction, Mbit/s"),
    *(column for role in VOLUME_ROLES for column in (
        Declared(f"{role}_mb", "float64", f"the {role} volume's mean write, bytes/s"),
        Declared(f"{role}_iops", "float64", f"the {role} volume's mean write ops/s"))),
    Declared("cluster_nodes", "int32", "nodes seen in the run (any phase)"))
PER_NODE_DDL = records.columns_ddl(PER_NODE_COLUMNS)


def _final_nodes(partials: pa.Table) -> pa.Table:
    """One run: each node phase's figures from its partial rows (PER_NODE_DDL), and the cluster's size (every node
    seen in the run, in any phase)."""
    frame = partials.to_pandas()
    gid = frame.groupby(NODE_KEY, sort=False, dropna=False).ngroup().to_numpy()
    by = frame.groupby(gid)
    out = by[NODE_KEY].first()
    for column in ("steady_rows", "seconds", "missing_seconds"):
        out[column] = by[column].sum()
    out["target"] = by["target"].first()
    out["shared"] = by["shared"].max()
    out["run_queue_max"] = by["run_queue_max"].max()
    mean = {name: by[f"{name}_sum"].sum() / by[f"{name}_n"].sum().replace(0, np.nan) for name in NODE_MEANS}
    cpu = by["cpu_values"].agg(lambda blobs: np.frombuffer(b"".join(blobs), dtype="<f8"))
    # Spark SQL's exact percentile: linear between the closest ranks (numpy's default)
    out["cpu_p95"] = [float(np.percentile(v, 95)) if len(v) else None for v in cpu]
    out["cpu_mean"], out["machine_mean"] = mean["cpu"], mean["machine"]
    out["write_mb_s"], out["read_mb_s"] = mean["write_bytes"] / MB, mean["read_bytes"] / MB
    out["write_iops"] = mean["write_ops"]
    out["net_mb_s"], out["client_mb_s"] = mean["net_bytes"] / MB, mean["client_bytes"] / MB
    out["internode_mb_s"] = mean["internode_bytes"] / MB
    out["peak_mbit_s"] = np.fmax(mean["nic_in"], mean["nic_out"]) * 8 / MB  # Spark's greatest skips nulls
    for role in VOLUME_ROLES:
        out[f"{role}_mb"], out[f"{role}_iops"] = mean[f"{role}_bytes"], mean[f"{role}_ops"]
    out["cluster_nodes"] = frame["node"].dropna().nunique()
    return pa.Table.from_pandas(out.reset_index(drop=True), schema=ddl_to_arrow(PER_NODE_DDL), preserve_index=False)


def node_phase_stats(partials: DataFrame) -> DataFrame:
    """phase_summary's resource columns from the node fold's partial rows (fold_node_seconds): each node over each
    phase's steady window, then the busiest node per figure. Missing seconds are counted, never averaged in."""
    per_node = partials.groupBy(*RUN_COLS).applyInArrow(_final_nodes, PER_NODE_DDL)
    with_data = F.col("seconds") > 0
    return per_node.where(F.col("steady_rows") > 0).groupBy(*PHASE_KEY).agg(
        F.max("cluster_nodes").cast("int").alias("cluster_nodes"),
        F.sum(with_data.cast("int")).cast("int").alias("resource_nodes"),
        F.sum("missing_seconds").alias("resource_missing_seconds"),
        F.first("target", ignorenulls=True).alias("resource_target"),
        (F.max("shared") > 0).alias("shared_cores"),
        F.max_by("node", "cpu_mean").alias("cpu_busiest_node"),
        F.max("cpu_mean").alias("cpu_busiest_mean"),
        F.max_by("cpu_p95", "cpu_mean").alias("cpu_busiest_p95"),
        F.max("machine_mean").alias("machine_cpu_busy_mean"),
        F.max("run_queue_max").alias("run_queue_max"),
        F.max_by("node", "write_mb_s").alias("disk_busiest_node"),
        F.max("write_mb_s").alias("disk_write_mb_s"),
        F.max("write_iops").alias("disk_write_iops"),
        # an idle device (a scale-model loop volume in a quiet second) writes 0 ops: no size per op, not an error
        F.max_by(F.try_divide(F.col("write_mb_s") * 1000, F.col("write_iops")), "write_iops")
        .alias("disk_write_kb_per_op"),
        F.max("read_mb_s").alias("disk_read_mb_s"),
        F.max_by("node", "net_mb_s").alias("net_busiest_node"),
        F.max("net_mb_s").alias("net_mb_s"),
        F.max_by("client_mb_s", "net_mb_s").alias("net_client_mb_s"),
        F.max_by("internode_mb_s", "net_mb_s").alias("net_internode_mb_s"),
        F.max("peak_mbit_s").alias("net_peak_mbit_s"),
        # each volume's busiest node, by role (intermediate: with_disk_shares turns them into shares of each limit)
        *[(F.max(f"{role}_mb") / MB).alias(f"{role}_write_mb_s") for role in VOLUME_ROLES],
        *[F.max(f"{role}_iops").alias(f"{role}_write_iops") for role in VOLUME_ROLES])


def with_resource_limits(table: DataFrame, limits: DataFrame | None) -> DataFrame:
    """The config's limits (sizing.campaign.envelopes.config_limits), for figures measured within them: AWS's, and a
    local node's in its scale-model envelope (its cores not shared: the sampler read it in its cgroup and loop devices).
    A local node sharing the machine has no limit of its instance type."""
    within_limits = (F.col("resource_target") == "aws") | (F.col("shared_cores") == F.lit(False))
    if limits is None:
        limits = table.sparkSession.createDataFrame([], RESOURCE_LIMITS_DDL)
    joined = table.join(F.broadcast(limits), "config_id", "left")
    for column in limits.columns[1:]:
        joined = joined.withColumn(column, F.when(within_limits, F.col(column)))
    return with_disk_shares(joined)


def with_disk_shares(table: DataFrame) -> DataFrame:
    """Each volume against its own limit (sizing.criteria.rules.disk_bound): per role, the busiest node's write IOPS and
    MB/s over that role's volume limits; the highest share names `volume_busiest_role`. Records without per-volume
    figures (before issue 22) read the node's totals as the data volume's. And the node's volumes together against
    the instance's EBS ceiling (`ebs_load_share`)."""
    def share(figure: Column, limit: str) -> Column:
        return figure / F.col(limit)

    figures = {role: (F.col(f"{role}_write_iops"), F.col(f"{role}_write_mb_s")) for role in VOLUME_ROLES}
    figures[DATA_ROLE] = (F.coalesce(F.col(f"{DATA_ROLE}_write_iops"), F.col("disk_write_iops")),
                          F.coalesce(F.col(f"{DATA_ROLE}_write_mb_s"), F.col("disk_write_mb_s")))
    shares = {role: F.greatest(share(iops, f"{role}_iops_limit"), share(mb_s, f"{role}_mb_s_limit"))
              for role, (iops, mb_s) in figures.items()}
    top = F.greatest(*shares.values())
    busiest = F.lit(None).cast("string")
    for role in reversed(VOLUME_ROLES):  # the first role in VOLUME_ROLES order wins a tie
        busiest = F.when(shares[role] == top, F.lit(role)).otherwise(busiest)
    return (table.withColumn("volume_load_share", top).withColumn("volume_busiest_role", busiest)
            .withColumn("ebs_load_share", F.greatest(share(F.col("disk_write_iops"), "ebs_iops_limit"),
                                                     share(F.col("disk_write_mb_s"), "ebs_mb_s_limit"))))


def resource_limits_frame(spark: SparkSession, campaign: Campaign) -> DataFrame:
    """One row per config of the campaign: its limits (sizing.campaign.envelopes.config_limits: the catalog's, or the
    scaled envelope's on the local scale model): network, the EBS ceiling, and every volume's own limits by role (null
    where the role has no volume of its own)."""
    rows = []
    for shape in campaign.clusters:
        limits = config_limits(campaign, shape)
        roles = [(limits.roles[r].iops, limits.roles[r].mb_s) if r in limits.roles else (None, None)
                 for r in VOLUME_ROLES]
        rows.append((shape.config_id, limits.network_mbit_s, limits.volume_iops, limits.volume_mb_s, limits.ebs_iops,
                     limits.ebs_mb_s, *(x for pair in roles for x in pair)))
    # From pandas (Arrow, a local relation): a list of tuples would become a Python RDD whose broadcast job
    # starts Python workers before anything else runs (measured: the first, serial stage of the job).
    columns = [c.name for c in RESOURCE_LIMITS_COLUMNS]
    frame = pd.DataFrame(rows, columns=columns).astype({c: "float64" for c in columns[1:]})
    return spark.createDataFrame(frame, RESOURCE_LIMITS_DDL)
