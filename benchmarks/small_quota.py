"""The small-node penalty of the scale model (issue 44): broker work per CPU-second at several CPU quotas, CFS
periods and Erlang scheduler counts.

    flock /tmp/rabbit-heavy.lock .venv/bin/python benchmarks/small_quota.py            # 0.05, 0.1, 0.2, 0.4 cores
    flock /tmp/rabbit-heavy.lock .venv/bin/python benchmarks/small_quota.py --cores 0.1 --cores 0.4 --repeats 2
    flock /tmp/rabbit-heavy.lock .venv/bin/python benchmarks/small_quota.py --period-us 20000 --period-us 5000 \\
        --schedulers 0 --schedulers 1                                  # every quota x period x schedulers

Each point is the host calibration's reference measurement (loadgen/calibrate.py: one node, four quorum queues at
the maximum rate, messages confirmed per CPU-second of the node's cgroup) at another quota of this host's cores. A
node's broker work per CPU-second should not depend on its quota: where it falls at small quotas (the CFS period cut
into slices of 1-2 ms, two Erlang schedulers waking for slivers of time), a scaled small instance carries less than
its CPU share and the model, not the instance type, decides. `--period-us` (the envelope's CFS period; default the
scale model's CPU_PERIOD_US) and `--schedulers` (+S; 0: the VM's default, one per host core; default: the scale
model's rule, schedulers_for) measure the penalty against both. The last line is
`small_quota=<cores>/<period us>/<schedulers>:<msg per CPU-s>,..`.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loadgen.calibrate import measure
from sizing.resources.calibration import REFERENCE_MSG_S_PER_CORE
from sizing.resources.scalemodel import CPU_PERIOD_US


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cores", type=float, action="append", help="node quota in this host's cores (repeatable)")
    parser.add_argument("--period-us", type=int, action="append", help="CFS period in microseconds (repeatable)")
    parser.add_argument("--schedulers", type=int, action="append", help="Erlang schedulers, 0: default (repeatable)")
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    points = list(itertools.product(args.cores or [0.05, 0.1, 0.2, 0.4], args.period_us or [CPU_PERIOD_US],
                                    args.schedulers or [None]))
    results: dict[tuple[float, int, int | None], list[float]] = {}
    print(f"{'cores':>6} {'period us':>9} {'+S':>3} {'msg/s':>8} {'CPU-s used / quota':>19} {'msg per CPU-s':>14} "
          f"{'vs reference core':>18}")
    for _ in range(args.repeats):  # repeats interleaved, so a drift of the host's speed spreads over every point
        for cores, period_us, schedulers in points:
            m = measure(echo=lambda line: None, node_cores=cores, judged=False, period_us=period_us,
                        schedulers=schedulers)
            used = m.node_cpu_s / m.measured_s
            results.setdefault((cores, period_us, schedulers), []).append(m.msg_s_per_core)
            print(f"{cores:>6g} {period_us:>9} {_label(schedulers):>3} {m.msg_s:>8,.0f} {used / cores:>19.3f} "
                  f"{m.msg_s_per_core:>14,.0f} {m.msg_s_per_core / REFERENCE_MSG_S_PER_CORE:>18.2f}", flush=True)
    print("small_quota=" + ",".join(f"{c:g}/{p}/{_label(s)}:{sum(v) / len(v):.0f}" for (c, p, s), v in results.items()))
    return 0


def _label(schedulers: int | None) -> str:
    return "rule" if schedulers is None else str(schedulers or "-")


if __name__ == "__main__":
    raise SystemExit(main())
