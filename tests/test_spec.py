"""Campaign spec validation: every malformed spec fails with the field path and the reason."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from sizing.campaign import families, load_campaign, parse_campaign, read_campaign_yaml
from sizing.documents.fields import SpecError

ROOT = Path(__file__).resolve().parent.parent
BASE = yaml.safe_load((ROOT / "campaigns" / "local-quick.yaml").read_text())


def mutated(edit) -> dict[str, Any]:
    spec = copy.deepcopy(BASE)
    edit(spec)
    return spec


def _del(path: str):
    def edit(spec):
        *parents, last = path.split(".")
        node = spec
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        del node[last]
    return edit


def _set(path: str, value):
    def edit(spec):
        *parents, last = path.split(".")
        node = spec
        for p in parents:
            node = node[int(p)] if p.isdigit() else node[p]
        node[int(last) if last.isdigit() else last] = value
    return edit


BAD_SPECS = [
    # (id, edit, expected path, expected words in the reason)
    ("missing-name", _del("name"), "name", "is required"),
    ("missing-workload", _del("workload"), "workload", "is required"),
    ("missing-target-rate", _del("target.rate"), "target.rate", "is required"),
    ("negative-target-rate", _set("target.rate", -5), "target.rate", "must be > 0"),
    ("rate-is-a-string", _set("target.rate", "fast"), "target.rate", "must be a number"),
    ("unknown-queue-type", _set("workload.queues.type", "lazy"), "workload.queues.type", "must be one of"),
    ("zero-queues", _set("workload.queues.count", 0), "workload.queues.count", "must be >= 1"),
    ("float-queue-count", _set("workload.queues.count", 2.5), "workload.queues.count", "must be an integer"),
    ("pattern-without-n", _set("workload.queues.name_pattern", "q"), "workload.queues.name_pattern", "{n}"),
    ("mirrored-without-policy", _set("workload.queues.type", "mirrored"), "workload.queues.policy", "HA policy"),
    ("tiny-message", _set("workload.message.size_bytes", 8), "workload.message.size_bytes", ">= 64"),
    ("negative-prefetch", _set("workload.consumers.prefetch", -1), "workload.consumers.prefetch", ">= 1"),
    ("ack-interval-above-prefetch", _set("workload.consumers.multi_ack_every", 500),
     "workload.consumers.multi_ack_every", "<= prefetch"),
    ("typo-field", _set("workload.consumers.prefech", 10), "workload.consumers.prefech", "not a known field"),
    ("bool-as-count", _set("workload.publishers.count", True), "workload.publishers.count", "integer"),
    ("unknown-instance-type", _set("clusters.list.0.instance_type", "m9.huge"),
     "clusters.list[0].instance_type", "unknown instance type"),
    ("unknown-volume-type", _set("clusters.list.0.volume", "floppy"), "clusters.list[0].volume.type",
     "unknown volume type"),
    ("too-many-local-nodes", _set("clusters.list.1.nodes", 11), "clusters", "50-port block holds at most 10 nodes"),
    ("matrix-and-list", _set("clusters.matrix", {"nodes": [3], "instance_types": ["c5.2xlarge"],
                                                 "volumes": ["gp2"]}), "clusters", "exactly one of"),
    ("unknown-deployment", _set("deployment", "gcp"), "deployment", "must be one of"),
    ("unknown-catalog", _set("catalog", "nowhere-1999"), "catalog", "no catalog"),
    ("no-scenarios", _set("scenarios", []), "scenarios", "must not be empty"),
    ("negative-step-rate", _set("scenarios.0.steps.rates", [500, -1]), "scenarios[0].steps.rates", "positive"),
    ("warmup-longer-than-step", _set("scenarios.0.warmup_s", 60), "scenarios[0].warmup_s", "shorter than each step"),
    ("steps-and-profile", _set("scenarios.0.publish_rate", [{"hold": 100, "for_s": 10}]), "scenarios[0]",
     "exactly one of"),
    ("ramp-discontinuity", _set("scenarios.0", {
        "name": "peak", "publish_rate": [{"hold": 100, "for_s": 10}, {"ramp": [200, 300], "for_s": 10}]}),
     "scenarios[0].publish_rate[1].ramp", "previous segment ends at 100"),
    ("profiles-do-not-add-up", _set("scenarios.0", {
        "name": "slow", "publish_rate": [{"hold": 100, "for_s": 60}],
        "consumer_processing_ms": [{"hold": 1, "for_s": 30}]}),
     "scenarios[0].consumer_processing_ms", "must add up"),
    ("ramp-not-a-pair", _set("scenarios.0", {"name": "x", "publish_rate": [{"ramp": [1, 2, 3], "for_s": 5}]}),
     "scenarios[0].publish_rate[0].ramp", "[from, to]"),
    ("segment-without-duration", _set("scenarios.0", {"name": "x", "publish_rate": [{"hold": 10}]}),
     "scenarios[0].publish_rate[0].for_s", "is required"),
    ("unknown-fault-kind", _set("scenarios.1.faults.0.kind", "meteor"), "scenarios[1].faults[0].kind",
     "must be one of"),
    ("network-fault-on-local", _set("scenarios.1.faults.0", {"kind": "network_delay", "at": 0.5,
                                                             "params": {"delay_ms": 50}}),
     "scenarios[1].faults[0].kind", "needs tc netem"),
    ("partition-on-local", _set("scenarios.1.faults.0", {"kind": "partition", "at": 0.5, "heal_after_s": 5}),
     "scenarios[1].faults[0].kind", "set `network: namespaces`"),
    ("loss-on-loopback", _set("scenarios.1.faults.0", {"kind": "network_loss", "at": 0.5, "heal_after_s": 5,
                                                       "params": {"loss_percent": 5}}),
     "scenarios[1].faults[0].kind", "share one loopback interface"),
    ("network-on-aws", lambda spec: [_set("deployment", "aws")(spec), _set("network", "namespaces")(spec)],
     "network", "chooses the local target's network"),
    ("unknown-network", _set("network", "bridge"), "network", "loopback"),
    ("fault-at-and-at_s", _set("scenarios.1.faults.0.at_s", 3), "scenarios[1].faults[0]", "exactly one of `at`"),
    ("fault-fraction-above-one", _set("scenarios.1.faults.0.at", 1.5), "scenarios[1].faults[0].at", "< 1"),
    ("fault-on-missing-node", _set("scenarios.1.faults.0.target", {"node": 3}),
     "scenarios[1].faults[0].target.node", "smallest cluster (1 nodes)"),
    ("fault-phase-out-of-range", _set("scenarios.1.faults.0.phases", [4]), "scenarios[1].faults[0].phases",
     "has 1 phases"),
    ("duplicate-scenario-names", _set("scenarios.1.name", "increasing-intensity"), "scenarios", "more than once"),
    # a trial's scenarios share one cluster: a queue name declared again with another type is refused at the later
    # one (tests/test_refused_inputs_broker.py shows the broker refusing it); the same queues again are fine
    ("queue-declared-again-as-another-type",
     _set("scenarios.1.workload", {"queues": {"type": "classic", "arguments": {}}}),
     "scenarios[1].workload.queues.name_pattern", "declared at scenarios[0].workload as a quorum queue and here as "
                                                  "a classic one"),
    ("queue-declared-again-with-other-arguments",
     _set("scenarios.1.workload", {"queues": {"arguments": {"x-max-length": 10}}}),
     "scenarios[1].workload.queues.name_pattern", "here with other durability, arguments or policy"),
    ("bad-scenario-name", _set("scenarios.0.name", "a/b"), "scenarios[0].name", "letters, digits"),
    ("scenario-override-breaks-workload", _set("scenarios.0.workload", {"consumers": {"count": 0}}),
     "scenarios[0].workload.consumers.count", ">= 1"),
    ("null-field", _set("workload.message.persistent", None), "workload.message.persistent", "got null"),
    # publisher i feeds queue i mod Q: 4 publishers leave queues 5-8 empty, and consumers 5-8 would idle on them
    ("queues-no-publisher-feeds", lambda spec: (_set("workload.queues.count", 8)(spec),
                                                _set("workload.consumers.count", 8)(spec)),
     "workload.publishers.count", "4 queue(s) never get a message and 4 consumer(s) would idle"),
    ("scenario-override-leaves-queues-unfed", _set("scenarios.0.workload", {"consumers": {"count": 6},
                                                                           "queues": {"count": 6}}),
     "scenarios[0].workload.publishers.count", "use at least 6 publishers"),
    # local-quick's quorum arguments inherited by a mirrored scenario that does not clear them (`arguments: {}`)
    ("quorum-arguments-on-mirrored", _set("scenarios.0.workload", {"queues": {
        "type": "mirrored", "policy": {"ha-mode": "exactly", "ha-params": 2}}}),
     "scenarios[0].workload.queues.arguments.x-quorum-initial-group-size", "quorum queues only"),
    ("root-not-a-mapping", lambda spec: spec.clear() or spec.update({"x": 1}), "name", "is required"),
]


@pytest.mark.parametrize(("edit", "path", "reason"), [b[1:] for b in BAD_SPECS], ids=[b[0] for b in BAD_SPECS])
def test_bad_spec_names_the_field_and_the_reason(edit, path: str, reason: str) -> None:
    with pytest.raises(SpecError) as info:
        parse_campaign(mutated(edit), source="test")
    matching = [p for p in info.value.problems if p.path == path]
    assert matching, f"no problem at {path!r}; got: {[str(p) for p in info.value.problems]}"
    assert any(reason in p.reason for p in matching), [str(p) for p in matching]


def test_a_scenarios_queues_of_another_type_under_names_of_their_own_are_accepted() -> None:
    own = _set("scenarios.1.workload", {"queues": {"type": "classic", "name_pattern": "quick-classic-{n}",
                                                   "arguments": {}}})
    campaign = parse_campaign(mutated(own), source="test")
    assert [s.workload.queues.type for s in campaign.scenarios] == ["quorum", "classic"]
    # a quorum queue is declared durable whatever the spec says, so `durable: false` on the same names is no change
    transient = parse_campaign(mutated(_set("scenarios.1.workload", {"queues": {"durable": False}})), source="test")
    assert [s.workload.queues.declared_durable for s in transient.scenarios] == [True, True]


def test_there_are_at_least_twenty_kinds_of_bad_input() -> None:
    assert len(BAD_SPECS) >= 20


def test_all_problems_are_reported_at_once() -> None:
    spec = mutated(lambda s: (s["target"].update(rate=-1), s["workload"]["queues"].update(type="lazy")))
    with pytest.raises(SpecError) as info:
        parse_campaign(spec)
    assert {"target.rate", "workload.queues.type"} <= set(info.value.paths())
    assert "2 problem(s)" in str(info.value)


def test_yaml_that_is_not_a_mapping_is_rejected(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("- just\n- a list\n")
    with pytest.raises(SpecError, match="must be a mapping"):
        load_campaign(bad)


def test_broken_yaml_and_missing_file_are_clear(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match="not valid YAML"):
        load_campaign(bad)
    with pytest.raises(SpecError, match="does not exist"):
        load_campaign(tmp_path / "nope.yaml")


def test_extends_cycle_is_reported(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("extends: b.yaml\n")
    (tmp_path / "b.yaml").write_text("extends: a.yaml\n")
    with pytest.raises(SpecError, match="cycle"):
        read_campaign_yaml(tmp_path / "a.yaml")


@pytest.mark.parametrize("name", ["quorum-sizing-2020", "mirrored-sizing-2020", "ndq-10q-multiack", "local-quick"])
def test_shipped_campaigns_are_valid(name: str) -> None:
    campaign = load_campaign(ROOT / "campaigns" / f"{name}.yaml")
    assert campaign.name == name
    assert campaign.scenarios and campaign.clusters


@pytest.mark.parametrize("path", sorted((ROOT / "campaigns").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_campaign_validates_and_plans(path: Path) -> None:
    """`sizing validate` and `sizing plan` on each file in campaigns/ (the CLI's own entry points, in process)."""
    from app.cli import main

    assert main(["validate", str(path)]) == 0
    assert main(["plan", str(path)]) == 0


def test_seed_campaigns_carry_the_seed_methodology() -> None:
    quorum = load_campaign(ROOT / "campaigns" / "quorum-sizing-2020.yaml")
    assert len(quorum.clusters) == 21
    assert {(s.nodes, s.instance_type) for s in quorum.clusters} == {
        (3, "c5.9xlarge"), (3, "c5.4xlarge"), (5, "c5.4xlarge"), (7, "c5.4xlarge"),
        (5, "c5.2xlarge"), (7, "c5.2xlarge"), (9, "c5.2xlarge")}
    assert {s.volume.type for s in quorum.clusters} == {"io1", "gp2", "st1"}
    # seed 000: each intensity its own 30-minute run; as written, one scenario of 15 rates
    intensity = next(s for s in families(quorum.scenarios) if s.name == "increasing-intensity")
    assert intensity.step_rates == (1000, 5000, *range(10000, 70001, 5000)) and intensity.step_duration_s == 1800
    assert [s.step_rates for s in quorum.scenarios if s.isolated_from == "increasing-intensity"] == [
        (r,) for r in intensity.step_rates]
    w = quorum.workload
    assert (w.queues.count, w.queues.type, w.publishers.count, w.message.size_bytes) == (100, "quorum", 200, 1024)
    assert w.queues.arguments == {"x-quorum-initial-group-size": 3, "x-max-in-memory-length": 0}
    assert (w.publishers.confirms_in_flight, w.consumers.prefetch, w.consumers.processing_ms) == (1000, 1000, 10)
    assert w.publishers.random_start_delay_s == 30
    assert quorum.target.rate == 30000 and quorum.target.p99_latency_ms == 1000
    assert quorum.scenario("consumer-slowdown-30k").workload.consumers.count == 400

    mirrored = load_campaign(ROOT / "campaigns" / "mirrored-sizing-2020.yaml")
    assert mirrored.workload.queues.type == "mirrored"
    assert mirrored.workload.queues.policy == {"ha-mode": "exactly", "ha-params": 2, "ha-sync-mode": "manual"}
    assert [s.name for s in mirrored.scenarios] == [s.name for s in quorum.scenarios]
    # seed 002's Fig 9: the two larger clusters tried against the 30k consumer slowdown
    assert [s.config_id for s in mirrored.clusters][-2:] == ["n9-c5.4xlarge-gp2", "n11-c5.2xlarge-gp2"]

    ndq = load_campaign(ROOT / "campaigns" / "ndq-10q-multiack.yaml")
    q = ndq.workload.queues
    assert (q.count, q.durable, dict(q.arguments)) == (10, False, {"x-max-length": 250000})
    assert (ndq.workload.consumers.prefetch, ndq.workload.consumers.multi_ack_every) == (200, 50)
    assert ndq.workload.message.persistent is False and ndq.workload.publishers.confirms_in_flight == 0
    assert [s.nodes for s in ndq.clusters] == [1]


def test_an_explicit_empty_mapping_clears_what_is_inherited(tmp_path: Path) -> None:
    """`arguments: {}` replaces the inherited arguments (a scenario override and `extends` alike); a non-empty
    mapping still merges key by key. Known answers: local-quick's quorum workload carries
    {x-quorum-initial-group-size: 3}; quorum-sizing-2020 two quorum-only arguments."""
    mirrored = {"type": "mirrored", "policy": {"ha-mode": "exactly", "ha-params": 2},
                "name_pattern": "quick-mirrored-{n}"}  # a queue keeps its first type on the cluster: names of its own
    spec = mutated(_set("scenarios.0.workload", {"queues": {**mirrored, "arguments": {}}}))
    spec["scenarios"][1]["workload"] = {"queues": {"arguments": {"x-max-length": 10}}}
    campaign = parse_campaign(spec)
    assert campaign.workload.queues.arguments == {"x-quorum-initial-group-size": 3}
    assert campaign.scenarios[0].workload.queues.arguments == {}
    assert campaign.scenarios[1].workload.queues.arguments == {"x-quorum-initial-group-size": 3, "x-max-length": 10}
    # mirrored-sizing-2020 extends quorum-sizing-2020 and clears its quorum-only arguments
    assert load_campaign(ROOT / "campaigns" / "quorum-sizing-2020.yaml").workload.queues.arguments == {
        "x-quorum-initial-group-size": 3, "x-max-in-memory-length": 0}
    resolved = load_campaign(ROOT / "campaigns" / "mirrored-sizing-2020.yaml")
    assert resolved.workload.queues.arguments == {}
    assert all(s.workload.queues.arguments == {} for s in resolved.scenarios)
    # ... and without the `{}` the same child is refused, naming the inherited argument
    child = tmp_path / "child.yaml"
    child.write_text(f"extends: {ROOT / 'campaigns' / 'quorum-sizing-2020.yaml'}\nname: child\n"
                     "workload: {queues: {type: mirrored, policy: {ha-mode: exactly, ha-params: 2}}}\n")
    with pytest.raises(SpecError) as info:
        load_campaign(child)
    assert set(info.value.paths()) == {"workload.queues.arguments.x-max-in-memory-length",
                                       "workload.queues.arguments.x-quorum-initial-group-size"}


def test_spec_hash_is_stable_and_sensitive() -> None:
    a = parse_campaign(copy.deepcopy(BASE))
    b = parse_campaign(copy.deepcopy(BASE))
    c = parse_campaign(mutated(_set("target.rate", 1234)))
    assert a.spec_hash == b.spec_hash != c.spec_hash



@pytest.mark.parametrize(("queues", "publishers", "consumers"),
                         [(10, 5, 10), (4, 4, 8), (10, 3, 4), (100, 200, 800), (7, 2, 20), (1, 1, 5)])
def test_idle_consumers_counts_what_the_generators_spread_leaves_idle(queues, publishers, consumers) -> None:
    """The spec's rule against the generator's own plan (loadgen.schedule.plan_clients, the independent counter):
    a consumer idles when no publisher's queue is its queue."""
    from dataclasses import replace

    from loadgen.schedule import plan_clients
    from sizing.campaign.parse import idle_consumers

    base = parse_campaign(BASE).workload
    workload = replace(base, queues=replace(base.queues, count=queues),
                       publishers=replace(base.publishers, count=publishers),
                       consumers=replace(base.consumers, count=consumers))
    publisher_plans, consumer_plans = plan_clients(workload, nodes=1, workers=2)
    fed = {plan.queue for plan in publisher_plans}
    assert idle_consumers(queues, publishers, consumers) == sum(1 for c in consumer_plans if c.queue not in fed)


def test_a_partition_runs_on_aws_against_one_node_never_all():
    """The aws target takes a partition of one node (random, a node number or a queue's leader); `all` would cut
    every node off from every other, so it is refused with the field and why."""
    spec = yaml.safe_load((ROOT / "campaigns" / "quorum-sizing-2020.yaml").read_text())
    spec["scenarios"] = [{**spec["scenarios"][0], "faults": [
        {"kind": "partition", "at": 0.5, "heal_after_s": 30, "target": {"node": 2}}]}]
    fault = parse_campaign(copy.deepcopy(spec)).scenarios[0].faults[0]
    assert (fault.kind, fault.target, fault.node, fault.heal_after_s, fault.params) == (
        "partition", "node", 2, 30, {})
    spec["scenarios"][0]["faults"][0]["target"] = "all"
    with pytest.raises(SpecError) as info:
        parse_campaign(spec)
    assert any(p.path == "scenarios[0].faults[0].target" and "cuts one node off" in p.reason
               for p in info.value.problems)


def test_a_partition_may_cut_one_way_and_names_a_wrong_direction():
    """`params.direction` is kept only when it is not the default (`both`), so a two-way cut's params read as before
    directions existed; an unknown direction is refused at its field path, and a direction on another kind is a
    param it does not take."""
    spec = yaml.safe_load((ROOT / "campaigns" / "quorum-sizing-2020.yaml").read_text())
    base = {"kind": "partition", "at": 0.5, "heal_after_s": 30, "target": {"node": 2}}

    def parsed(fault):
        return parse_campaign({**copy.deepcopy(spec), "scenarios": [{**spec["scenarios"][0], "faults": [fault]}]})

    assert parsed({**base, "params": {"direction": "to_node"}}).scenarios[0].faults[0].params == {
        "direction": "to_node"}
    assert parsed({**base, "params": {"direction": "both"}}).scenarios[0].faults[0].params == {}
    for fault, path, words in (
            ({**base, "params": {"direction": "sideways"}}, "params.direction", "must be one of both, from_node"),
            ({**base, "kind": "kill_node", "params": {"direction": "to_node"}}, "params", "takes no params")):
        with pytest.raises(SpecError) as info:
            parsed(fault)
        assert any(p.path == f"scenarios[0].faults[0].{path}" and words in p.reason for p in info.value.problems), \
            info.value.problems


def test_namespaces_let_a_local_campaign_partition_and_drop_packets() -> None:
    """The faults the loopback refuses (above) are accepted once each node has a namespace (adapters/netns.py)."""
    faults = [{"kind": "partition", "at": 0.2, "heal_after_s": 5},
              {"kind": "network_loss", "at": 0.6, "heal_after_s": 5, "params": {"loss_percent": 5}}]
    campaign = parse_campaign(mutated(lambda spec: [_set("network", "namespaces")(spec),
                                                    _set("scenarios.1.faults", faults)(spec)]), source="test")
    assert campaign.network == "namespaces"
    assert [f.kind for f in campaign.scenarios[1].faults] == ["partition", "network_loss"]
    assert parse_campaign(mutated(lambda spec: None), source="test").network == "loopback"  # the default
