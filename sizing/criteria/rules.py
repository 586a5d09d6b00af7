"""Judgement rules: the one home of every threshold and predicate that turns measurements into verdicts.

The load generator (when it flags itself as behind), the Spark jobs (validity, matched target, capacity,
adverse holds) and the report (which scenarios are intensity ladders) import these; none keeps a copy. The rules in
words are in spark_jobs/README.md ("Rules").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol


class Fault(Protocol):
    """What the scenario rules read of a fault (sizing.campaign.FaultSpec is one): the rules stand below the campaign
    model, which takes its fault kinds from here, so they name the fields they read instead of importing it."""

    @property
    def kind(self) -> str: ...
    @property
    def phases(self) -> tuple[int, ...] | None: ...
    @property
    def at_fraction(self) -> float | None: ...
    @property
    def at_s(self) -> float | None: ...
    @property
    def heal_after_s(self) -> float | None: ...
    @property
    def params(self) -> Mapping[str, Any]: ...


class Scenario(Protocol):
    """What the scenario rules read of a scenario (sizing.campaign.Scenario is one)."""

    @property
    def search(self) -> object | None: ...
    @property
    def step_settings(self) -> Sequence[object] | None: ...
    @property
    def faults(self) -> Sequence[Fault]: ...
    @property
    def step_rates(self) -> Sequence[float] | None: ...
    @property
    def processing_ms(self) -> Sequence[object] | None: ...

# A phase matched its target when the achieved confirm and consume rates both reached this share of it.
MATCH_FRACTION = 0.98
# A capacity-search probe (sizing/criteria/search.py) passes only when confirm and consume rates reach this share of
# its target. Stricter than MATCH_FRACTION: a ladder step is judged after the fact on a 5k msg/s grid, but a
# probe decides a boundary to within a ~2 % resolution; a 2 % shortfall tolerance would let the bisection
# settle on a rate the cluster does not sustain. Its complement also bounds the backlog growth a passing
# probe may show (a consumer at 99.5 % of the target lets the backlog grow by at most 0.5 % of it).
PROBE_MATCH_FRACTION = 0.995
# A load-generator worker using at least this share of one core over a second is saturated: the generator,
# not the broker, may be what limits the phase. One threshold for the generator's own `worker_behind`
# events and for the analysis' validity rule.
WORKER_CPU_SATURATION = 0.95
# A worker whose send loop woke this much later than planned has fallen behind its schedule.
WORKER_TICK_LAG_S = 0.1


def worker_behind(cpu_s: float, tick_lag_s: float) -> bool:
    """The generator's own verdict on one worker-second: saturated CPU or a lagging send loop."""
    return cpu_s >= WORKER_CPU_SATURATION or tick_lag_s > WORKER_TICK_LAG_S


# ------------------------------------------------------------------------------ phase verdicts
# The predicates below are written with `&`, `|` and comparisons only, so one definition evaluates on plain
# values (bool/float), on pandas Series and on Spark Columns alike: the Spark jobs pass Columns
# (spark_jobs/lib/rules_columns.py adds only the null handling), tests and the report pass values.


def cpu_saturated(worker_cpu_max):
    """A worker used at least WORKER_CPU_SATURATION of a core over the steady window: the phase is invalid."""
    return worker_cpu_max >= WORKER_CPU_SATURATION


def invalid_checks(no_client_records, worker_cpu_max, worker_behind_events) -> dict:
    """Why the load generator's figures of a phase would not be conclusive, reason -> predicate, in the order
    phase_summary.invalid_reason lists them (values, pandas or Spark Columns). One home for the analysis
    (spark_jobs.lib.rules_columns.invalid_reason) and the online capacity search (loadgen.search.measure)."""
    return {"no_client_records": no_client_records,
            "loadgen_cpu_saturated": cpu_saturated(worker_cpu_max),
            "loadgen_behind": worker_behind_events > 0}


def phase_valid(no_client_records: bool, worker_cpu_max: float, worker_behind_events: int) -> bool:
    """The load generator kept up in the phase (on plain values): none of invalid_checks holds."""
    return not any(bool(v) for v in invalid_checks(no_client_records, worker_cpu_max, worker_behind_events).values())


def matched_target(confirm_rate, consume_rate, target_rate, e2e_p99_ms, slo_p99_ms):
    """The phase carried its target: confirm and consume rates >= MATCH_FRACTION of it, and p99 within the SLO.

    A figure of the phase, whatever its validity: whether the phase is evidence at all is `conclusive`."""
    need = target_rate * MATCH_FRACTION
    return (confirm_rate >= need) & (consume_rate >= need) & (e2e_p99_ms <= slo_p99_ms)


def judged_against_target(rate_mode):
    """A phase is judged against its target rate unless it ran in max mode (closed loop, issue 13): that has no
    target, its throughput is the measurement, and its validity is only "the generator was not the bottleneck"
    (cpu_saturated / worker_behind, as for every phase). `rate_mode` is sizing.campaign's RATE_SCHEDULED | RATE_MAX."""
    return rate_mode != "max"


def held_target(matched, lost):
    """A fault-scenario phase held: it matched its target and lost no confirmed message."""
    return matched & (lost == 0)


# --------------------------------------------------------------------- backlog scenarios (seed 002)
# "If we suffer a consumer slowdown, the publishing should continue unaffected" while the backlog absorbs the
# difference. The per-second figures behind the verdict (sizing/judgement/adverse.py computes them, phase_summary holds
# them): A second's publish rate is reduced when the messages confirmed over the REDUCED_PUBLISH_WINDOW_S seconds ending
# with it fall below MATCH_FRACTION of the messages the schedule offered over the same seconds (5 s, as the recovery
# rule smooths: one late confirm batch or a scheduler hiccup is not a reduced publish rate).
REDUCED_PUBLISH_WINDOW_S = 5
# The backlog has drained when it is back to at most this many seconds of the scenario's final offered rate (its
# base rate: what consumers keeping up hold in flight is far less; seed 002's backlogs were millions).
DRAINED_BACKLOG_S = 1.0


def publish_reduced(accepted, offered):
    """Over one window: the broker accepted (confirmed; published without confirms) less than MATCH_FRACTION of what
    the schedule offered."""
    return accepted < MATCH_FRACTION * offered


def backlog_held(reduced_publish_s, tolerance_s, lost, drained):
    """A backlog scenario (consumer slowdown, publish peak) held: publishers were reduced for at most the scenario's
    tolerance, nothing confirmed was lost, and the backlog drained before the end. End-to-end latency is reported,
    not judged: messages wait in a backlog by design."""
    return (reduced_publish_s <= tolerance_s) & (lost == 0) & drained


def conclusive(valid):
    """A phase is evidence about the broker only when the load generator kept up in it (phase_summary.valid, from
    invalid_checks). A phase it fell behind in is evidence neither way, matched or not: the generator may have
    failed to offer the load (blaming the broker for a miss) or stalled while a node was down and caught up later
    (crediting it with a fault it never carried at the target). One predicate for every verdict that reads phase
    rows: the leaderboards and capacity (counts_toward_capacity), the adverse verdicts (sizing.judgement.adverse.judge)
    and the findings (sizing.judgement.findings); `conclusive_row` applies it to one plain row."""
    return valid


def conclusive_row(row) -> bool:
    """`conclusive` on one plain row (a mapping with phase_summary's `valid`). The analysis always writes `valid`;
    a row without one (figures given from a study's published outcomes: no generator of ours ran) is taken as
    given."""
    valid = row.get("valid")
    if valid is None or valid != valid:  # None, or NaN from a pandas frame
        return True
    return bool(conclusive(bool(valid)))


def broker_blocked_publishers(blocked_s, tolerance_s):
    """The broker itself blocked the publishers (connection.blocked: its memory or disk alarm) for longer than a
    backlog scenario tolerates. Evidence that the scenario failed even in a run the generator fell behind in: a
    lagging generator cannot make the broker block it, and blocked publishers alone cost the generator no lag (a
    one-node adverse-local overload blocked them three times for 2-3 s with no worker_behind event, generator CPU
    0.05 s/s). The converse does not hold: a lagging run is never evidence that a scenario held."""
    return blocked_s > tolerance_s


def counts_toward_capacity(valid, e2e_p99_ms, slo_p99_ms):
    """The capacity predicate: a phase of a capacity scenario counts toward its config's top throughput when
    it is conclusive and its end-to-end p99 met the SLO. Its throughput is `carried_rate`. (Seed 000's own "top
    throughput" is at any latency: the conclusive phases alone, the leaderboard's top_throughput_any_latency.)"""
    return conclusive(valid) & (e2e_p99_ms <= slo_p99_ms)


def carried_rate(confirm_rate: float, consume_rate: float) -> float:
    """What a phase carried end to end: the lower of the achieved confirm and consume rates.
    (Spark: `F.least` of the same two columns, spark_jobs/lib/rules_columns.py.)"""
    return min(confirm_rate, consume_rate)


# ------------------------------------------------------------------------- scenario classification
CAPACITY = "capacity"  # step rates, no fault: the increasing-intensity test (seed 000); feeds the leaderboards
FAULT_ADVERSE = "fault"  # faults (kill, stop, restart, alarms): judged phases hold the target; recovery reported
BACKLOG_ADVERSE = "backlog"  # rate or processing profiles, no fault (seed 002's peaks and slowdowns): publishers
# must carry on unaffected while the backlog absorbs the difference (backlog_held)
SEARCH = "search"  # an adaptive capacity search (sizing/criteria/search.py): judged probe by probe with probe_passes
# Faults on the generator's side of the network: a condition the run is measured under (a known round-trip time,
# seed 003: adapters.latencyproxy), not an adversity the cluster must hold. They touch no node: any target runs them.
CLIENT_LATENCY = "client_latency"
GENERATOR_FAULTS = (CLIENT_LATENCY,)
CLIENT_SETTINGS = "client_settings"  # client-setting steps (seed 003): per-step figures, never a capacity verdict
ADVERSE_KINDS = (FAULT_ADVERSE, BACKLOG_ADVERSE)


def scenario_kind(scenario: Scenario) -> str:
    """How the analysis and the report treat a scenario (one classification for both)."""
    if scenario.search is not None:
        return SEARCH
    if scenario.step_settings:
        return CLIENT_SETTINGS
    if any(f.kind not in GENERATOR_FAULTS for f in scenario.faults):  # a known client RTT is a condition
        return FAULT_ADVERSE
    if scenario.step_rates is None or scenario.processing_ms:
        return BACKLOG_ADVERSE
    return CAPACITY


def client_rtt_ms(scenario: Scenario) -> float | None:
    """The round trip (to the broker + back, ms) a scenario's `client_latency` faults hold from its first second to
    its end; None without one, or when it is not one value throughout (healed, starting late, differing values)."""
    latency = [f for f in scenario.faults if f.kind == CLIENT_LATENCY]
    trips = {float(f.params.get("to_broker_ms", 0.0)) + float(f.params.get("to_client_ms", 0.0)) for f in latency}
    from_start = any((f.phases is None or 1 in f.phases) and not (f.at_s or f.at_fraction) for f in latency)
    if len(trips) != 1 or not from_start or any(f.heal_after_s is not None for f in latency):
        return None
    return trips.pop()


def window_ceiling(in_flight_limit, round_trip_s):
    """Little's law, the one home of every client window's ceiling: at most `in_flight_limit` messages outstanding,
    each outstanding `round_trip_s` on average, carry at most in_flight_limit / round_trip_s msg/s. Values, numpy
    arrays and Spark Columns alike; the callers keep a zero or missing trip out (no ceiling)."""
    return in_flight_limit / round_trip_s


def window_bound(confirms_in_flight: int, rtt_ms: float | None) -> float | None:
    """The publish rate (msg/s) a confirm window allows over a round trip (seed 003): at most w messages unconfirmed,
    each confirmed no sooner than one round trip after it was sent, so w / RTT (window_ceiling). None without
    confirms or a known RTT. An upper bound: the broker's service time adds to the trip, and its capacity caps the
    rate below it (publisher_window_ceiling uses the measured trip instead)."""
    if confirms_in_flight <= 0 or not rtt_ms:
        return None
    return window_ceiling(confirms_in_flight, rtt_ms / 1000)


def is_client_settings(scenario: Scenario) -> bool:
    """Client-setting steps (seed 003): reported per step with their latency basis, never a pass/fail verdict."""
    return scenario_kind(scenario) == CLIENT_SETTINGS


def is_intensity(scenario: Scenario) -> bool:
    """A capacity (increasing-intensity) scenario (seed 000)."""
    return scenario_kind(scenario) == CAPACITY


def is_adverse(scenario: Scenario) -> bool:
    """An adverse scenario (seed 002), judged by its own criterion (FAULT_ADVERSE or BACKLOG_ADVERSE); a search's
    failing probes and client-setting steps are their method, not a failure."""
    return scenario_kind(scenario) in ADVERSE_KINDS


def probe_passes(*, target_rate: float, confirm_rate: float, consume_rate: float, backlog_slope: float,
                 p99_ms: float, p999_ms: float | None, valid: bool, slo_p99_ms: float,
                 slo_p999_ms: float | None = None) -> bool:
    """Verdict on one capacity-search probe, from its measurement window (warm-up excluded).

    Passes when the phase is valid (the generator kept up), confirm and consume rates both reach
    PROBE_MATCH_FRACTION of the target, the backlog is not growing (slope, msg/s per s, at most the
    shortfall that fraction allows), and p99 (and p99.9 when the SLO names one) is within the SLO.
    The generator decides online with it; the analysis recomputes it from the raw records.
    """
    if slo_p999_ms is not None and p999_ms is None:
        return False
    return bool(probe_verdict(target_rate, confirm_rate, consume_rate, backlog_slope, p99_ms, p999_ms, bool(valid),
                              slo_p99_ms, slo_p999_ms))


def probe_verdict(target_rate, confirm_rate, consume_rate, backlog_slope, p99_ms, p999_ms, valid, slo_p99_ms,
                  slo_p999_ms=None):
    """probe_passes as one expression (`&` and comparisons: values, pandas and Spark Columns alike); the SLOs are
    plain numbers of the scenario. spark_jobs.lib.rules_columns.probe_passes applies it to phase_summary columns."""
    floor = PROBE_MATCH_FRACTION * target_rate
    verdict = (valid & (confirm_rate >= floor) & (consume_rate >= floor)
               & (backlog_slope <= (1.0 - PROBE_MATCH_FRACTION) * target_rate) & (p99_ms <= slo_p99_ms))
    return verdict if slo_p999_ms is None else verdict & (p999_ms <= slo_p999_ms)


# ------------------------------------------------------------------------------ bottleneck (issue 15)
# What limited a phase, from its node_seconds figures over the steady window (phase_summary's resource columns) and
# (issue 44) the clients' own ceilings. Checked in BOTTLENECK_ORDER, the first that holds names the phase; `none`
# means nothing was near a limit, so what capped the cluster was coordination (seed 000's conclusion for its top
# cluster):
#   generator         the load generator saturated (the phase is not valid): the broker's figures prove nothing
#   memory (alarm)    a memory/disk alarm is active: it blocks publishers outright, whatever else is near a limit
#   consumers         the consume rate reached NEAR_LIMIT of the consumers' processing ceiling (consumer_ceiling)
#                     and the target was not matched: a processing time is the scenario's own, set client-side, so a
#                     backlog (and the memory it fills) is its consequence, never its cause
#   cpu               the busiest node's mean CPU >= NODE_CPU_SATURATION of its cores; on a machine whose cores the
#                     nodes share with the generator (local), the machine's mean busy share >= NODE_CPU_SATURATION
#   memory            memory within NEAR_LIMIT of the high watermark, no alarm (yet). After cpu: a node at its CPU
#                     quota drains its queues slowly, so the memory it holds is the consequence; until the alarm
#                     fires nothing is blocked by it
#   disk              a volume of the busiest node (each by the role it holds: data, logs, wal, segments) writes at
#                     least NEAR_LIMIT of that volume's own limit (IOPS or MB/s; sizing.resources.catalog.volume_limits
# at its                     size), or the node's volumes together reach NEAR_LIMIT of the instance's EBS ceiling
#   network           the busiest node's traffic in either direction >= NEAR_LIMIT of the instance's bandwidth
#   consumer_prefetch the consume rate reached NEAR_LIMIT of the consumers' prefetch ceiling (prefetch_ceiling), the
#                     target was not matched, and the consumers fell behind what the publishers got confirmed (below
#                     MATCH_FRACTION of the confirm rate: a backlog grew). Consumers that keep up with publishers held
#                     by their own window wait for messages, not for slots, though the client cannot tell the two
#                     apart by the messages' intended times (late publishers' messages look as if they waited).
#                     After the node's resources: the refill trip it divides by includes the broker's delivery, so a
#                     broker at a resource limit empties the windows slowly too
#   publisher_window  the carried rate reached NEAR_LIMIT of the publishers' confirm-window ceiling
#                     (publisher_window_ceiling) and the target was not matched. Last: the confirm latency the ceiling
#                     divides by includes the broker's service time, so a broker at a resource limit fills the window
#                     too and is the cause; with no node near a limit, the window held the rate (a wider window or more
#                     publishers would have offered more)
# A limit that is unknown (local disks and networks, a catalog without the figure, a phase without confirms or
# without a processing time) never triggers its label.
NODE_CPU_SATURATION = 0.90
NEAR_LIMIT = 0.90
MEMORY_ALARM = "memory_alarm"  # the check that names `memory` before everything but the generator
BOTTLENECK_ORDER = ("generator", MEMORY_ALARM, "consumers", "cpu", "memory", "disk", "network", "consumer_prefetch",
                    "publisher_window")
BOTTLENECKS = ("generator", "memory", "consumers", "cpu", "disk", "network", "consumer_prefetch",
               "publisher_window")  # the labels
NO_BOTTLENECK = "none"
# The checks that need no node figures: those before `cpu` in the order (client figures and the broker's alarm
# decide). Memory near its watermark comes after cpu, so without node figures it would be a guess, as `none` is.
DECIDED_WITHOUT_NODES = ("generator", MEMORY_ALARM, "consumers")


def bottleneck_label(check: str) -> str:
    """The label a check of BOTTLENECK_ORDER names (the alarm is `memory`, as memory near its watermark is)."""
    return "memory" if check == MEMORY_ALARM else check


def generator_bound(valid):
    """The load generator, not the broker, limited the phase (it saturated or fell behind)."""
    return ~valid if not isinstance(valid, bool) else not valid


def memory_bound(alarm, mem_max_fraction):
    return alarm | (mem_max_fraction >= NEAR_LIMIT)


def cpu_bound(busiest_cpu_mean, machine_cpu_mean):
    return (busiest_cpu_mean >= NODE_CPU_SATURATION) | (machine_cpu_mean >= NODE_CPU_SATURATION)


def disk_bound(volume_load_share, ebs_load_share):
    """`volume_load_share`: the highest share of its own limit any volume wrote at (the larger of its IOPS and
    MB/s); `ebs_load_share`: the node's volumes together against the instance's EBS ceiling."""
    return (volume_load_share >= NEAR_LIMIT) | (ebs_load_share >= NEAR_LIMIT)


def network_bound(net_mbit_s, mbit_s_limit):
    return net_mbit_s >= NEAR_LIMIT * mbit_s_limit


def publisher_window_ceiling(publishers: float | None, confirms_in_flight: float | None,
                             confirm_mean_ms: float | None) -> float | None:
    """Issue 44: the publish rate the publishers' confirm windows allow, publishers x window_ceiling(confirms in
    flight, mean confirm latency), msg/s; None without confirms, publishers or a confirm latency.

    The *mean* confirm latency (send -> confirm, from the phase's merged histogram), not p50: Little's law, L = rate
    x W, holds for the mean time in the system W, and a right-skewed latency (the usual case) has a mean above its
    median, so p50 would overstate the ceiling. With the window full (L = the limit) the rate is the ceiling."""
    if not publishers or not confirms_in_flight or not confirm_mean_ms or publishers <= 0 \
            or confirms_in_flight <= 0 or confirm_mean_ms <= 0:
        return None
    return publishers * window_ceiling(confirms_in_flight, confirm_mean_ms / 1000)


def consumer_ceiling(consumers, processing_ms):
    """Issue 44: the consume rate consumers processing each message for `processing_ms` allow: a consumer handles
    one message at a time, window_ceiling(1, processing time) each, so consumers x 1000 / processing_ms msg/s.
    Values and numpy arrays (per second: the fold averages it over a phase's steady seconds, so a processing
    profile's ceiling is the mean of its seconds' ceilings); a 0 ms processing time is no ceiling (callers keep it
    out; numpy gives inf). The prefetch adds a bound of its own (prefetch_ceiling)."""
    return consumers * window_ceiling(1.0, processing_ms / 1000)


def prefetch_ceiling(consumers: float | None, prefetch: float | None, hold_mean_ms: float | None,
                     refill_mean_ms: float | None) -> float | None:
    """Issue 44: the consume rate the consumers' prefetch windows allow, consumers x window_ceiling(prefetch, a
    slot's trip), msg/s; None without consumers, a prefetch or a measured refill.

    A message holds one of its consumer's `prefetch` slots from the broker's delivery to the broker's receipt of its
    ack. The client measures the two parts of that trip: the hold, delivery -> ack sent (processing, the wait behind
    other messages, the ack interval), and the refill, the ack that freed the slot -> the delivery that took it (the
    ack's flight, the broker's turn, the delivery's flight; paired by tag, loadgen.drivers.ConsumerState
    .count_refills). A refill counts only where the message was waiting for the slot: one published after its slot
    was free timed the publishers, not the window, and a window never waited for has no ceiling here. Where every
    message waits (the consumers behind), the ceiling is the consume rate itself, by the same law; the trip's two
    parts say where its time went. Means, for Little's law (as
    publisher_window_ceiling)."""
    if not consumers or not prefetch or refill_mean_ms is None or consumers <= 0 or prefetch <= 0:
        return None
    trip_ms = (hold_mean_ms or 0.0) + refill_mean_ms
    return consumers * window_ceiling(prefetch, trip_ms / 1000) if trip_ms > 0 else None


def short_of_target(rate, target_rate):
    """The rate did not match its phase's target (MATCH_FRACTION); a max-mode phase (target 0) has none to match,
    so whatever bound it was short of more."""
    return (target_rate <= 0) | (rate < MATCH_FRACTION * target_rate)


def publisher_window_bound(carried, ceiling, target_rate):
    """The carried rate reached NEAR_LIMIT of the confirm-window ceiling and fell short of the target."""
    return (carried >= NEAR_LIMIT * ceiling) & short_of_target(carried, target_rate)


def consumer_prefetch_bound(consume_rate, confirm_rate, ceiling, target_rate):
    """The consume rate reached NEAR_LIMIT of the consumers' prefetch ceiling, fell short of the target, and fell
    behind the confirm rate (the consumers, not the publishers, held the rate)."""
    return ((consume_rate >= NEAR_LIMIT * ceiling) & short_of_target(consume_rate, target_rate)
            & (consume_rate < MATCH_FRACTION * confirm_rate))


def consumers_bound(consume_rate, ceiling, target_rate):
    """The consume rate reached NEAR_LIMIT of the consumers' processing ceiling and fell short of the target."""
    return (consume_rate >= NEAR_LIMIT * ceiling) & short_of_target(consume_rate, target_rate)


UNKNOWN_LIMIT = float("inf")  # an unknown limit: nothing is near it (Spark and pandas handle inf as well)


# phase_summary's columns the bottleneck reads, the one list (bottleneck_checks reads no other; run fixtures keep these)
BOTTLENECK_COLUMNS = ("valid", "broker_alarm", "broker_mem_max_fraction", "cpu_busiest_mean", "machine_cpu_busy_mean",
                      "volume_load_share", "ebs_load_share", "net_peak_mbit_s", "network_limit_mbit_s",
                      "resource_nodes", "target_rate", "confirm_rate", "consume_rate", "consumer_ceiling",
                      "prefetch_ceiling", "publisher_window_ceiling")


def bottleneck_checks(figure: Callable[[str], Any], limit: Callable[[str], Any], flag: Callable[[str], Any],
                      carried: Any) -> dict[str, Any]:
    """Each check of BOTTLENECK_ORDER over phase_summary's columns (BOTTLENECK_COLUMNS), the one home of which
    predicate reads which column: `figure`, `limit` and `flag` read a column as a number (missing: 0), a limit
    (missing: UNKNOWN_LIMIT) or a truth (missing: false), so the same checks run on plain values (bottleneck) and on
    Spark Columns (spark_jobs/lib/rules_columns.bottleneck)."""
    alarm, target = flag("broker_alarm"), figure("target_rate")
    consume, confirm = figure("consume_rate"), figure("confirm_rate")
    return {
        "generator": generator_bound(flag("valid")),
        MEMORY_ALARM: alarm,
        "consumers": consumers_bound(consume, limit("consumer_ceiling"), target),
        "cpu": cpu_bound(figure("cpu_busiest_mean"), figure("machine_cpu_busy_mean")),
        "memory": memory_bound(alarm, figure("broker_mem_max_fraction")),
        "disk": disk_bound(figure("volume_load_share"), figure("ebs_load_share")),
        "network": network_bound(figure("net_peak_mbit_s"), limit("network_limit_mbit_s")),
        "consumer_prefetch": consumer_prefetch_bound(consume, confirm, limit("prefetch_ceiling"), target),
        "publisher_window": publisher_window_bound(carried, limit("publisher_window_ceiling"), target),
    }


def bottleneck(*, valid: bool, alarm: bool, mem_max_fraction: float | None, busiest_cpu_mean: float | None,
               machine_cpu_mean: float | None, volume_load_share: float | None, ebs_load_share: float | None,
               net_mbit_s: float | None, mbit_s_limit: float | None, resources_seen: bool = True,
               target_rate: float = 0.0, carried: float | None = None, consume_rate: float | None = None,
               confirm_rate: float | None = None, publisher_window_ceiling: float | None = None,
               consumer_ceiling: float | None = None, prefetch_ceiling: float | None = None) -> str | None:
    """The label on plain values (None: no node figures, and no check of DECIDED_WITHOUT_NODES decides).

    The order (BOTTLENECK_ORDER) puts causes before their symptoms: the generator (nothing proves anything), an
    active memory alarm (it blocks publishers outright), the consumers' processing time (the scenario's own), then
    the node's resources, cpu before memory near its watermark (a node at its CPU quota holds the memory it cannot
    drain; no alarm, nothing blocked), and the clients' windows last, the consumers' prefetch then the publishers'
    confirm window (a slow broker fills both). A
    window named with no node near a limit may still owe its latency to the broker's coordination (what `none`
    names otherwise): the label says the window held the rate, not that a wider one would be carried.

    A missing figure is 0 and a missing limit UNKNOWN_LIMIT, so neither triggers (bottleneck_checks)."""
    figures: dict[str, Any] = {
        "valid": valid, "broker_alarm": alarm, "broker_mem_max_fraction": mem_max_fraction,
        "cpu_busiest_mean": busiest_cpu_mean, "machine_cpu_busy_mean": machine_cpu_mean,
        "volume_load_share": volume_load_share, "ebs_load_share": ebs_load_share, "net_peak_mbit_s": net_mbit_s,
        "network_limit_mbit_s": mbit_s_limit, "target_rate": target_rate, "confirm_rate": confirm_rate,
        "consume_rate": consume_rate, "consumer_ceiling": consumer_ceiling, "prefetch_ceiling": prefetch_ceiling,
        "publisher_window_ceiling": publisher_window_ceiling}
    checks = bottleneck_checks(
        figure=lambda name: 0.0 if figures[name] is None else figures[name],
        limit=lambda name: UNKNOWN_LIMIT if figures[name] is None else figures[name],
        flag=lambda name: bool(figures[name]), carried=0.0 if carried is None else carried)
    check = next((name for name in BOTTLENECK_ORDER if checks[name]), NO_BOTTLENECK)
    return bottleneck_label(check) if resources_seen or check in DECIDED_WITHOUT_NODES else None


def phase_bottleneck(row: Mapping[str, Any]) -> str | None:
    """bottleneck() on one phase_summary row (plain values, None for a missing figure): what the analysis wrote in
    the row's `bottleneck`, re-derived on the driver (sizing.judgement.seeds reads a run fixture with it)."""
    confirm, consume = row.get("confirm_rate"), row.get("consume_rate")
    return bottleneck(
        valid=bool(row.get("valid")), alarm=bool(row.get("broker_alarm")),
        mem_max_fraction=row.get("broker_mem_max_fraction"), busiest_cpu_mean=row.get("cpu_busiest_mean"),
        machine_cpu_mean=row.get("machine_cpu_busy_mean"), volume_load_share=row.get("volume_load_share"),
        ebs_load_share=row.get("ebs_load_share"), net_mbit_s=row.get("net_peak_mbit_s"),
        mbit_s_limit=row.get("network_limit_mbit_s"), resources_seen=bool(row.get("resource_nodes") or 0),
        target_rate=float(row.get("target_rate") or 0.0), carried=carried_rate(confirm or 0.0, consume or 0.0),
        consume_rate=consume, confirm_rate=confirm, publisher_window_ceiling=row.get("publisher_window_ceiling"),
        consumer_ceiling=row.get("consumer_ceiling"), prefetch_ceiling=row.get("prefetch_ceiling"))


def judged_group(foreground):
    """Issue 14: the SLO verdicts and the leaderboards judge a scenario's foreground workload group only; the other
    groups are background load, reported beside it. `foreground` is phase_summary's column (a row of a scenario
    without groups is its one group, so it is judged)."""
    return foreground == True  # noqa: E712 - a Spark Column or a pandas Series compares element-wise
