"""Disk layouts (issue 14): each config's volumes by role (sizing.disks); on a local target, that disk types have no
effect there."""

from __future__ import annotations

from app.report.context import ReportContext
from app.report.html import table, tag
from sizing.disks import VOLUME_ROLES, placement, volume_label


def render(ctx: ReportContext) -> list[object]:
    """Each config's volumes by role; on a local target, that disk types have no effect there."""
    out: list[object] = [tag("h2", "Disk layouts", id="disks")]
    rows = []
    for plan in ctx.configs:
        holders = placement([v.role for v in plan.shape.dedicated])
        rows.append([plan.config_id] + [
            volume_label(next(v.volume for v in plan.shape.volumes if v.role == holders[role]))
            + ("" if holders[role] == role else " (on data)") for role in VOLUME_ROLES])
    out.append(table(["config", *VOLUME_ROLES], rows))
    if ctx.campaign.deployment == "local":
        out.append(tag("p", "Local target: each role with a volume of its own is a directory of its own on "
                            "the machine's one filesystem, so disk types, sizes, IOPS and throughput have no "
                            "effect on these results; only where RabbitMQ writes differs.", class_="note"))
    return out
