"""The small-node penalty of the scale model (issue 44): broker work per CPU-second at several CPU quotas.

    flock /tmp/rabbit-heavy.lock .venv/bin/python benchmarks/small_quota.py            # 0.05, 0.1, 0.2, 0.4 cores
    flock /tmp/rabbit-heavy.lock .venv/bin/python benchmarks/small_quota.py --cores 0.1 --cores 0.4 --repeats 2

Each point is the host calibration's reference measurement (loadgen/calibrate.py: one node, four quorum queues at
the maximum rate, messages confirmed per CPU-second of the node's cgroup) at another quota of this host's cores. A
node's broker work per CPU-second should not depend on its quota: where it falls at small quotas (the CFS period cut
into slices of 1-2 ms, two Erlang schedulers waking for slivers of time), a scaled small instance carries less than
its CPU share and the model, not the instance type, decides. The last line is `small_quota=<cores>:<msg per CPU-s>,..`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadgen.calibrate import measure
from sizing.resources.calibration import REFERENCE_MSG_S_PER_CORE


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=float, action="append", help="node quota in this host's cores (repeatable)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    quotas = args.cores or [0.05, 0.1, 0.2, 0.4]
    results: dict[float, list[float]] = {}
    print(f"{'cores':>6} {'msg/s':>8} {'CPU-s used / quota':>19} {'msg per CPU-s':>14} {'vs reference core':>18}")
    for cores in quotas:
        for _ in range(args.repeats):
            m = measure(echo=lambda line: None, node_cores=cores, judged=False)
            used = m.node_cpu_s / m.measured_s
            results.setdefault(cores, []).append(m.msg_s_per_core)
            print(f"{cores:>6g} {m.msg_s:>8,.0f} {used / cores:>19.3f} {m.msg_s_per_core:>14,.0f} "
                  f"{m.msg_s_per_core / REFERENCE_MSG_S_PER_CORE:>18.2f}", flush=True)
    print("small_quota=" + ",".join(f"{c:g}:{sum(v) / len(v):.0f}" for c, v in results.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
