"""The client drivers: what a publisher and a consumer do, above a `loadgen.protocol.Link` (no sockets here).

`PublisherState` has two rate modes, chosen per phase: `scheduled` (open loop: it publishes, in batches,
everything the schedule has made due) and `max` (closed loop: it sends whenever its confirm window has room,
again as soon as a confirm frees it, and stamps each message with its actual send time, so end-to-end latency
has basis `sent`; the phase's rate ramp is only a ceiling that sizes the sequence space and caps publishing
without confirms). It tracks confirms per sequence number in both modes. `ConsumerState` accounts for
deliveries (latency, fresh / redelivered / reordered keys) and simulates processing time before acking with
`multiple`. `SecondStats`
holds the counters and latency samples of the second in progress, which the worker turns into one
`client_seconds` row. A new rate mode or workload group is a new driver of the `loadgen.protocol.Driver`
protocol; the pika IO loop (`loadgen.client`) does not change.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import deque

import numpy as np

from loadgen.accounting import SKIPPED  # max mode does not carry unsent ceiling credit into the next phase
from loadgen.messages import WorkerConfig
from loadgen.protocol import DeliveryFields, DriverHost, Link
from loadgen.schedule import BatchSchedule, ConsumerPlan, PublisherPlan
from sizing.campaign import RATE_MAX
from sizing.contract.histogram import MAX_BUCKET, LogHistogram, buckets_of
from sizing.planning.timeline import Phase

MAX_TX_BUFFER = 4 << 20  # stop feeding a connection whose socket is not draining (the broker is slow)
MAX_BATCH = 2000  # messages one publisher sends per tick, so one publisher cannot starve the others
CHUNK = 8192  # intended send times computed per numpy call
IDLE_ACK_FLUSH_S = 1.0  # ack processed deliveries held back by multi-ack when no more arrive


class SecondStats:
    """Counters and latency samples of the second in progress (one per worker)."""

    COUNTERS = ("published", "confirmed", "nacked", "returned", "consumed", "redelivered", "acked", "foreign",
                "ack_hold_us", "ack_holds", "refill_us", "refills")  # the last four: a prefetch slot's trip

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        for name in self.COUNTERS:
            setattr(self, name, 0)
        self.e2e_us: list[int] = []  # intended send time -> delivery, one int per delivery
        self.confirm_parts: list[np.ndarray] = []  # send -> confirm, seconds, per ack frame
        self.confirm_single: list[float] = []
        self.delay_parts: list[tuple[float, np.ndarray]] = []  # (send time, intended times) per publish batch
        self.blocked_ms = 0.0
        self.tick_lag_max_s = 0.0


def hist_bytes(values_us: np.ndarray) -> tuple[bytes, float]:
    if values_us.size == 0:
        return b"", 0.0
    hist = LogHistogram()
    hist.counts += np.bincount(buckets_of(values_us), minlength=MAX_BUCKET + 1)
    return hist.to_bytes(), float(values_us.max())


def seconds_to_us(parts: list[np.ndarray], singles: list[float] | None = None) -> np.ndarray:
    arrays = list(parts)
    if singles:
        arrays.append(np.asarray(singles, dtype=np.float64))
    if not arrays:
        return np.zeros(0)
    return np.concatenate(arrays) * 1e6


class PublisherState:
    def __init__(self, plan: PublisherPlan, cfg: WorkerConfig, worker: DriverHost) -> None:
        self.plan = plan
        self.worker = worker
        self.schedule = BatchSchedule(cfg.timeline, plan.share, plan.start_s)
        self.total = self.schedule.total
        self.limit = cfg.workload.publishers.confirms_in_flight
        self.confirms = self.limit > 0  # fixed for the run: sizing.campaign.live_change_problems
        self.mandatory = cfg.workload.publishers.mandatory
        self.state = np.zeros(max(self.total, 1), dtype=np.uint8)  # 0 unknown, 1 confirmed, 2 nacked, 3 SKIPPED
        # The window may change at step boundaries: the send-time ring covers the largest one of the run.
        widest = max([self.limit, *(p.settings.confirms_in_flight for p in cfg.timeline.phases if p.settings)])
        ring = 1 << max(4, math.ceil(math.log2(max(widest, 1) + 1)))
        self.sent_at = np.zeros(ring, dtype=np.float64)  # send time by seq & mask (only in-flight ones matter)
        self.mask = ring - 1
        self.next_seq = 0
        self.low = 0  # lowest sequence number that may still be unresolved on the current channel
        self.tag_base = 0  # delivery tag t on the current channel is sequence number tag_base + t - 1
        self.tag_skips: list[tuple[int, int]] = []  # ... plus the max-mode skips before it (apply_phase)
        self.in_flight = 0
        self.due = np.zeros(0)  # intended send times of [due_base, due_base + len)
        self.due_list: list[float] = []
        self.due_us: list[int] = []
        self.next_due_s = 0.0
        self.due_base = 0
        self.counted_until = 0  # sequence numbers already added to the per-second schedule counts
        self.link: Link | None = None
        self.ready = False
        self.blocked_since: float | None = None
        self.node = plan.node
        self.max_mode = False
        self.max_first = self.max_end = 0
        self.max_start_s = self.max_until_s = self.max_rate = 0.0
        self.skipped = 0  # sequence numbers marked SKIPPED (next_seq - skipped = messages sent)
        self.phase_first_seq = self.schedule.phase_first_seq()
        self.in_flight_peak = 0  # highest unconfirmed count since the last row (the window check)

    # -- what the worker asks of a publisher (its row, its books, connection.blocked)
    @property
    def sent_total(self) -> int:
        """Messages actually sent (sequence numbers taken less those skipped in max mode)."""
        return self.next_seq - self.skipped

    def lateness_s(self, now_s: float) -> float:
        """How late its next scheduled message is now (0: nothing overdue, or max mode: no schedule)."""
        i = self.next_seq - self.due_base
        if self.max_mode or self.next_seq >= self.total or i >= len(self.due) or self.due[i] >= now_s:
            return 0.0
        return now_s - float(self.due[i])

    def books(self) -> tuple[int, np.ndarray]:
        """Sequence numbers taken and each one's state, for the accounting (loadgen.accounting.WorkerBooks)."""
        return self.next_seq, self.state[:self.total]

    def set_blocked(self, blocked: bool, now_s: float, second_start_s: float) -> float:
        """connection.blocked / unblocked from the broker; the blocked milliseconds that fall in the current second
        (from `second_start_s`) when it ends (0 otherwise)."""
        if blocked:
            if self.blocked_since is None:
                self.blocked_since = now_s
            return 0.0
        if self.blocked_since is None:
            return 0.0
        ms = (now_s - max(self.blocked_since, second_start_s)) * 1000
        self.blocked_since = None
        return ms

    def blocked_ms_in(self, second_start_s: float, end_s: float) -> float:
        """The part of [second_start_s, end_s) it has been blocked, still blocked now (0 if not blocked)."""
        if self.blocked_since is None:
            return 0.0
        return max(0.0, end_s - max(self.blocked_since, second_start_s)) * 1000

    def apply_phase(self, phase: Phase) -> None:
        """Step boundary: the phase's confirm window and rate mode take effect now (a live change)."""
        if phase.settings is not None and self.confirms:
            self.limit = phase.settings.confirms_in_flight
        was_max, self.max_mode = self.max_mode, phase.rate_mode == RATE_MAX
        k = phase.number - 1
        first = self.phase_first_seq[k]
        if was_max and self.next_seq < first:
            # Max mode's unused ceiling credit is not carried into the next phase (accounting attributes messages
            # to phases by sequence number). The broker's delivery tags stay consecutive across the skip.
            next_tag = self.next_seq - self.tag_base - sum(n for _tag, n in self.tag_skips) + 1
            self.tag_skips.append((next_tag, first - self.next_seq))
            self.state[self.next_seq:first] = SKIPPED
            self.skipped += first - self.next_seq
            self.next_seq = first
            if not self.max_mode:  # back to a schedule: its intended times from `first` on
                self.due, self.due_base = np.zeros(0), first
                self.ensure_due(phase.start_s + 1.0)
        # Max mode's ceiling as arithmetic (no intended-time arrays: the sender lags the ceiling far behind).
        self.max_first, self.max_end = first, self.phase_first_seq[k + 1]
        self.max_start_s = max(phase.start_s, self.plan.start_s)
        self.max_until_s = phase.end_s  # max mode stops at the phase end (a drain publishes nothing)
        self.max_rate = phase.rate.v0 * self.plan.share

    def publish_max(self, now_s: float, stats: SecondStats) -> None:
        """Closed loop: fill the confirm window (no window: up to the ceiling, the stated cap); the body carries
        the actual send time, so end-to-end latency has basis `sent`."""
        if not self.ready or self.blocked_since is not None or now_s >= self.max_until_s:
            return
        link = self.link
        if link is None or link.backlog_bytes() > MAX_TX_BUFFER:
            return
        seq = self.next_seq
        ceiling = min(self.max_first + int((now_s - self.max_start_s) * self.max_rate), self.max_end)
        n = min(ceiling - seq, MAX_BATCH)
        if self.confirms:
            n = min(n, self.limit - self.in_flight)
        if n <= 0:
            return
        link.publish_batch(self.worker.nonce, self.plan.index, seq, [int(now_s * 1e6)] * n)
        self.sent(seq, n, now_s)
        stats.published += n

    def sent(self, seq: int, n: int, now_s: float) -> None:
        if self.confirms:
            first = seq & self.mask
            if first + n <= len(self.sent_at):
                self.sent_at[first:first + n] = now_s
            else:
                self.sent_at[(np.arange(seq, seq + n) & self.mask)] = now_s
            self.in_flight += n
            if self.in_flight > self.in_flight_peak:
                self.in_flight_peak = self.in_flight
        self.next_seq = seq + n

    # -- schedule
    def ensure_due(self, until_s: float) -> None:
        """Compute intended send times ahead of `until_s`, counting them into the worker's schedule row."""
        while self.due_base + len(self.due) < self.total and (len(self.due) == 0 or self.due[-1] <= until_s):
            keep_from = self.next_seq - self.due_base
            start = self.due_base + len(self.due)
            fresh = self.schedule.due_times(start, CHUNK)
            self.worker.add_scheduled(fresh)
            self.due = np.concatenate([self.due[keep_from:], fresh]) if keep_from < len(self.due) else fresh
            self.due_base = start - (len(self.due) - len(fresh))
            # Python copies for the per-tick path: bisect and list slices cost far less than numpy calls
            # on the 1-10 messages a publisher typically has due per tick.
            self.due_list = self.due.tolist()
            self.due_us = (self.due * 1e6).astype(np.int64).tolist()
        self.next_due_s = self.due_list[self.next_seq - self.due_base] if self.next_seq < self.total else math.inf

    def publish_due(self, now_s: float, stats: SecondStats) -> None:
        if self.max_mode:
            self.publish_max(now_s, stats)
            return
        if now_s < self.next_due_s or not self.ready or self.blocked_since is not None:
            return
        link = self.link
        if link is None or link.backlog_bytes() > MAX_TX_BUFFER:
            return
        if self.due_list[-1] <= now_s:
            self.ensure_due(now_s)
        seq = self.next_seq
        i = seq - self.due_base
        n = min(bisect_right(self.due_list, now_s, i) - i, MAX_BATCH)
        if self.confirms:
            n = min(n, self.limit - self.in_flight)
        if n <= 0:
            return
        link.publish_batch(self.worker.nonce, self.plan.index, seq, self.due_us[i:i + n])
        self.sent(seq, n, now_s)
        self.next_due_s = self.due_list[i + n] if i + n < len(self.due_list) else (
            math.inf if self.next_seq >= self.total else now_s)
        stats.published += n
        stats.delay_parts.append((now_s, self.due[i:i + n]))  # a view; lateness computed once per second

    # -- confirms (called from the connection's frame loop)
    def on_confirm(self, tag: int, multiple: int, positive: bool) -> None:
        worker = self.worker
        stats = worker.stats
        now = worker.now_s()
        value = 1 if positive else 2
        hi = self.tag_base + tag  # exclusive
        if self.tag_skips:
            hi += sum(k for first_tag, k in self.tag_skips if tag >= first_tag)
        if hi > self.next_seq:
            return  # a tag we never sent on this channel: ignore rather than corrupt the bookkeeping
        if multiple:
            lo = self.low
            seg = self.state[lo:hi]
            fresh = seg == 0
            count = int(np.count_nonzero(fresh))
            if count:
                seg[fresh] = value
                if positive:
                    seq = np.flatnonzero(fresh) + lo
                    stats.confirm_parts.append(now - self.sent_at[seq & self.mask])
            self.low = max(lo, hi)
        else:
            s = hi - 1
            if s < self.low or self.state[s]:
                return
            self.state[s] = value
            count = 1
            if positive:
                stats.confirm_single.append(now - float(self.sent_at[s & self.mask]))
            if s == self.low:
                self.low += 1
        while self.low < self.next_seq and self.state[self.low]:
            self.low += 1
        self.in_flight -= count
        if positive:
            stats.confirmed += count
        else:
            stats.nacked += count
        if self.max_mode:  # closed loop: refill the window now, not at the next tick
            self.publish_max(now, stats)

    def on_open(self, link: Link) -> None:
        self.link = link
        self.channel_reset()

    def channel_reset(self) -> None:
        """A new channel: delivery tags restart at 1; in-flight messages of the old one stay unknown."""
        self.tag_base = self.next_seq
        self.tag_skips: list[tuple[int, int]] = []  # (first delivery tag after a max-mode skip, seqs skipped)
        self.low = self.next_seq
        self.in_flight = 0


class ConsumerState:
    def __init__(self, plan: ConsumerPlan, cfg: WorkerConfig, worker: DriverHost) -> None:
        self.plan = plan
        self.worker = worker
        self.prefetch = cfg.workload.consumers.prefetch
        self.multi_ack = cfg.workload.consumers.multi_ack_every
        self.auto_ack = cfg.workload.consumers.auto_ack
        self.last_seq = [-1] * (len(cfg.offsets) - 1)  # per publisher: newest sequence number seen on this queue
        self.link: Link | None = None
        self.ready = False
        self.node = plan.node
        self.channel_reset()

    def on_open(self, link: Link) -> None:
        self.link = link
        self.channel_reset()

    def apply_phase(self, phase: Phase) -> None:
        """Step boundary: the ack interval applies from the next ack; a new prefetch needs a re-subscribe
        (`Link.set_prefetch`), because RabbitMQ applies a per-consumer basic.qos to new consumers only."""
        settings = phase.settings
        if settings is None:
            return
        self.multi_ack = settings.multi_ack_every
        if settings.prefetch != self.prefetch:
            self.prefetch = settings.prefetch
            if self.link is not None and self.ready:
                self.link.set_prefetch(settings.prefetch)

    def channel_reset(self) -> None:
        self.delivered = 0  # last delivery tag received (tags are consecutive on one channel)
        self.processed = 0  # deliveries whose simulated processing has finished
        self.acked = 0
        self.busy_until = 0.0
        self.segments: list[list[float]] = []  # [first_tag_exclusive, last_tag, start_s, per_message_s]
        self.last_progress = 0.0
        # A prefetch slot's trip, in two parts (sizing.criteria.rules.prefetch_ceiling): the hold of each delivery
        # until its ack (arrivals: one (last tag, time) per read's batch), and the refill, from the ack that freed a
        # slot to the delivery that took it (acks_sent: (tag, time us) of each ack, kept while a delivery may pair
        # with it).
        self.arrivals: deque[tuple[int, float]] = deque()
        self.acks_sent: deque[tuple[int, int]] = deque()

    def on_deliveries(self, deliveries: list[DeliveryFields]) -> None:
        """One read's deliveries (`loadgen.frames.Delivery` fields): latency, per-message accounting, acks."""
        worker = self.worker
        stats = worker.stats
        now_us = worker.now_us()
        nonce, offsets = worker.nonce, worker.offsets
        n_pub = len(offsets) - 1
        e2e = stats.e2e_us
        fresh_keys, redelivered_keys, reordered_keys = worker.fresh_keys, worker.redelivered_keys, worker.reordered_keys
        last = self.last_seq
        redelivered = foreign = 0
        for _channel, _tag, red, msg_nonce, pub, seq, intended in deliveries:
            if msg_nonce != nonce or pub >= n_pub or pub < 0:
                foreign += 1
                continue
            e2e.append(now_us - intended)
            key = offsets[pub] + seq
            if red:
                redelivered += 1
                redelivered_keys.append(key)
            else:
                fresh_keys.append(key)
                if seq < last[pub]:
                    reordered_keys.append(key)
                else:
                    last[pub] = seq
        stats.consumed += len(deliveries)
        stats.redelivered += redelivered
        stats.foreign += foreign
        if self.prefetch > 0 and not self.auto_ack:
            self.count_refills(deliveries, now_us)
        self.after_batch(deliveries[-1][1], now_us / 1e6, worker.processing_s)

    def count_refills(self, deliveries: list[DeliveryFields], now_us: int) -> None:
        """The refill part of each slot's trip: the broker sends delivery n only once it has the ack of n - prefetch
        (one consumer per channel, tags consecutive), so n's arrival minus the sending of the first ack covering
        n - prefetch is an ack's flight, the broker's turn and a delivery's flight, where n's message was already
        waiting. Paired by tag, not by the client's view of the window, which deliveries still in flight (or one
        refill split over several reads) hide. A message intended after that ack was sent did not wait for the slot
        (the window had room; the gap timed the publishers): it is not counted."""
        acks, nonce, freed_by = self.acks_sent, self.worker.nonce, self.prefetch
        total_us = count = 0
        for _channel, tag, _red, msg_nonce, _pub, _seq, intended in deliveries:
            freed = tag - freed_by
            if freed <= 0 or msg_nonce != nonce:
                continue
            while acks and acks[0][0] < freed:
                acks.popleft()
            if acks and intended <= acks[0][1]:
                total_us += now_us - acks[0][1]
                count += 1
        stats = self.worker.stats
        stats.refill_us += total_us
        stats.refills += count

    def after_batch(self, last_tag: int, now_s: float, processing_s: float) -> None:
        count = last_tag - self.delivered
        if count <= 0:
            return
        if self.auto_ack:
            self.worker.stats.acked += count
            self.delivered = self.processed = self.acked = last_tag
            return
        if processing_s <= 0 and not self.segments:
            self.processed = last_tag
        else:
            # One message at a time, each taking processing_s: finish times are arithmetic, so a whole batch is
            # one segment and no timer per message is needed.
            start = max(now_s, self.busy_until)
            self.busy_until = start + count * processing_s
            self.segments.append([self.delivered, last_tag, start, processing_s])
        self.arrivals.append((last_tag, now_s))
        self.delivered = last_tag
        self.last_progress = now_s
        self.maybe_ack(now_s)

    def advance(self, now_s: float) -> None:
        while self.segments:
            lo, hi, start, per = self.segments[0]
            done = hi if per <= 0 else min(hi, lo + int((now_s - start) / per))
            if done > self.processed:
                self.processed = int(done)
                self.last_progress = now_s
            if done < hi:
                break
            self.segments.pop(0)
        self.maybe_ack(now_s)

    def maybe_ack(self, now_s: float, force: bool = False) -> None:
        pending = self.processed - self.acked
        if pending <= 0 or self.link is None or not self.ready:
            return
        n = self.multi_ack
        if pending >= n:
            tag = self.acked + (pending // n) * n
        elif force or now_s - self.last_progress > IDLE_ACK_FLUSH_S:
            tag = self.processed
        else:
            return
        self.link.ack(tag, True)
        stats = self.worker.stats
        if self.prefetch > 0:
            self.acks_sent.append((tag, int(now_s * 1e6)))
        self._count_holds(tag, now_s, stats)
        stats.acked += tag - self.acked
        self.acked = tag

    def _count_holds(self, tag: int, now_s: float, stats: SecondStats) -> None:
        """Each delivery up to `tag`, acked now: its time since it arrived, added to the second's ack_hold_us."""
        first, held_s, count = self.acked, 0.0, 0
        while self.arrivals and first < tag:
            last, arrived = self.arrivals[0]
            upto = min(last, tag)
            held_s += (upto - first) * (now_s - arrived)
            count += upto - first
            first = upto
            if last > tag:
                break
            self.arrivals.popleft()
        stats.ack_hold_us += int(held_s * 1e6)
        stats.ack_holds += count
