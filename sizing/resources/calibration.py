"""Host calibration: how much broker work one core of this host does, so that a scaled vCPU means the same on any host.

Hosts of one machine kind differ about 2x in CPU speed, and a CFS quota is a share of *this* host's core: at a fixed
quota a slower host is a smaller node, and every local figure moves with the machine it ran on (issue 44). The
calibration is one short reference measurement (REFERENCE: a fixed workload on one RabbitMQ node in a fixed envelope,
the load generator in its own), taken once per host (`sizing calibrate`; adapters/calibration.py runs it and stores
it with the host's fingerprint). Its answer, the messages per second one core of this host carries through the broker,
divided by REFERENCE_MSG_S_PER_CORE, is the host's `speed`; the scale model then gives every node
`vCPUs x cpu_cores_per_vcpu / speed` cores of this host (sizing.resources.scalemodel), i.e. `cpu_cores_per_vcpu` is in
*reference cores*: a core of the reference host.

The reference host is the slower kind of this machine (BENCHMARKS.md "Host calibration"), so that on every host the
calibrated envelopes are at most what they were before calibration and still fit two cores; a faster host gives its
nodes proportionally less of its own time.

Pure: what the measurement is and what its answer means; adapters/calibration.py measures and stores.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

# One reference core carries this many messages per second of the reference workload through the broker (the slower
# host of this machine kind, measured with `sizing calibrate`: BENCHMARKS.md "Host calibration").
REFERENCE_MSG_S_PER_CORE = 14_000.0
# The reference node's CPU envelope, in this host's cores: small enough that the node, not the load generator,
# binds on the fastest host seen, large enough that the CFS period's rounding is negligible (5 ms of every 20 ms).
REFERENCE_NODE_CORES = 0.25
# The measurement: seconds of warm-up, then seconds measured, of one max-rate (closed-loop) phase.
REFERENCE_WARMUP_S = 5
REFERENCE_MEASURE_S = 20
# A host whose speed is outside this range is refused as a calibration: the measurement went wrong (a node that
# never got its quota, a generator that could not keep up), not the CPU.
SPEED_RANGE = (0.2, 5.0)
# A stored calibration older than this is measured again when it is needed: a host's neighbours change. Measured:
# one host drifted 20 % within an hour, another read 1.61 at 05:33 and 1.09-1.15 at 09:15 in the same boot, and the
# demo's cross-host gap came mostly from envelopes sized at a calibration hours old (BENCHMARKS.md "The demo on two
# hosts"). An hour costs one 45-s measurement per hour of runs.
MAX_AGE_S = 3600
# Everything but the reference node may use at most this many cores while it is measured: the load generator
# needs about 0.3 (its ~45 us of CPU per message at ~6,000 msg/s), an idle demo stack about 0.1-0.2. What else runs
# on the other core can slow this one (shared caches, memory bandwidth), which no cgroup weight prevents, so a busy
# machine's calibration is refused. (The host itself also drifts: on one host the same quiet measurement read 28,200
# msg/s per CPU-second at 13:20 and 22,700 at 14:45, BENCHMARKS.md "Host calibration": MAX_AGE_S bounds how long one
# is trusted, and every run records the calibration it used.)
MAX_REST_CORES = 0.8


def reference_spec(name: str = "calibration") -> dict[str, Any]:
    """The reference workload as a campaign (sizing.campaign): seed 003's single-node shape at a CPU-bound mix, four
    quorum queues of 1 KiB persistent messages, publishers with 200 confirms in flight, consumers with prefetch 200 and
    multi-ack 20, at the maximum rate the node carries (closed loop: no target to miss)."""
    return {
        "name": name, "description": "host calibration: broker work per core of this host",
        "deployment": "local", "catalog": "aws-us-east-1-2020",
        "target": {"rate": 1000, "p99_latency_ms": 5000},
        "workload": {
            "queues": {"count": 4, "name_pattern": "calibration-{n}", "type": "quorum"},
            "message": {"size_bytes": 1024, "persistent": True},
            "publishers": {"count": 4, "confirms_in_flight": 200, "random_start_delay_s": 0},
            "consumers": {"count": 4, "prefetch": 200, "multi_ack_every": 20, "processing_ms": 0},
        },
        "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
        "scale_model": "off",
        "scenarios": [{"name": "reference", "warmup_s": REFERENCE_WARMUP_S,
                       "steps": {"sequence": [{"confirms_in_flight": 200}], "rate": "max",
                                 "duration_s": REFERENCE_WARMUP_S + REFERENCE_MEASURE_S}}],
    }


def host_fingerprint(cpuinfo: str, nproc: int, kernel: str, boot_id: str) -> str:
    """What identifies the host a calibration was measured on. A virtual CPU's model name is often generic
    ("Intel Xeon Processor"), so the boot id is part of it: a new boot may be another host, and is measured again."""
    model = cpu_model(cpuinfo)
    flags = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("flags")), "")
    digest = hashlib.sha256("\n".join([model, flags, str(nproc), kernel, boot_id]).encode()).hexdigest()
    return digest[:16]


def cpu_model(cpuinfo: str) -> str:
    return next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")),
                "unknown CPU")


@dataclass(frozen=True)
class HostCalibration:
    """One host's reference measurement. `msg_s` is what the node carried (confirmed by the broker, per second, over
    the measured seconds) at `node_cores` of this host; `node_cpu_s` the CPU the node's cgroup was charged over them
    (the OS's own counter), so `msg_s_per_core` is broker work per core actually used, not per quota."""

    fingerprint: str
    cpu_model: str
    cores: int
    measured_at: float
    node_cores: float
    measured_s: float
    messages: int
    node_cpu_s: float
    # CPU-seconds the rest of the machine (the load generator included) used over the same seconds (/proc/stat):
    # a busy machine makes a core do less, so a calibration taken on one is refused (MAX_REST_CORES). None: not read.
    rest_cpu_s: float | None = None

    @property
    def msg_s(self) -> float:
        return self.messages / self.measured_s if self.measured_s > 0 else 0.0

    @property
    def msg_s_per_core(self) -> float:
        """Broker work per core of this host: messages per CPU-second the node's cgroup was charged."""
        return self.messages / self.node_cpu_s if self.node_cpu_s > 0 else 0.0

    @property
    def speed(self) -> float:
        """This host's core in reference cores (2.0: a core here does twice the reference core's broker work)."""
        return self.msg_s_per_core / REFERENCE_MSG_S_PER_CORE

    def problems(self) -> list[str]:
        """Why this measurement cannot calibrate anything (empty: it can)."""
        out = []
        if self.messages <= 0 or self.node_cpu_s <= 0:
            out.append(f"the reference run carried {self.messages} messages on {self.node_cpu_s:.2f} CPU-s")
        elif not SPEED_RANGE[0] <= self.speed <= SPEED_RANGE[1]:
            out.append(f"speed {self.speed:.2f} is outside {SPEED_RANGE[0]:g}-{SPEED_RANGE[1]:g} reference cores "
                       f"per core ({self.msg_s_per_core:,.0f} msg/s per CPU-second against the reference's "
                       f"{REFERENCE_MSG_S_PER_CORE:,.0f})")
        # The node must have used its quota: otherwise something else (the generator, the disk) bound the run, and
        # msg/s per CPU-second still holds but the host was not shown to be CPU-bound at the reference's shape.
        elif self.node_cpu_s < 0.8 * self.node_cores * self.measured_s:
            out.append(f"the node used {self.node_cpu_s / self.measured_s:.3f} of its {self.node_cores:g} cores: "
                       "something other than its CPU bound the reference run")
        elif self.rest_cpu_s is not None and self.rest_cpu_s > MAX_REST_CORES * self.measured_s:
            rest = self.rest_cpu_s / self.measured_s
            out.append(f"the rest of the machine used {rest:.2f} cores while the node was measured (at most "
                       f"{MAX_REST_CORES:g}: the load generator's share and an idle stack): a busy machine makes a "
                       "core do less; calibrate on a quiet machine (stop other work)")
        return out

    def describe(self) -> str:
        """How a figure names the host calibration it was measured with."""
        return (f"host calibration {self.fingerprint}: 1 core = {self.speed:.2f} reference cores "
                f"({self.msg_s_per_core:,.0f} msg/s per core, {self.cpu_model}, {self.cores} cores)")

    def fresh(self, now: float) -> bool:
        return now - self.measured_at <= MAX_AGE_S

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "speed": self.speed, "msg_s_per_core": self.msg_s_per_core}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> HostCalibration:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})
