"""Per-node disk layouts (issue 14, seed 001): spec, config ids, bad input with field paths, and the cost of
every volume of every node. Known answers are computed by hand from catalogs/aws-us-east-1-2020.yaml
(c4.4xlarge $0.796/h, io1 200 GB $725/month flat, st1 $0.045/GB-month, gp2 $0.10/GB-month, 720 h/month)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from app.cli import main as cli_main
from sizing.campaign import ClusterShape, parse_campaign
from sizing.documents.fields import SpecError
from sizing.planning.plan import campaign_cost, plan_configs, role_monthly_costs
from sizing.resources.cost import Volume
from sizing.resources.disks import DATA_ROLE, VOLUME_ROLES, placement

ROOT = Path(__file__).resolve().parent.parent
IO1 = {"type": "io1", "size_gb": 200}
ST1 = {"type": "st1", "size_gb": 1000}


def spec(clusters: list[dict[str, Any]], deployment: str = "aws") -> dict[str, Any]:
    return {
        "name": "disks", "deployment": deployment, "catalog": "aws-us-east-1-2020",
        "target": {"rate": 1000, "p99_latency_ms": 500},
        "workload": {
            "queues": {"count": 1, "type": "quorum"}, "message": {"size_bytes": 1024},
            "publishers": {"count": 1, "confirms_in_flight": 10}, "consumers": {"count": 1, "prefetch": 10},
        },
        "clusters": {"list": clusters},
        "scenarios": [{"name": "steps", "steps": {"rates": [1000], "duration_s": 900}}],
    }


def node(volumes: list[dict[str, Any]] | None = None, nodes: int = 3, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"nodes": nodes, "instance_type": "c4.4xlarge", **extra}
    if volumes is not None:
        entry["volumes"] = volumes
    return entry


def test_one_volume_stays_the_default_and_its_id_is_unchanged() -> None:
    """The id formula of before the layouts (nodes-instance-type-size-iops-mbps) is the known answer."""
    campaign = parse_campaign(spec([node(volume={"type": "io1", "size_gb": 200, "iops": 10000})]))
    shape = campaign.clusters[0]
    assert shape.config_id == "n3-c4.4xlarge-io1-200gb-10000iops"
    assert shape.dedicated == () and [v.role for v in shape.volumes] == [DATA_ROLE]
    assert ClusterShape(3, "c5.4xlarge", Volume("gp2")).config_id == "n3-c5.4xlarge-gp2"
    # `volumes` with only a data volume is the same layout, hence the same id
    same = parse_campaign(spec([node([{"role": "data", "type": "io1", "size_gb": 200, "iops": 10000}])]))
    assert same.clusters[0] == shape


def test_layout_ids_are_stable_and_name_each_own_volume() -> None:
    three = node([{"role": "wal", **IO1}, {"role": "data", **IO1}, {"role": "segments", **IO1}])
    reordered = node([{"role": "segments", **IO1}, {"role": "data", **IO1}, {"role": "wal", **IO1}])
    mixed = node([{"role": "data", **ST1}, {"role": "wal", "type": "io1"}])
    shapes = parse_campaign(spec([three, mixed])).clusters
    assert [s.config_id for s in shapes] == ["n3-c4.4xlarge-io1-200gb-wal-segments",
                                             "n3-c4.4xlarge-st1-1000gb-wal.io1"]
    assert parse_campaign(spec([reordered])).clusters[0].config_id == shapes[0].config_id
    assert [v.role for v in shapes[0].volumes] == ["data", "wal", "segments"]
    with_fs = parse_campaign(spec([node([{"role": "data", **IO1}], filesystem="xfs")])).clusters[0]
    assert with_fs.config_id == "n3-c4.4xlarge-io1-200gb-xfs" and with_fs.filesystem == "xfs"


def test_roles_without_a_volume_live_on_the_data_volume() -> None:
    assert placement(["wal"]) == {"data": "data", "logs": "data", "wal": "wal", "segments": "data"}
    assert placement([]) == dict.fromkeys(VOLUME_ROLES, "data")


BAD_LAYOUTS = [
    # (id, cluster entry, deployment, expected path, words in the reason)
    ("same-role-twice", node([{"role": "data", **IO1}, {"role": "wal", **IO1}, {"role": "wal", **ST1}]), "aws",
     "clusters.list[0].volumes[2].role", "already has a volume (volumes[1])"),
    ("unknown-role", node([{"role": "data", **IO1}, {"role": "journal", **IO1}]), "aws",
     "clusters.list[0].volumes[1].role", "must be one of data, logs, wal, segments"),
    ("role-missing", node([{"role": "data", **IO1}, {**IO1}]), "aws", "clusters.list[0].volumes[1].role",
     "is required"),
    ("no-data-volume", node([{"role": "wal", **IO1}]), "aws", "clusters.list[0].volumes", "needs a `data` volume"),
    ("volume-and-volumes", node([{"role": "data", **IO1}], volume="gp2"), "aws", "clusters.list[0]",
     "exactly one of `volume`"),
    ("unknown-type-in-layout", node([{"role": "data", **IO1}, {"role": "wal", "type": "floppy"}]), "aws",
     "clusters.list[0].volumes[1].type", "unknown volume type"),
    ("typo-in-layout", node([{"role": "data", **IO1, "sise_gb": 3}]), "aws", "clusters.list[0].volumes[0].sise_gb",
     "not a known field"),
    ("unknown-filesystem", node([{"role": "data", **IO1}], filesystem="ntfs"), "aws", "clusters.list[0].filesystem",
     "must be one of ext4, xfs"),
    ("local-cannot-honour-a-filesystem", node([{"role": "data", **IO1}, {"role": "wal", **IO1}], nodes=1,
                                              filesystem="xfs"), "local",
     "clusters.list[0].filesystem", "local target cannot honour"),
]


@pytest.mark.parametrize(("entry", "deployment", "path", "reason"), [b[1:] for b in BAD_LAYOUTS],
                         ids=[b[0] for b in BAD_LAYOUTS])
def test_bad_layout_names_the_field_and_the_reason(entry: dict, deployment: str, path: str, reason: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_campaign(spec([entry], deployment))
    matching = [p for p in info.value.problems if p.path == path]
    assert matching, f"no problem at {path!r}; got: {[str(p) for p in info.value.problems]}"
    assert any(reason in p.reason for p in matching), [str(p) for p in matching]


def test_a_local_layout_of_directories_is_accepted() -> None:
    """Roles on their own directories are what a local node can honour (disk types have no effect there)."""
    campaign = parse_campaign(spec([node([{"role": "data", "type": "gp2"}, {"role": "wal", "type": "gp2"},
                                          {"role": "segments", "type": "gp2"}], nodes=1)], "local"))
    assert [v.role for v in campaign.clusters[0].volumes] == ["data", "wal", "segments"]


def test_three_node_three_volume_config_costs_nodes_times_instance_plus_volumes() -> None:
    """Known answer: instance 0.796 x 720 = 573.12; data io1 725 (flat, catalog size), wal st1 1000 GB x 0.045 = 45,
    segments gp2 500 GB x 0.10 = 50. Per node 1393.12; 3 nodes 4179.36 $/month."""
    entry = node([{"role": "data", "type": "io1"}, {"role": "wal", **ST1}, {"role": "segments", "type": "gp2",
                                                                             "size_gb": 500}])
    campaign = parse_campaign(spec([entry]))
    (config,) = plan_configs(campaign)
    assert role_monthly_costs(campaign.catalog, config.shape) == pytest.approx(
        {"data": 725.0, "wal": 45.0, "segments": 50.0})
    assert config.monthly_cost == pytest.approx(3 * (0.796 * 720 + 725 + 45 + 50))
    assert config.monthly_cost == pytest.approx(4179.36)
    assert [v["role"] for v in config.to_dict()["volumes"]] == ["data", "wal", "segments"]


def test_campaign_cost_prices_every_volume_for_the_trial_lifetime() -> None:
    """One trial of 600 + 900 + 300 s = 0.5 h: volumes 3 x (725 + 45 + 50) / 720 x 0.5 = 1.708333..."""
    entry = node([{"role": "data", "type": "io1"}, {"role": "wal", **ST1}, {"role": "segments", "type": "gp2",
                                                                             "size_gb": 500}])
    cost = campaign_cost(parse_campaign(spec([entry])))
    assert cost.volume_cost == pytest.approx(3 * 820 / 720 * 0.5)
    assert cost.instance_cost == pytest.approx(3 * 0.796 * 0.5)


def test_plan_prints_the_per_role_breakdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import yaml

    entry = node([{"role": "data", "type": "io1"}, {"role": "wal", **ST1}])
    path = tmp_path / "disks.yaml"
    path.write_text(yaml.safe_dump(spec([entry])))
    assert cli_main(["plan", str(path)]) == 0
    out = capsys.readouterr().out
    assert "per node: instance 573.12 + data io1 725.00 + wal st1 45.00 = 1343.12 USD/month" in out
    assert "on the data volume: logs, segments" in out



def test_seed_001_campaign_has_the_six_clusters() -> None:
    """Seed 001's table: rabbitmq1/4/7 on 200 GB io1, 10/13/16 on 1 TB st1; one drive, + WAL, + WAL + segments."""
    from sizing.campaign import load_campaign

    campaign = load_campaign(ROOT / "campaigns" / "disks-matter-2020.yaml")
    layouts = [(s.nodes, s.instance_type, s.volume.type, s.volume.size_gb, [v.role for v in s.dedicated])
               for s in campaign.clusters]
    assert layouts == [(3, "c4.4xlarge", "io1", 200, []), (3, "c4.4xlarge", "io1", 200, ["wal"]),
                       (3, "c4.4xlarge", "io1", 200, ["wal", "segments"]), (3, "c4.4xlarge", "st1", 1000, []),
                       (3, "c4.4xlarge", "st1", 1000, ["wal"]), (3, "c4.4xlarge", "st1", 1000, ["wal", "segments"])]
    assert all(v.volume == s.volume for s in campaign.clusters for v in s.dedicated)  # same drive kind per cluster
    w = campaign.workload
    assert (w.queues.count, w.queues.type, w.publishers.count, w.consumers.count, w.message.size_bytes) == (
        40, "quorum", 40, 40, 1024)
    by_name = {s.name: s for s in campaign.scenarios}
    for mix in ("pure", "mixed", "medium"):
        # latency: 40 x 10 and 40 x 50 msg/s; throughput: 1 and 4 queues (as many publishers), no rate limit
        assert by_name[f"{mix}-latency-400"].step_rates == (400.0,)
        assert by_name[f"{mix}-latency-2000"].step_rates == (2000.0,)
        for n in (1, 4):
            scenario = by_name[f"{mix}-throughput-{n}q"]
            assert [x.rate_mode for x in scenario.step_settings] == ["max"]
            q = scenario.workload
            assert (q.queues.count, q.publishers.count, q.consumers.count, q.queues.type) == (n, n, n, "quorum")
    # the light mix: every mixed test runs next to 40 lazy classic queues, 40 publishers x 10 msg/s (400 msg/s);
    # the medium mix (Figs 13-18) next to the same queues at 50 msg/s per publisher (2000 msg/s)
    background = {"mixed": 400.0, "medium": 2000.0}
    assert sorted(name.split("-")[0] for name in by_name) == ["medium"] * 4 + ["mixed"] * 4 + ["pure"] * 4
    for name, scenario in by_name.items():
        mix = name.split("-")[0]
        assert [g.name for g in scenario.workload_groups] == (["quorum", "lazy-background"] if mix in background
                                                              else ["main"])
        assert scenario.foreground == scenario.workload_groups[0].name
        for group in scenario.background_groups:
            b = group.workload
            assert (b.queues.count, b.queues.type, dict(b.queues.arguments), b.publishers.count,
                    b.consumers.count, group.schedule.step_rates) == (40, "classic", {"x-queue-mode": "lazy"}, 40,
                                                                      40, (background[mix],))
