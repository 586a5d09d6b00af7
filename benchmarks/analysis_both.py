"""spark-submit application for `analysis_scale.py --one-submit`: phase_summary's main, then leaderboards' main,
in one driver (one JVM start-up, one SparkSession: get_session's getOrCreate returns the first job's session).

    spark-submit ... benchmarks/analysis_both.py PHASE_SUMMARY-ARGS... --next LEADERBOARDS-ARGS...

A benchmark driver, not a job: the orchestrator submits each job on its own (the jobs never import each other).
"""

from __future__ import annotations

import sys
import time

from spark_jobs import leaderboards, phase_summary


def main(argv: list[str]) -> int:
    cut = argv.index("--next")
    for name, job, args in (("phase_summary", phase_summary, argv[:cut]), ("leaderboards", leaderboards,
                                                                               argv[cut + 1:])):
        start = time.monotonic()
        code = job.main(args)
        print(f"{name} (in-driver): {time.monotonic() - start:.1f} s", flush=True)
        if code:
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
