"""Per-message accounting: the file each worker leaves after the drain, and the merge into ACCOUNTING rows.

Both sides of the file format live here (`save` in the worker, `load_books` in the runner): one .npz per worker
with its fresh-delivery counts per message (flat index = publisher offset + sequence number), the keys of
redelivered and reordered deliveries, and each of its publishers' confirm state per sequence number.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

# Confirm state of a sequence number a max-mode publisher never sent (its unused ceiling credit at the end of a
# phase: loadgen.drivers); 0 unknown, 1 confirmed, 2 nacked.
SKIPPED = 3


@dataclass(frozen=True)
class PublisherBook:
    """What the runner knows about one publisher after the drain."""

    index: int
    offset: int  # start of its slice in the flat per-message arrays
    phase_first_seq: tuple[int, ...]  # len = phases + 1 (see BatchSchedule.phase_first_seq)
    published: int  # sequence numbers [0, published) were sent
    state: np.ndarray  # per sequence number: 0 unknown, 1 confirmed, 2 nacked


@dataclass(frozen=True)
class PublisherLayout:
    """Where a publisher's messages sit in the flat arrays and which phase each belongs to (known before the run)."""

    index: int
    offset: int
    phase_first_seq: tuple[int, ...]


@dataclass(frozen=True)
class WorkerBooks:
    """One worker's accounting arrays."""

    fresh_counts: np.ndarray  # uint8 per flat message index: fresh (not redelivered) deliveries
    redelivered: np.ndarray  # int64 flat keys, one per redelivery
    reordered: np.ndarray  # int64 flat keys, one per delivery seen after a newer one of its publisher
    published: Mapping[int, int]  # publisher index -> sequence numbers sent
    states: Mapping[int, np.ndarray]  # publisher index -> confirm state per sequence number


def save(path: str, books: WorkerBooks) -> str:
    arrays: dict[str, np.ndarray] = {
        "fresh_counts": books.fresh_counts, "redelivered": books.redelivered, "reordered": books.reordered,
        "publishers": np.array(list(books.published), dtype=np.int64),
        "published": np.array(list(books.published.values()), dtype=np.int64),
    }
    for index, state in books.states.items():
        arrays[f"state_{index}"] = state
    np.savez(path, **arrays)
    return path


def load(path: str) -> WorkerBooks:
    with np.load(path) as data:
        indexes = data["publishers"].tolist()
        return WorkerBooks(data["fresh_counts"], data["redelivered"], data["reordered"],
                           dict(zip(indexes, data["published"].tolist(), strict=True)),
                           {index: data[f"state_{index}"] for index in indexes})


def worker_path(out_dir: str, worker: int) -> str:
    return os.path.join(out_dir, f"accounting-worker-{worker}.npz")


def merge_by_group(paths: Iterable[str], layouts: Sequence[PublisherLayout], size: int, phases: int,
                   group_of: Mapping[int, str]) -> list[dict[str, int | str]]:
    """ACCOUNTING rows (without the run key) from every worker's file, per workload group (issue 14): `group_of`
    maps publisher ids to their group's name (a scenario without groups: all to the one implicit group)."""
    books, _phases, fresh, redelivered, reordered = _books(paths, layouts, size, phases)
    rows: list[dict[str, int | str]] = []
    for name in dict.fromkeys(group_of.values()):
        own = [b for b in books if group_of.get(b.index) == name]
        rows.extend({**row, "group": name} for row in account(own, phases, fresh, redelivered, reordered))
    return rows


def _books(paths: Iterable[str], layouts: Sequence[PublisherLayout], size: int, phases: int
           ) -> tuple[list[PublisherBook], int, np.ndarray, np.ndarray, np.ndarray]:
    fresh, redelivered, reordered = [], [], []
    published: dict[int, int] = {}
    states: dict[int, np.ndarray] = {}
    for path in paths:
        books = load(path)
        fresh.append(books.fresh_counts)
        redelivered.append(books.redelivered)
        reordered.append(books.reordered)
        published.update(books.published)
        states.update(books.states)
    publisher_books = [PublisherBook(p.index, p.offset, p.phase_first_seq, published.get(p.index, 0),
                                     states.get(p.index, np.zeros(p.phase_first_seq[-1], dtype=np.uint8)))
                       for p in layouts]
    return publisher_books, phases, merge_consumed(fresh, size), _concat(redelivered), _concat(reordered)


def _concat(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0, np.int64)


def merge_consumed(fresh_counts: Sequence[np.ndarray], size: int) -> np.ndarray:
    """Fresh (not redelivered) deliveries per message, summed over workers (uint16: no overflow in practice)."""
    total = np.zeros(size, dtype=np.uint16)
    for counts in fresh_counts:
        total[:min(size, counts.size)] += counts[:size].astype(np.uint16)
    return total


def account(publishers: Sequence[PublisherBook], phases: int, fresh: np.ndarray,
            redelivered_keys: np.ndarray, reordered_keys: np.ndarray) -> list[dict[str, int]]:
    """ACCOUNTING rows (without the run key): one per phase, messages attributed by intended send time.

    lost = confirmed and never delivered (neither fresh nor redelivered); duplicates = fresh deliveries beyond
    the first of a message (a redelivery flagged as such is not a duplicate); reordered = deliveries a consumer
    saw after a newer message of the same publisher on the same queue.
    """
    size = fresh.size
    seen = fresh > 0
    if redelivered_keys.size:
        seen[redelivered_keys[redelivered_keys < size]] = True
    redelivered_count = np.bincount(redelivered_keys, minlength=size)[:size] if redelivered_keys.size else None
    reordered_count = np.bincount(reordered_keys, minlength=size)[:size] if reordered_keys.size else None
    rows = [{"phase": p + 1, "published": 0, "confirmed": 0, "consumed_unique": 0, "lost": 0, "duplicates": 0,
             "redelivered": 0, "reordered": 0} for p in range(phases)]
    for book in publishers:
        for p in range(phases):
            lo, hi = book.phase_first_seq[p], book.phase_first_seq[p + 1]
            if hi <= lo:
                continue
            row = rows[p]
            state = book.state[lo:hi]
            a, b = book.offset + lo, book.offset + hi
            seen_slice = seen[a:b]
            confirmed = state == 1
            sent_hi = max(lo, min(book.published, hi))
            row["published"] += sent_hi - lo - int(np.count_nonzero(book.state[lo:sent_hi] == SKIPPED))
            row["confirmed"] += int(np.count_nonzero(confirmed))
            row["consumed_unique"] += int(np.count_nonzero(seen_slice))
            row["lost"] += int(np.count_nonzero(confirmed & ~seen_slice))
            row["duplicates"] += int(np.maximum(fresh[a:b].astype(np.int64) - 1, 0).sum())
            if redelivered_count is not None:
                row["redelivered"] += int(redelivered_count[a:b].sum())
            if reordered_count is not None:
                row["reordered"] += int(reordered_count[a:b].sum())
    return rows
