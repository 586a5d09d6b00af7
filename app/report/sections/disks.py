"""Disk layouts (issue 14): each config's volumes by role (sizing.resources.disks); on a local target, what its volumes
were: throttled filesystems of their own on the scale model, or directories of one filesystem, where disk types have no
effect."""

from __future__ import annotations

from typing import Any

from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.resources.disks import VOLUME_ROLES, placement, volume_label


def render(ctx: ReportContext) -> list[object]:
    """Each config's volumes by role; on a local target, what its volumes were (local_note)."""
    out: list[object] = [tag("h2", "Disk layouts", id="disks")]
    rows = []
    for plan in ctx.configs:
        holders = placement([v.role for v in plan.shape.dedicated])
        rows.append([plan.config_id] + [
            volume_label(next(v.volume for v in plan.shape.volumes if v.role == holders[role]))
            + ("" if holders[role] == role else " (on data)") for role in VOLUME_ROLES])
    out.append(table(["config", *VOLUME_ROLES], rows))
    if ctx.campaign.deployment == "local":
        out.append(tag("p", local_note(ctx.history.record), class_="note"))
    return out


def disks_throttled(record: dict[str, Any] | None) -> bool:
    """The run's volumes were throttled loop devices: its runs row says the machine enforced the disk envelope
    (adapters.envelope.enforcement: "enforced: cpu, disk, memory; missing: ...")."""
    enforced = str((record or {}).get("envelope_enforced") or "").split(";")[0]
    return enforced.startswith("enforced:") and "disk" in enforced.split(":", 1)[1].replace(" ", "").split(",")


def local_note(record: dict[str, Any] | None) -> str:
    """What a local target's volumes were in this run: throttled filesystems of their own (the scale model), or
    directories of one filesystem (scale model off, or a machine that cannot enforce it)."""
    if disks_throttled(record):
        return ("Local target on the scale model: each volume is its own filesystem on its own loop device, "
                "throttled to its type's IOPS and MB/s from the catalog, scaled (README \"The local scale model\"), "
                "so disk types and layouts differ here as the catalog's figures do, scaled; the sum over a node's "
                "volumes is not capped by its instance's EBS ceiling (the bottleneck rule checks it).")
    return ("Local target: each role with a volume of its own is a directory of its own on the machine's one "
            "filesystem, so disk types, sizes, IOPS and throughput have no effect on these results; only where "
            "RabbitMQ writes differs.")
