"""The record sink: every client_seconds row, event, broker sample and node second of a run, by phase; ONE
flush path.

A phase's records are written (and uploaded) once every worker has reported its last second; anything that
arrives for a phase already written (a late event, a sample, the stop's partial second) marks it dirty and is
rewritten by `flush_dirty` at the end. Phase 0 (the drain after the timeline, run-level events) is always
rewritten at the end. Thread-safe: the fault injector and the broker sampler add from their own threads.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

from loadgen.recorder import RecordStore

RECORD_TYPES = ("client_seconds", "events", "broker_samples", "node_seconds")


class RecordSink:
    def __init__(self, store: RecordStore, workers: int) -> None:
        self.store = store
        self.workers = workers
        self.lock = threading.Lock()
        self.rows: dict[tuple[int, int], list[dict[str, Any]]] = defaultdict(list)  # (phase, worker) -> rows
        self.events: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.samples: dict[int, list[dict[str, Any]]] = defaultdict(list)
        self.node_rows: dict[int, list[dict[str, Any]]] = defaultdict(list)  # node_seconds, by phase
        self.written: set[int] = set()
        self.dirty: set[tuple[str, int]] = set()

    def _added(self, record_type: str, phase: int) -> None:
        if phase in self.written or phase == 0:
            self.dirty.add((record_type, phase))

    def add_row(self, worker: int, row: dict[str, Any]) -> None:
        with self.lock:
            self.rows[(row["phase"], worker)].append(row)
            self._added("client_seconds", row["phase"])

    def add_event(self, event: dict[str, Any]) -> None:
        phase = int(event.get("phase") or 0)
        with self.lock:
            self.events[phase].append(event)
            self._added("events", phase)

    def add_sample(self, sample: dict[str, Any]) -> None:
        with self.lock:
            self.samples[sample["phase"]].append(sample)
            self._added("broker_samples", sample["phase"])

    def add_node_second(self, row: dict[str, Any]) -> None:
        with self.lock:
            self.node_rows[row["phase"]].append(row)
            self._added("node_seconds", row["phase"])

    def has_rows(self, phase: int) -> bool:
        return any(self.rows.get((phase, w)) for w in range(self.workers))

    def flush_phase(self, phase: int) -> None:
        """Write every record type of a phase (a phase is written at least once, even if empty)."""
        for record_type in RECORD_TYPES:
            self.flush(record_type, phase)
        self.written.add(phase)

    def flush_dirty(self) -> None:
        """At the end: rewrite what changed after its phase was written, and phase 0."""
        pending = self.dirty | {(record_type, 0) for record_type in RECORD_TYPES}
        for record_type, phase in sorted(pending):
            if phase == 0 or phase in self.written:
                self.flush(record_type, phase)

    def flush(self, record_type: str, phase: int) -> None:
        """The one write path: a snapshot under the lock, then Parquet (+ upload) outside it."""
        with self.lock:
            self.dirty.discard((record_type, phase))
            if record_type == "client_seconds":
                per_worker = {w: sorted(self.rows.get((phase, w), []), key=lambda r: r["second"])
                              for w in range(self.workers)}
            elif record_type == "events":
                rows = sorted(self.events.get(phase, []), key=lambda e: e["second"])
            else:
                source = self.node_rows if record_type == "node_seconds" else self.samples
                rows = sorted(source.get(phase, []), key=lambda s: (s["second"], s["node"]))
        if record_type == "client_seconds":
            for worker, worker_rows in per_worker.items():
                if worker_rows or phase != 0:  # drain seconds only for workers that had any
                    self.store.write_records(record_type, worker_rows, phase=phase, worker=worker)
        else:
            self.store.write_records(record_type, rows, phase=phase)
