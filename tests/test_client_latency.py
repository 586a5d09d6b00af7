"""The `client_latency` fault kind (issue 32, seed 003): how a campaign says "X ms each way between the generator and
the broker", what the parser refuses, how the scenario is classified, and the executor that sets the proxies' delays.
No broker: the proxy itself is tested in test_latency_proxy.py, the whole path in test_client_latency_cluster.py.
"""

from __future__ import annotations

import copy

import pytest

from loadgen.faults.proxy import ClientLatencyExecutor, delays_s, proxied
from sizing.campaign import CLIENT_LATENCY, load_campaign, parse_campaign
from sizing.criteria import rules
from sizing.documents.fields import SpecError
from sizing.planning.timeline import expand
from sizing.resources.cluster import ClusterInfo, NodeInfo

SHIPPED = "campaigns/flow-control-rtt-local.yaml"
LATENCY = {"kind": "client_latency", "phases": [1], "at_s": 0, "params": {"to_broker_ms": 10, "to_client_ms": 10}}


def spec_with(fault: dict, deployment: str = "local", rate: object = "max") -> dict:
    return {
        "name": "rtt", "catalog": "aws-us-east-1-2020", "deployment": deployment,
        "target": {"rate": 1000, "p99_latency_ms": 1000},
        "workload": {"queues": {"count": 1, "type": "classic"}, "message": {"size_bytes": 100, "persistent": False},
                     "publishers": {"count": 1, "confirms_in_flight": 10},
                     "consumers": {"count": 1, "prefetch": 100, "multi_ack_every": 1}},
        "clusters": {"list": [{"nodes": 3, "instance_type": "c5.2xlarge", "volume": "gp2"}]},
        "scenarios": [{"name": "inflight", "warmup_s": 1, "faults": [fault],
                       "steps": {"vary": "confirms_in_flight", "values": [1, 10], "duration_s": 5, "rate": rate}}],
    }


def problems(spec: dict) -> str:
    with pytest.raises(SpecError) as err:
        parse_campaign(spec)
    return str(err.value)


def test_the_shipped_campaign_runs_its_in_flight_steps_at_a_known_round_trip():
    campaign = load_campaign(SHIPPED)
    scenario = campaign.scenarios[0]
    # A max-rate client-setting scenario may carry it (other faults are refused there): a condition, not adversity.
    assert rules.scenario_kind(scenario) == rules.CLIENT_SETTINGS
    timeline = expand(scenario, 1)
    (fault,) = timeline.faults
    assert (fault.kind, fault.target, fault.node, fault.at_s, fault.heal_at_s) == (CLIENT_LATENCY, "all", None, 0, None)
    assert delays_s(fault) == (0.010, 0.010)


def test_a_capacity_ladder_at_a_known_round_trip_stays_a_capacity_scenario():
    spec = spec_with(LATENCY)
    spec["scenarios"] = [{"name": "ladder", "warmup_s": 1, "faults": [LATENCY],
                          "steps": {"rates": [100, 200], "duration_s": 5}}]
    assert rules.scenario_kind(parse_campaign(spec).scenarios[0]) == rules.CAPACITY
    spec["scenarios"][0]["faults"].append({"kind": "kill_node", "at": 0.5})
    assert rules.scenario_kind(parse_campaign(spec).scenarios[0]) == rules.FAULT_ADVERSE


@pytest.mark.parametrize("deployment", ["local", "aws"])
def test_it_runs_on_any_target_since_it_touches_no_node(deployment):
    assert parse_campaign(spec_with(LATENCY, deployment)).scenarios[0].faults[0].params == {
        "to_broker_ms": 10.0, "to_client_ms": 10.0}


def test_one_direction_alone_is_a_delay():
    fault = copy.deepcopy(LATENCY)
    fault["params"]["to_client_ms"] = 0
    assert parse_campaign(spec_with(fault)).scenarios[0].faults[0].params["to_client_ms"] == 0


@pytest.mark.parametrize(("edit", "said"), [
    (lambda f: f.update(target={"node": 1}), "delays the generator's connections to every node"),
    (lambda f: f["params"].pop("to_client_ms"), "client_latency needs params.to_client_ms"),
    (lambda f: f["params"].update(to_broker_ms=0, to_client_ms=0), "changes nothing"),
    (lambda f: f["params"].update(to_broker_ms=-1), "to_broker_ms"),
    (lambda f: f["params"].update(delay_ms=5), "delay_ms"),
])
def test_what_the_parser_refuses(edit, said):
    fault = copy.deepcopy(LATENCY)
    edit(fault)
    assert said in problems(spec_with(fault))


def test_other_faults_stay_refused_in_max_mode():
    assert "a max-rate step has no target rate" in problems(spec_with({"kind": "kill_node", "at": 0.5}))


class FakeProxies:
    ports = [41001, 41002]

    def __init__(self):
        self.delays = []

    def set_delay(self, to_upstream_s, to_client_s):
        self.delays.append((to_upstream_s, to_client_s))


class Recording:
    def __init__(self):
        self.calls = []

    def inject(self, fault, node):
        self.calls.append(("inject", fault.kind))
        return {}

    def heal(self, fault, node):
        self.calls.append(("heal", fault.kind))
        return {}


def test_the_executor_sets_and_zeroes_the_delays_and_hands_other_kinds_on():
    spec = spec_with(LATENCY, rate=500)
    spec["scenarios"][0]["faults"].append({"kind": "kill_node", "phases": [2], "at": 0.5, "heal_after_s": 1})
    timeline = expand(parse_campaign(spec).scenarios[0], 3)
    latency, kill = timeline.faults
    proxies, other, made = FakeProxies(), Recording(), []
    executor = ClientLatencyExecutor(proxies, lambda: made.append(1) or other)
    detail = executor.inject(latency, None)
    assert proxies.delays == [(0.010, 0.010)] and detail["ports"] == [41001, 41002]
    assert made == []  # the node executor is only made when a node fault needs it
    executor.heal(latency, None)
    assert proxies.delays[-1] == (0.0, 0.0)
    executor.inject(kill, None)
    executor.heal(kill, None)
    assert other.calls == [("inject", "kill_node"), ("heal", "kill_node")] and made == [1]


def test_the_workers_see_each_node_at_its_proxy():
    nodes = tuple(NodeInfo(n, f"rabbit-{n}@h", f"10.0.0.{n}", 5672, 15672, prometheus_port=15692)
                  for n in (1, 2))
    cluster = ClusterInfo("aws", "c", nodes)
    seen = proxied(cluster, [41001, 41002])
    assert [(n.host, n.amqp_port) for n in seen.nodes] == [("127.0.0.1", 41001), ("127.0.0.1", 41002)]
    assert [n.name for n in seen.nodes] == [n.name for n in nodes]
    # The workers open AMQP connections only (loadgen.client); the runner's own samplers keep the real cluster.
    with pytest.raises(Exception, match="2 nodes"):
        proxied(cluster, [41001])


def test_the_runner_routes_only_the_workers_through_the_proxies(tmp_path):
    from loadgen.runner import Runner, RunOptions

    campaign = load_campaign(SHIPPED)
    nodes = (NodeInfo(1, "rabbit-1@h", "127.0.0.1", 1, 15672, prometheus_port=15692),)
    cluster = ClusterInfo("local", "c", nodes)
    runner = Runner(campaign, campaign.clusters[0].config_id, campaign.scenarios[0].name, "r1", cluster,
                    options=RunOptions(out_dir=tmp_path, upload=False), echo=lambda line: None)
    runner._start_proxies()
    try:
        (config,) = runner.session.plan(runner.timeline, runner.nonce).configs
        assert [n.amqp_port for n in config.cluster.nodes] == runner.proxies.ports != [1]
        assert runner.cluster is cluster  # declaration, samplers and counters talk to the node itself
        injector = runner._fault_injector()
        assert isinstance(injector.executor, ClientLatencyExecutor)
    finally:
        summary = runner._stop_proxies()
    assert summary["proxies"][0]["upstream"] == "127.0.0.1:1" and summary["cpu_saturated"] is False
    assert runner._stop_proxies() is summary  # once: the manifest's figures are the ones taken at the stop


def test_the_round_trip_is_known_only_when_one_value_holds_throughout():
    def rtt(*faults):
        spec = spec_with(LATENCY)
        spec["scenarios"][0]["faults"] = list(faults)
        return rules.client_rtt_ms(parse_campaign(spec).scenarios[0])

    assert rules.client_rtt_ms(load_campaign(SHIPPED).scenarios[0]) == 20.0
    one_way = {**LATENCY, "params": {"to_broker_ms": 7, "to_client_ms": 0}}
    assert rtt(one_way) == 7.0
    assert rtt({**LATENCY, "phases": "all"}) == 20.0  # set again at each phase: the same value throughout
    assert rtt({**LATENCY, "heal_after_s": 2}) is None  # zeroed part way
    assert rtt({**LATENCY, "phases": [2]}) is None  # phase 1 runs without it
    assert rtt({**LATENCY, "at_s": 1}) is None  # the first second runs without it
    assert rtt(LATENCY, {**one_way, "phases": [2]}) is None  # two values
    assert rtt() is None


def test_the_window_bound_is_the_window_over_the_round_trip():
    assert rules.window_bound(20, 40.0) == 500.0  # 20 messages per 40 ms
    assert rules.window_bound(1, 20.0) == 50.0
    assert rules.window_bound(0, 20.0) is None  # no confirms: no window
    assert rules.window_bound(20, None) is None


def test_a_known_round_trip_is_no_fault_impact_in_the_phase_dynamics():
    import pandas as pd

    from spark_jobs.lib.phase_summary import RUN_COLS, run_dynamics

    seconds = range(8)
    series = pd.DataFrame({**dict.fromkeys(RUN_COLS, "k"), "repeat": 1, "group": "main", "second": seconds,
                           "phase": 1, "warmup": [s < 1 for s in seconds], "published": 100, "confirmed": 100,
                           "consumed": 100, "acked": 100, "scheduled": 100, "blocked_ms": 0.0})
    faults = pd.DataFrame({**dict.fromkeys(RUN_COLS, "k"), "repeat": [1, 1], "phase": [1, 1],
                           "second": [0.0, 4.0], "fault_kind": ["client_latency", "kill_node"]})
    (row,) = run_dynamics(series, faults).to_dict("records")
    assert (row["faults"], row["fault_kinds"]) == (1, "kill_node")  # known answer: the kill alone
    (row,) = run_dynamics(series, faults.iloc[:1]).to_dict("records")
    assert (row["faults"], row["fault_kinds"]) == (0, None)
