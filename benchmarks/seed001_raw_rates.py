"""Seed 001's scaled twin (campaigns/disks-matter-scale.yaml, run scale1) from its raw client_seconds, for a run whose
analysis stopped at the raw gate (BENCHMARKS.md "Seed 001 on the local scale model"): the quorum group's confirmed
messages per steady second, sizing.criteria.stats.batch_means, and sizing.criteria.stats.run_compare of each layout
against every one before it, the functions the findings step applies to phase_summary's rates. Reads the loadgen's local
copy (artifacts/loadgen/raw); run from the repository root: `PYTHONPATH=. .venv/bin/python
benchmarks/seed001_raw_rates.py`.
"""

from __future__ import annotations

import glob
import sys

import pandas as pd

from sizing.criteria import stats

ROOT = "artifacts/loadgen/raw/campaign=disks-matter-scale"
CONFIGS = ("n1-c4.4xlarge-io1-200gb", "n1-c4.4xlarge-st1-1000gb", "n1-c4.4xlarge-st1-1000gb-wal",
           "n1-c4.4xlarge-st1-1000gb-wal-segments")
SCENARIOS = ("pure-throughput-1q", "mixed-throughput-1q", "medium-throughput-1q")


def steady_seconds(config: str, scenario: str, run: str) -> dict[str, pd.DataFrame]:
    """Per workload group: the steady seconds' counts, every worker summed per second."""
    run_dir = f"{ROOT}/config={config}/scenario={scenario}/run={run}/repeat=1"
    files = glob.glob(f"{run_dir}/client_seconds/phase=01/*.parquet")
    frame = pd.concat([pd.read_parquet(f) for f in files])
    frame = frame[~frame["warmup"].astype(bool)]
    return {str(g): part.groupby("second")[["published", "confirmed", "consumed"]].sum().sort_index()
            for g, part in frame.groupby("group")}


def main(run: str = "scale1") -> None:
    means = {}
    for config in CONFIGS:
        for scenario in SCENARIOS:
            groups = steady_seconds(config, scenario, run)
            quorum = groups.get("quorum", groups.get("main"))
            means[config, scenario] = stats.batch_means(quorum["confirmed"].astype(float).tolist())
            background = groups.get("lazy-background")
            print(f"{config:38s} {scenario:21s} confirmed {quorum['confirmed'].mean():7.0f} msg/s over "
                  f"{len(quorum)} s" + ("" if background is None else
                                        f"; background published {background['published'].mean():4.0f}, consumed "
                                        f"{background['consumed'].mean():4.0f}"))
    for baseline in CONFIGS[:3]:
        for scenario in SCENARIOS:
            base = means[baseline, scenario]
            for config in CONFIGS[CONFIGS.index(baseline) + 1:]:
                other = means[config, scenario]
                effect = stats.run_compare(base.mean, base.rse, base.batches, other.mean, other.rse, other.batches)
                i = effect.interval
                print(f"{scenario:21s} {config} against {baseline}: {i.estimate:+.1%} [{i.low:+.1%}, {i.high:+.1%}] "
                      f"({effect.verdict}, 90 %, {stats.WITHIN_RUN})")


if __name__ == "__main__":
    main(*sys.argv[1:])
