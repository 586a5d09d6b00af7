"""Pure pieces of the Spark plumbing: spark-submit argv, the --py-files zip, object chunking, schema alignment,
the partitioned put of a derived table."""

from __future__ import annotations

import sys
import zipfile

import pyarrow as pa
import pytest

from adapters.objectstore import StoreSpec
from sizing.contract import records
from spark_jobs.lib import submit
from spark_jobs.lib.s3source import align_to_schema, chunk_keys, put_partitions


def test_spark_submit_command_for_the_analysis(tmp_path):
    args = submit.job_arguments("analysis", spec="campaigns/local-quick.yaml", campaign="local-quick",
                                configs=["n1-c5.2xlarge-gp2", "n3-c5.2xlarge-gp2"], run_ids=["R1"])
    assert args == ["--spec", "campaigns/local-quick.yaml", "--campaign", "local-quick", "--config",
                    "n1-c5.2xlarge-gp2", "--config", "n3-c5.2xlarge-gp2", "--run-id", "R1"]
    argv = submit.command("analysis", args, master="local[2]", py_files=tmp_path / "z.zip",
                          spark_submit="/venv/bin/spark-submit")
    assert argv[:3] == ["/venv/bin/spark-submit", "--master", "local[2]"]
    assert argv[argv.index("--py-files") + 1] == str(tmp_path / "z.zip")
    assert argv[-len(args) - 1].endswith("spark_jobs/jobs/analysis.py") and argv[-len(args):] == args
    validate = submit.job_arguments("validate", spec="s.yaml", campaign="c", configs=["k"], run_ids=["R1"],
                                    batch="raw")
    assert validate[:2] == ["--batch", "raw"] and validate[-4:] == ["--config", "k", "--run-id", "R1"]


def test_the_analysis_job_refuses_bad_arguments_before_its_session_starts(monkeypatch, capsys):
    from spark_jobs.jobs import analysis

    sessions: list[str] = []
    monkeypatch.setattr(analysis, "get_session", lambda name: sessions.append(name))  # a spy: was one started?
    spec = ["--spec", "campaigns/local-quick.yaml", "--campaign", "local-quick"]
    for argv, reason in (([*spec, "--config", "n1-c5.2xlarge-gp2"], "--config needs at least one --run-id"),
                         ([*spec, "--validate"], "--validate needs a --run-id")):
        with pytest.raises(SystemExit) as stopped:
            analysis.main(argv)
        assert stopped.value.code == 2 and reason in capsys.readouterr().err
    with pytest.raises(SystemExit, match="--config: campaign 'local-quick' has no config 'n9-nope'"):
        analysis.main([*spec, "--config", "n9-nope", "--run-id", "R1"])
    with pytest.raises(SystemExit, match="--campaign 'other'"):
        analysis.main(["--spec", "campaigns/local-quick.yaml", "--campaign", "other"])
    assert sessions == []


def test_py_files_zip_holds_both_packages_and_env_points_workers_at_the_venv(tmp_path):
    path = submit.py_files_zip(tmp_path / "jobs.zip")
    names = zipfile.ZipFile(path).namelist()
    assert "sizing/contract/records.py" in names and "spark_jobs/lib/phase_summary/summary.py" in names
    env = submit.environment({"SIZING_S3_ENDPOINT": "http://127.0.0.1:9"})
    assert env["PYSPARK_PYTHON"] == env["PYSPARK_DRIVER_PYTHON"] == sys.executable  # the venv's python
    assert env["SIZING_S3_ENDPOINT"] == "http://127.0.0.1:9" and str(submit.REPO) in env["PYTHONPATH"]


def test_chunking_keeps_every_key_once_in_order_and_each_directory_in_one_chunk():
    # Known answer: 37 directories of one object each split as evenly as 37 keys can be (16 chunks of 2 or 3).
    keys = [f"d{i:03d}/k.parquet" for i in range(37)]
    chunks = chunk_keys(keys, 16)
    assert len(chunks) == 16 and [k for c in chunks for k in c] == keys
    assert max(map(len, chunks)) - min(map(len, chunks)) <= 1
    assert chunk_keys(keys[:3], 16) == [[k] for k in keys[:3]] and chunk_keys([], 4) == []
    # Seed scale's shape: 315 phase directories of 8 worker objects. No directory is split between chunks (a
    # phase read by one task: the client fold's whole_directories), and the chunks stay within a directory of even.
    keys = [f"raw/run=r/client_seconds/phase={d:03d}/worker={w}.parquet" for d in range(315) for w in range(8)]
    chunks = chunk_keys(keys, 16)
    assert len(chunks) == 16 and [k for c in chunks for k in c] == keys
    homes = {}
    for number, chunk in enumerate(chunks):
        for key in chunk:
            homes.setdefault(key.rpartition("/")[0], set()).add(number)
    assert len(homes) == 315 and all(len(h) == 1 for h in homes.values())
    assert max(map(len, chunks)) - min(map(len, chunks)) <= 8
    # Fewer directories than partitions: one chunk per directory, however many objects each holds.
    assert [len(c) for c in chunk_keys(["a/1", "a/2", "a/3", "b/1"], 4)] == [3, 1]


def test_gathering_cuts_between_keys_only_unless_a_key_outgrows_the_bound():
    """gathered_whole: tables of at least `rows` rows, cut only where the key changes between two batches (known
    answer: the batches below, 3 rows each), and the flags say where a key was cut inside (the `most` bound)."""
    from spark_jobs.lib.s3source import gathered, gathered_whole

    def batch(phase: int, first: int) -> pa.RecordBatch:
        return pa.RecordBatch.from_pydict({"phase": [phase] * 3, "second": list(range(first, first + 3))})

    batches = [batch(1, 0), batch(1, 3), batch(1, 6), batch(2, 0), batch(2, 3), batch(3, 0)]
    got = [(t.column("phase").to_pylist(), opens, closes) for t, opens, closes in gathered_whole(iter(batches),
                                                                                                ["phase"], rows=4)]
    assert got == [([1] * 9, False, False), ([2] * 6, False, False), ([3] * 3, False, False)]
    # a bound of 6 rows: phase 1 cut inside after 6 rows, which both tables say
    got = [(t.num_rows, opens, closes) for t, opens, closes in gathered_whole(iter(batches), ["phase"], rows=4,
                                                                            most=6)]
    assert got == [(6, False, True), (3, True, False), (6, False, False), (3, False, False)]
    # without a key, every batch boundary is a cut, as gathered's tables of about `rows` rows
    assert [t.num_rows for t in gathered(iter(batches), rows=4)] == [6, 6, 6]


def test_a_read_of_few_objects_gets_few_partitions_and_a_large_one_spreads():
    from spark_jobs.lib.s3source import DEFAULT_PARTITIONS, MIN_OBJECTS_PER_PARTITION, read_partitions

    # one phases object per run of a 21-config campaign: one task, not 16 task start-ups
    assert read_partitions(21) == 1 and read_partitions(1) == 1 and read_partitions(0) == 1
    assert read_partitions(MIN_OBJECTS_PER_PARTITION + 1) == 2
    assert read_partitions(2520) == DEFAULT_PARTITIONS  # seed scale's client_seconds objects: capped


def test_alignment_casts_adds_missing_columns_as_nulls_and_drops_extras():
    schema = records.arrow_schema("accounting")
    table = pa.table({"campaign": ["c"], "lost": pa.array([3], pa.int32()), "extra": [1]})
    aligned = align_to_schema(table, schema)
    assert aligned.column_names == schema.names
    assert aligned.column("lost").type == pa.int64() and aligned.column("lost").to_pylist() == [3]
    assert aligned.column("config_id").null_count == 1


def test_store_spec_from_env_and_round_trip():
    s3 = StoreSpec.from_env({"SIZING_S3_ENDPOINT": "http://127.0.0.1:5000", "SIZING_S3_BUCKET": "b1"})
    assert (s3.kind, s3.bucket, s3.endpoint_url) == ("s3", "b1", "http://127.0.0.1:5000")
    assert StoreSpec.from_json(s3.to_json()) == s3
    local = StoreSpec.from_env({"SIZING_STORE_ROOT": "/tmp/x"})
    assert local.kind == "file" and local.uri("tables/t/") == "/tmp/x/tables/t"


def test_a_partitioned_put_replaces_exactly_the_partitions_written_and_leaves_nothing_when_a_put_fails(tmp_path):
    store = StoreSpec("file", "b", root=str(tmp_path)).open()

    def rows(configs: list[str], value: int) -> pa.Table:
        return pa.table({"campaign": ["c"] * len(configs), "config_id": configs, "v": [value] * len(configs)})

    def values(prefix: str) -> list[int]:
        return sorted(v for k in store.list(prefix) for v in store.read_parquet(k).column("v").to_pylist())

    by = ["campaign", "config_id"]
    put_partitions(store, "t", by, rows(["a", "b", "z"], 1))
    put_partitions(store, "t", by, rows(["a", "b"], 2), replace_prefixes=["tables/t/campaign=c/config=z/"])
    # a and b rewritten (one object each, the older ones gone); z cleared through replace_prefixes
    assert [len(store.list(f"tables/t/campaign=c/config={c}/")) for c in "abz"] == [1, 1, 0]
    assert values("tables/t/campaign=c/") == [2, 2]

    class FailingSecondPut:  # the store, except that its second put fails
        def __init__(self) -> None:
            self.puts = 0

        def __getattr__(self, name):
            return getattr(store, name)

        def put_parquet(self, key, table) -> None:
            self.puts += 1
            if self.puts == 2:
                raise OSError("disk full")
            store.put_parquet(key, table)

    with pytest.raises(OSError):
        put_partitions(FailingSecondPut(), "t", by, rows(["a", "b"], 3))
    assert values("tables/t/campaign=c/") == [2, 2]  # the first new object was taken back, the old ones stayed
