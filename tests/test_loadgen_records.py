"""Recorder side: per-second histograms (1 % bound vs exact quantiles), merged accounting, the record files in
the exact sizing.contract.records schema, uploads to the S3-compatible store, management-API aggregation."""

from __future__ import annotations

import io
import math

import numpy as np
import pyarrow.parquet as pq
import pytest

from adapters.brokercounters import MessageCounts, counted_between
from loadgen import broker
from loadgen.accounting import PublisherBook, account, merge_consumed
from loadgen.drivers import hist_bytes
from loadgen.recorder import MissingColumnError, RecordStore, to_table
from sizing.campaign import QueueSpec
from sizing.contract import raw_layout, records
from sizing.contract.histogram import RELATIVE_ACCURACY, LogHistogram, merge_wire, quantile_from_counts
from sizing.contract.layout import RunKey

KEY = RunKey("camp", "n3-c5.2xlarge-gp2", "steps", "run-1", 2)


def exact_quantile(values: np.ndarray, q: float) -> float:
    ordered = np.sort(values)
    return float(ordered[max(1, math.ceil(q * len(ordered) - 1e-9)) - 1])


def test_per_second_worker_histograms_merge_to_quantiles_within_one_percent():
    rng = np.random.default_rng(7)
    # three workers x five seconds of latencies (us), a long tail, as the worker records them
    seconds = [rng.lognormal(mean=9, sigma=1.2, size=rng.integers(50, 3000)) for _ in range(15)]
    blobs = [hist_bytes(values)[0] for values in seconds]
    merged = merge_wire(blobs)
    everything = np.concatenate(seconds)
    assert merged.sum() == everything.size
    for q in (0.5, 0.75, 0.95, 0.99, 0.999, 1.0):
        exact = exact_quantile(everything, q)
        got = quantile_from_counts(merged, q)
        assert abs(got - exact) <= RELATIVE_ACCURACY * exact + 1e-9, (q, got, exact)
    max_us = hist_bytes(everything)[1]
    assert max_us == pytest.approx(everything.max())
    assert LogHistogram.from_bytes(b"").total == 0 and hist_bytes(np.zeros(0)) == (b"", 0.0)


def test_accounting_counts_loss_duplicates_redeliveries_and_reordering_per_phase():
    # two publishers, two phases; publisher 0 has seqs 0..5 (phase 1: 0..2), publisher 1 seqs 0..3 (phase 1: 0..1)
    books = [
        PublisherBook(0, 0, (0, 3, 6), published=6, state=np.array([1, 1, 1, 1, 1, 0], np.uint8)),
        PublisherBook(1, 6, (0, 2, 4), published=3, state=np.array([1, 2, 1, 0], np.uint8)),
    ]
    worker_a = np.zeros(10, np.uint8)
    worker_b = np.zeros(10, np.uint8)
    worker_a[[0, 1, 3, 6]] = 1  # pub0 seq 0,1,3 ; pub1 seq 0
    worker_b[[1, 4, 8]] = 1  # pub0 seq 1 again (duplicate across workers), pub0 seq 4, pub1 seq 2
    worker_a[3] += 1  # pub0 seq 3 consumed twice in one worker without the flag
    redelivered = np.array([2])  # pub0 seq 2 only ever seen redelivered: consumed, not lost
    reordered = np.array([4])
    fresh = merge_consumed([worker_a, worker_b], 10)
    rows = account(books, 2, fresh, redelivered, reordered)
    assert rows[0] == {"phase": 1, "published": 5, "confirmed": 4, "consumed_unique": 4, "lost": 0, "duplicates": 1,
                       "redelivered": 1, "reordered": 0}
    # phase 2: pub0 seq 3,4,5 (5 unconfirmed, never consumed: not lost), pub1 seq 2 (consumed), 3 (never sent)
    assert rows[1] == {"phase": 2, "published": 4, "confirmed": 3, "consumed_unique": 3, "lost": 0, "duplicates": 1,
                       "redelivered": 0, "reordered": 1}
    worker_a[0] = 0  # pub0 seq 0 now confirmed and never consumed
    rows = account(books, 2, merge_consumed([worker_a, worker_b], 10), redelivered, reordered)
    assert rows[0]["lost"] == 1


CLIENT_ROW = {"worker": 0, "second": 3, "ts": 1.0, "phase": 1, "warmup": False, "target_rate": 10.0, "scheduled": 10,
              "processing_ms": 0.0, "published": 10, "confirmed": 9, "nacked": 0, "returned": 0, "consumed": 10,
              "redelivered": 0, "foreign": 0, "acked": 10, "in_flight": 1, "publish_delay_max_us": 5.0,
              "publish_delay_hist": b"x",
              "e2e_hist": b"", "e2e_max_us": None, "confirm_hist": b"", "blocked_ms": 0.0, "cpu_s": 0.01,
              "publishers": 1, "consumers": 1, "rate_mode": "scheduled", "latency_basis": "intended",
              "confirms_in_flight": 100, "prefetch": 50, "multi_ack_every": 1, "in_flight_max": 3, "group": "main",
              "ack_hold_us": 1200, "ack_holds": 9, "refill_us": 30_000, "refills": 2}


def test_tables_have_the_exact_record_schema_and_the_run_key():
    row = {**CLIENT_ROW, "_foreign": 0}
    table = to_table("client_seconds", KEY, [row])
    assert table.schema.equals(records.arrow_schema("client_seconds"))
    assert table.column_names == records.column_names("client_seconds")
    assert table.to_pylist()[0]["repeat"] == 2 and table.to_pylist()[0]["run_id"] == "run-1"
    # every value as given: nothing was filled in (the known answer is the row itself)
    assert {k: v for k, v in table.to_pylist()[0].items() if k in CLIENT_ROW} == CLIENT_ROW


def test_a_row_without_a_column_is_an_error_not_a_null(tmp_path):
    """A producer that forgets a column (even a nullable one) fails loudly; a None it wrote stays a null."""
    for forgotten in ("group", "cpu_s"):
        rows = [CLIENT_ROW, {k: v for k, v in CLIENT_ROW.items() if k != forgotten}]
        with pytest.raises(MissingColumnError, match=rf"client_seconds row 1 lacks column\(s\) \['{forgotten}'\]"):
            to_table("client_seconds", KEY, rows)
    assert to_table("client_seconds", KEY, [{**CLIENT_ROW, "group": None}]).to_pylist()[0]["group"] is None
    with pytest.raises(MissingColumnError):
        RecordStore(KEY, tmp_path, upload=False).write_records("events", [{"ts": 1.0}])
    assert not any(tmp_path.iterdir())  # nothing written
    event = {"ts": 1.0, "second": 0.5, "phase": 0, "kind": "run_start", "fault_id": None, "fault_kind": None,
             "node": None, "detail": None}
    assert to_table("events", KEY, [event]).schema.equals(records.arrow_schema("events"))


def test_record_store_writes_locally_and_uploads_under_layout_keys(s3, tmp_path):
    store = RecordStore(KEY, tmp_path, upload=True, s3=s3)
    key = store.write_records("accounting", [{"phase": 1, "published": 3, "confirmed": 3, "consumed_unique": 3,
                                              "lost": 0, "duplicates": 0, "redelivered": 0, "reordered": 0,
                                              "group": "main"}])
    assert key == raw_layout.raw_part_key(KEY, "accounting")
    store.write_manifest({"status": "complete"})
    client = s3.client()
    body = client.get_object(Bucket=s3.bucket, Key=key)["Body"].read()
    assert pq.read_table(io.BytesIO(body)).to_pylist()[0]["consumed_unique"] == 3
    assert client.get_object(Bucket=s3.bucket, Key=raw_layout.manifest_key(KEY))["Body"].read().startswith(b"{")
    assert (tmp_path / key).exists() and store.errors == []


def test_raw_objects_are_written_as_every_object_is_histograms_zstd_and_plain_the_rest_lz4(tmp_path):
    """The generator's objects and the object store's (the synthetic benchmark records, the derived tables) are
    written one way, adapters.objectstore.parquet_options: read back from the file's own metadata."""
    from adapters.objectstore import LocalStore

    row = {**CLIENT_ROW, "publish_delay_hist": hist_bytes(np.array([1.0, 2.0]))[0],
           "e2e_hist": hist_bytes(np.array([3.0]))[0]}
    key = RecordStore(KEY, tmp_path, upload=False).write_records("client_seconds", [row] * 3, phase=1, worker=0)
    put = LocalStore(tmp_path / "store")
    put.put_parquet("t.parquet", to_table("client_seconds", KEY, [row] * 3))
    for data in ((tmp_path / key).read_bytes(), (tmp_path / "store" / "t.parquet").read_bytes()):
        group = pq.ParquetFile(io.BytesIO(data)).metadata.row_group(0)
        chunks = {group.column(i).path_in_schema: group.column(i) for i in range(group.num_columns)}
        for name in ("e2e_hist", "confirm_hist", "publish_delay_hist"):
            assert chunks[name].compression == "ZSTD" and "RLE_DICTIONARY" not in chunks[name].encodings
        for name in ("run_id", "second", "cpu_s"):
            assert chunks[name].compression == "LZ4" and "RLE_DICTIONARY" in chunks[name].encodings
        assert pq.read_table(io.BytesIO(data)).to_pylist()[2]["e2e_hist"] == row["e2e_hist"]


def test_a_failed_upload_is_reported_not_raised(tmp_path):
    from adapters.objectstore import S3Settings

    store = RecordStore(KEY, tmp_path, upload=True, s3=S3Settings(bucket="b", endpoint_url="http://127.0.0.1:9"))
    store.write_records("phases", [])
    assert (tmp_path / raw_layout.raw_part_key(KEY, "phases")).exists()
    assert len(store.errors) == 1


def test_broker_samples_aggregate_queues_by_leader_node():
    nodes = [{"name": "a", "running": True, "mem_used": 100, "mem_limit": 1000, "mem_alarm": False,
              "disk_free": 5000, "disk_free_alarm": False},
             {"name": "b", "running": True, "mem_used": 200, "mem_limit": 1000, "mem_alarm": True,
              "disk_free": 6000, "disk_free_alarm": False}]
    queues = [
        {"name": "q1", "leader": "a", "node": "a", "messages": 10, "messages_ready": 7, "messages_unacknowledged": 3},
        {"name": "q2", "leader": "a", "node": "a", "messages": 5, "messages_ready": 5, "messages_unacknowledged": 0},
        {"name": "q3", "node": "b", "messages": 1, "messages_ready": 0, "messages_unacknowledged": 1},
    ]
    rows = {r["node"]: r for r in broker.aggregate_sample(nodes, queues, ["a", "b", "c"])}
    assert rows["a"]["queue_messages"] == 15 and rows["a"]["queue_messages_ready"] == 12
    assert rows["b"]["mem_alarm"] and rows["b"]["queue_messages_unacked"] == 1
    assert rows["c"]["running"] is False and rows["c"]["mem_used_bytes"] is None  # down: no answer for it
    # Message counts and rates come from the exact counters (adapters.brokercounters), per node.
    earlier, now = MessageCounts(100, 90, 100, 80, 0, 70), MessageCounts(300, 290, 300, 230, 1, 220)
    rows["a"].update(broker.counter_fields(now, (10.0, earlier), 12.0))
    rows["b"].update(broker.counter_fields(now, None, 12.0))  # its first sample: no rate yet
    rows["c"].update(broker.counter_fields(None, (10.0, earlier), 12.0))  # no answer: nothing made up
    assert (rows["a"]["publish_rate"], rows["a"]["deliver_rate"], rows["a"]["messages_received"]) == (100.0, 75.0, 300)
    assert rows["b"]["publish_rate"] is None and rows["b"]["messages_acknowledged"] == 220
    assert rows["c"]["messages_received"] is None and rows["c"]["publish_rate"] is None
    restarted = broker.counter_fields(MessageCounts(5, 5, 5, 5, 0, 5), (10.0, earlier), 12.0)
    assert restarted["publish_rate"] is None and restarted["messages_received"] == 5  # counters reset: no rate
    table = to_table("broker_samples", KEY, [{"ts": 1.0, "second": 1.0, "phase": 1, **r} for r in rows.values()])
    assert table.schema.equals(records.arrow_schema("broker_samples"))


def test_the_runs_count_check_compares_exact_counts_with_the_generators():
    generator = {"published": 1000, "confirmed": 1000, "consumed": 1000}
    exact = MessageCounts(received=1000, confirmed=1000, routed=1000, delivered=1000, redelivered=0, acknowledged=1000)
    assert broker.count_check(exact, generator, acks=True)["agrees"] is True
    short = MessageCounts(received=1000, confirmed=1000, routed=1000, delivered=1000, redelivered=0, acknowledged=990)
    check = broker.count_check(short, generator, acks=True)
    assert check["agrees"] is False and check["differ"] == ["consumed 1000 != broker acknowledged 990"]
    assert broker.count_check(short, generator, acks=False)["agrees"] is True  # auto-ack: nothing is acknowledged
    unknown = broker.count_check(None, generator, acks=True, why_none="a node restarted")
    assert unknown["agrees"] is None and unknown["why"] == "a node restarted"


def test_cluster_counts_between_two_readings_are_none_across_a_restart():
    a1, a2 = MessageCounts(10, 10, 10, 10, 0, 10), MessageCounts(30, 30, 30, 30, 0, 30)
    b1, b2 = MessageCounts(5, 5, 5, 5, 0, 5), MessageCounts(6, 6, 6, 6, 0, 6)
    assert counted_between({"a": a1, "b": b1}, {"a": a2, "b": b2}) == MessageCounts(21, 21, 21, 21, 0, 21)
    assert counted_between({"a": a2, "b": b1}, {"a": a1, "b": b2}) is None  # a's counters went back: restarted
    assert counted_between({"a": a1}, {"a": a2, "b": b2}) is None


def test_queue_declaration_arguments_and_mirroring_policy():
    quorum = QueueSpec(2, "q-{n}", "quorum", True, {"x-quorum-initial-group-size": 3})
    assert broker.queue_arguments(quorum) == {"x-quorum-initial-group-size": 3, "x-queue-type": "quorum"}
    assert broker.policy_request(quorum) is None
    stream = QueueSpec(1, "s-{n}", "stream", True, {"x-max-length-bytes": 10**9})
    assert broker.queue_arguments(stream)["x-queue-type"] == "stream"
    mirrored = QueueSpec(2, "perf.test-{n}", "mirrored", True, {},
                         {"ha-mode": "exactly", "ha-params": 2, "ha-sync-mode": "manual"})
    _name, body = broker.policy_request(mirrored)
    assert body["pattern"] == r"^(perf\.test\-1|perf\.test\-2)$"
    assert body["definition"] == {"ha-mode": "exactly", "ha-params": 2, "ha-sync-mode": "manual"}
    assert body["apply-to"] == "queues" and broker.queue_arguments(mirrored)["x-queue-type"] == "classic"
