"""Scale benchmark of the analysis: synthetic campaign -> the analysis job (phase_summary, leaderboards), local[2]
or a Spark standalone cluster.

    python benchmarks/analysis_scale.py --records 1512000      # seed scale (21 x 15 x 600 s x 8 workers)
    python benchmarks/analysis_scale.py --records 1512000 --master both   # local[2], then a standalone cluster

Generates `--records` worker-second rows for the 21 configs x 15 intensities of quorum-sizing-2020
(8 workers per run, phase length = records / 2520 s; see spark_jobs/tools/synthetic.py for the modelling) and the
node_seconds rows of every node of each config (3 to 9 nodes: one row per node per second), then times the
analysis job end to end as the DAG's `analysis` task runs it (one spark-submit over every config, JVM start
included; the job prints its steps' times). Generation is not timed; `--store-dir DIR` keeps the generated store in DIR
and reuses it when it is already there. The store is a local directory by default (`--store s3` uses a moto
server on 127.0.0.1, which holds every object in its own memory). Last line:
`analysis_seconds=<s> cpu_seconds=<s> machine_busy_seconds=<s> records=<n> node_records=<n>` (cpu: the
submit's rusage, which misses Spark's Python worker daemons; machine busy: /proc/stat over the jobs).

`--master standalone` starts a Spark standalone cluster on this machine (adapters/sparkstandalone.py: master and
one worker from pyspark's launcher, a clean environment, the worker offering the same 2 cores as local[2]) and
submits to it; `--master both` runs local[2] then the cluster on the same store in one invocation and ends with
`standalone_seconds=<s> local_seconds=<s> ratio=<standalone/local>`.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from adapters import nodestats  # noqa: E402
from adapters.objectstore import StoreSpec  # noqa: E402
from adapters.sparkstandalone import StandaloneCluster  # noqa: E402
from spark_jobs.lib import submit  # noqa: E402
from spark_jobs.tools.synthetic import campaign_models, run_objects, write_objects  # noqa: E402

SPEC = REPO / "campaigns" / "quorum-sizing-2020.yaml"
WORKERS, PHASES, CONFIGS = 8, 15, 21


def _machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine (/proc/stat): unlike the rusage of waited-for children, this sees the
    Python worker daemons Spark starts (they are not reaped into the submit's rusage). On a quiet machine it is
    the analysis' cost; on a shared one an upper bound."""
    return nodestats.read_machine_cpu().busy_s


def _children_cpu_s() -> float:
    """User + system CPU of every waited-for child process tree (the spark-submit JVM and its Python workers):
    on a shared machine the wall time says how busy the machine was, this says what the analysis cost."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, required=True, help="worker-second rows to generate")
    parser.add_argument("--store", choices=["file", "s3"], default="file")
    parser.add_argument("--driver-memory", default="3g")
    parser.add_argument("--keep", action="store_true", help="keep the generated store")
    parser.add_argument("--store-dir", type=Path, help="local store directory to keep and reuse (file store)")
    parser.add_argument("--validate", action="store_true",
                        help="with the GX gates the DAG's task runs (each config's raw batch and table, the campaign)")
    parser.add_argument("--master", choices=["local", "standalone", "both"], default="local",
                        help="local[2], a Spark standalone cluster with 2 cores, or both in this order")
    parser.add_argument("--executor-memory", default="3g", help="standalone: the executor's heap")
    args = parser.parse_args()

    duration = max(10, round(args.records / (CONFIGS * PHASES * WORKERS)))
    work = Path(tempfile.mkdtemp(prefix="analysis_scale_"))
    env = dict(os.environ)
    server = None
    if args.store == "file":
        env["SIZING_STORE_ROOT"] = str(args.store_dir.resolve() if args.store_dir else work / "store")
    else:
        from moto.server import ThreadedMotoServer

        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0)
        server.start()
        host, port = server.get_host_and_port()
        env.update(SIZING_S3_ENDPOINT=f"http://{host}:{port}", SIZING_S3_BUCKET="analysis-scale",
                   AWS_ACCESS_KEY_ID=env.get("AWS_ACCESS_KEY_ID", "bench"),
                   AWS_SECRET_ACCESS_KEY=env.get("AWS_SECRET_ACCESS_KEY", "bench"), AWS_DEFAULT_REGION="us-east-1")
    os.environ.update(env)
    spec = StoreSpec.from_env(env)
    if spec.kind == "s3":
        from adapters.objectstore import S3Settings

        S3Settings.from_env(env).ensure_bucket()
    try:
        t0 = time.monotonic()
        store = spec.open()
        models = campaign_models(str(SPEC), "bench", "increasing-intensity", duration, WORKERS)
        records = len(models) * PHASES * duration * WORKERS
        node_records = sum(m.nodes for m in models) * PHASES * duration
        marker = args.store_dir / f"generated-{records}.done" if args.store_dir else None
        if marker is not None and marker.exists():
            print(f"reusing the store in {args.store_dir} ({marker.name})", flush=True)
        else:
            written = 0
            for model in models:
                written += write_objects(store, run_objects(model))
            assert written == records, (written, records)
            if marker is not None:
                marker.write_text("")
            print(f"generated {records} worker-second rows ({len(models)} configs x {PHASES} phases x {duration} s x "
                  f"{WORKERS} workers) and {node_records} node-second rows in {time.monotonic() - t0:.1f} s",
                  flush=True)

        py_files = submit.py_files_zip(work / "sizing_jobs.zip")
        job_args = submit.job_arguments("analysis", spec=str(SPEC), campaign=models[0].key.campaign,
                                        configs=[m.key.config_id for m in models], run_ids=["bench"])
        if args.validate:
            job_args += ["--validate", "--docs-dir", str(work / "gx_docs")]
        timings = {}
        for master in (["local", "standalone"] if args.master == "both" else [args.master]):
            if master == "standalone":
                cluster = StandaloneCluster(work / "spark-standalone", master_port=24750, master_ui_port=24751,
                                            worker_ui_port=24752, cores=2, memory="4g").start()
                conf = {"spark.executor.memory": args.executor_memory, "spark.pyspark.python": cluster.python}
                if spec.kind == "s3":  # the worker's environment is clean: the moto server's test credentials
                    conf.update({f"spark.executorEnv.{k}": v for k, v in env.items() if k.startswith("AWS_")})
                url = cluster.master_url
            else:
                cluster, conf, url = None, {}, "local[2]"
            try:
                argv = submit.command("analysis", job_args, master=url, py_files=py_files,
                                      driver_memory=args.driver_memory,
                                      conf={"spark.sql.shuffle.partitions": "4", **conf})
                print(f"{url}: load average {os.getloadavg()[0]:.1f} before the job", flush=True)
                start, cpu_start, busy_start = time.monotonic(), _children_cpu_s(), _machine_busy_s()
                result = submit.run(argv, env)
                elapsed, cpu = time.monotonic() - start, _children_cpu_s() - cpu_start
                busy = _machine_busy_s() - busy_start
            finally:
                if cluster is not None:
                    cluster.stop()
            print(f"analysis on {url}: {elapsed:.1f} s, {cpu:.1f} CPU-s (rusage), machine busy {busy:.1f} CPU-s, "
                  f"load average {os.getloadavg()[0]:.1f} at the end (exit {result.returncode})", flush=True)
            if result.returncode != 0:
                return result.returncode
            print(f"analysis_seconds={elapsed:.1f} cpu_seconds={cpu:.1f} machine_busy_seconds={busy:.1f} "
                  f"records={records} node_records={node_records} master={master}", flush=True)
            timings[master] = elapsed
        if len(timings) == 2:
            print(f"standalone_seconds={timings['standalone']:.1f} local_seconds={timings['local']:.1f} "
                  f"ratio={timings['standalone'] / timings['local']:.2f}")
        return 0
    finally:
        if server is not None:
            server.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)  # --store-dir lives elsewhere and stays


if __name__ == "__main__":
    sys.exit(main())
