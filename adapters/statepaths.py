"""One home for the local state paths, as sizing/contract/layout.py is for object keys.

Everything a local run or the demo keeps on disk lives under one state directory: SIZING_STATE_DIR, else
<repo>/.state. Nothing else spells a state path: the demo, the CLI, the DAG, the plugins, the Terraform runner and the
tests ask StatePaths.

    .state/
      demo.json                 the running demo stack, for the CLI in a new shell (app.stackstate)
      last_demo.json            the last demo's timings
      airflow/                  AIRFLOW_HOME of the demo
      objectstore/              the demo's S3 server's data (kept by `make stop`, deleted by `make clean`)
      jwt_secret, pids/, logs/  the demo's services (logs/query.log: `sizing query`'s Spark and JVM output)
      specs/                    resolved campaign specs of DAG runs (adapters.planning)
      clusters/                 ClusterInfo JSON of running local clusters (rabbit_sizing.cluster_lifecycle)
      terraform/<campaign>/<cluster_key>/   one Terraform workspace per cluster (adapters.terraform)
      leases/<deployment>/      cluster-slot leases of the local target (adapters.leases)
      build/                    the Spark jobs' py-files zip
      gx_docs/                  Great Expectations Data Docs
      runs/<campaign>/<config>/<run>/   the load generator's console log per scenario and repeat
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
STATE_ENV = "SIZING_STATE_DIR"


@dataclass(frozen=True)
class StatePaths:
    root: Path

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> StatePaths:
        env = os.environ if env is None else env
        return cls(Path(env.get(STATE_ENV) or REPO_ROOT / ".state"))

    # -- the demo stack
    @property
    def stack_file(self) -> Path:
        return self.root / "demo.json"

    @property
    def last_demo(self) -> Path:
        return self.root / "last_demo.json"

    @property
    def airflow_home(self) -> Path:
        return self.root / "airflow"

    @property
    def objectstore(self) -> Path:
        return self.root / "objectstore"

    @property
    def jwt_secret(self) -> Path:
        return self.root / "jwt_secret"

    @property
    def pids(self) -> Path:
        return self.root / "pids"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def log(self, name: str) -> Path:
        return self.logs / f"{name}.log"

    @property
    def query_log(self) -> Path:
        return self.log("query")

    # -- runs
    @property
    def specs(self) -> Path:
        return self.root / "specs"

    @property
    def clusters(self) -> Path:
        return self.root / "clusters"

    @property
    def terraform(self) -> Path:
        return self.root / "terraform"

    @property
    def leases(self) -> Path:
        return self.root / "leases"

    def lease_board(self, deployment: str) -> Path:
        return self.leases / deployment

    @property
    def build(self) -> Path:
        return self.root / "build"

    @property
    def gx_docs(self) -> Path:
        return self.root / "gx_docs"

    def run_log(self, campaign: str, config_id: str, run_label: str, scenario: str, repeat: int) -> Path:
        return self.root / "runs" / campaign / config_id / run_label / f"{scenario}-r{repeat}.log"


def state_paths(env: Mapping[str, str] | None = None) -> StatePaths:
    return StatePaths.from_env(env)


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """The state directory itself: SIZING_STATE_DIR or <repo>/.state."""
    return state_paths(env).root
