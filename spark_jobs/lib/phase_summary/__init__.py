"""phase_summary and the tables beside it: the analysis job's first step (spark_jobs/jobs/analysis.py runs `step`).

Reads the raw records of the given configs and runs (never "latest"), and overwrites exactly their
`tables/phase_summary/campaign=C/config=K/run=R/` partitions (every other run of a config keeps its rows, issue 24),
and the same partitions of the four tables beside it (issue 35). One module per table it writes, each a transform
whose inputs and output are declared (`TRANSFORM`, a `keys.Transform`), over the shared folds:

- tables: `summary` (phase_summary: `summarise`), `client_series`, `broker_series`, `run_events`, `node_series`
  (written by the driver, never through Spark);
- phase_summary's parts: `client_stats` (client figures and percentiles), `dynamics` (faults, recovery, backlog),
  `resources` (node figures against the config's limits);
- the shared folds, read once where the objects are: `client_fold` (client_seconds: partials, series blocks, the raw
  gate's checks), `node_fold` (node_seconds); `keys` (keys, fold row kinds, `Transform`);
- `first_step`: `run` (read, transform every table, write) and `step` (`run` between its GX gates).

The table modules' transforms are not re-exported: `phase_summary.client_series` (and the others) is the module.

What the jobs, tools, benchmarks and tests call is re-exported here; the `phase-summary-tables` import contract keeps
the table modules apart and the layers one way.
"""

from spark_jobs.lib.phase_summary.client_fold import (
    CLIENT_FOLD,
    COUNT_BLOCK_COLUMNS,
    FOLDED_DDL,
    HIST_COLS,
    PARTIAL_COLUMNS,
    PARTIAL_DDL,
    SERIES_ARRAYS,
    SERIES_BLOCK_KEY,
    SERIES_COLUMNS,
    SERIES_COUNTS,
    SERIES_DDL,
    SERIES_KEY,
    SERIES_MAX,
    SERIES_SUMS,
    SUM_COLS,
    WINDOW_HISTS,
    ClientRecords,
    block_seconds,
    fold_client_seconds,
    series_rows,
    steady_windows,
    window_of,
)
from spark_jobs.lib.phase_summary.client_stats import CLIENT_COLUMNS, CLIENT_DDL, client_phase_stats
from spark_jobs.lib.phase_summary.dynamics import DYNAMICS_COLUMNS, DYNAMICS_DDL, phase_dynamics, run_dynamics
from spark_jobs.lib.phase_summary.first_step import run, step, write_series
from spark_jobs.lib.phase_summary.keys import (
    CHECK,
    GROUP_KEY,
    PARTIAL,
    PHASE_KEY,
    RUN_COLS,
    RUN_KEY_DDL,
    SERIES,
    Transform,
    phase_windows,
    with_group,
)
from spark_jobs.lib.phase_summary.node_fold import (
    NODE_COLUMNS,
    NODE_FOLD,
    NODE_FOLDED_DDL,
    NODE_PARTIAL_COLUMNS,
    NODE_PARTIAL_DDL,
    NodeRecords,
    fold_node_seconds,
)
from spark_jobs.lib.phase_summary.resources import (
    MB,
    PER_NODE_COLUMNS,
    PER_NODE_DDL,
    RESOURCE_LIMITS_COLUMNS,
    RESOURCE_LIMITS_DDL,
    node_phase_stats,
    resource_limits_frame,
    with_disk_shares,
    with_resource_limits,
)
from spark_jobs.lib.phase_summary.summary import TABLE, Rules, summarise

__all__ = [
    "CHECK", "CLIENT_COLUMNS", "CLIENT_DDL", "CLIENT_FOLD", "COUNT_BLOCK_COLUMNS", "DYNAMICS_COLUMNS", "DYNAMICS_DDL",
    "FOLDED_DDL", "GROUP_KEY", "HIST_COLS", "MB", "NODE_COLUMNS", "NODE_FOLD", "NODE_FOLDED_DDL",
    "NODE_PARTIAL_COLUMNS", "NODE_PARTIAL_DDL", "PARTIAL", "PARTIAL_COLUMNS", "PARTIAL_DDL", "PER_NODE_COLUMNS",
    "PER_NODE_DDL", "PHASE_KEY", "RESOURCE_LIMITS_COLUMNS", "RESOURCE_LIMITS_DDL", "RUN_COLS", "RUN_KEY_DDL", "SERIES",
    "SERIES_ARRAYS", "SERIES_BLOCK_KEY", "SERIES_COLUMNS", "SERIES_COUNTS", "SERIES_DDL", "SERIES_KEY", "SERIES_MAX",
    "SERIES_SUMS", "SUM_COLS", "TABLE", "WINDOW_HISTS", "ClientRecords", "NodeRecords", "Rules", "Transform",
    "block_seconds", "client_phase_stats", "fold_client_seconds",
    "fold_node_seconds", "node_phase_stats", "phase_dynamics", "phase_windows", "resource_limits_frame",
    "run", "run_dynamics", "series_rows", "steady_windows", "step", "summarise", "window_of",
    "with_disk_shares", "with_group", "with_resource_limits", "write_series",
]
