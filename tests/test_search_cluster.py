"""Acceptance of issue 16 on a real 1-node local cluster (port slot 62): the online capacity search finds a capacity
known by construction.

campaigns/local-search.yaml: 4 consumers, one per queue, each taking 5 ms of simulated processing per message
with a prefetch of 50 (acks every 10) that keeps every one busy, carry at most 4 x 1000 / 5 = 800 msg/s; the
broker does several thousand persistent 1 kB msg/s on these cores (tests/test_loadgen_max_mode.py measures
5,000-12,000 confirmed msg/s on one quorum queue), so the consumers are the bound. Independent of the search:
the bound comes from the spec's arithmetic, and the probe count limit from `SearchSpec.worst_case_probes`,
which `sizing plan` budgets with.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from loadgen.runner import Runner, RunOptions
from sizing.campaign import load_campaign
from sizing.contract import raw_layout
from sizing.criteria.rules import PROBE_MATCH_FRACTION
from tests.fixtures.lanes import sharing

pytestmark = [pytest.mark.cluster, pytest.mark.alone]  # measures: nothing beside it (tests/fixtures/lanes.py)

CAMPAIGN = Path(__file__).resolve().parents[1] / "campaigns" / "local-search.yaml"
SLOT = 62


def test_the_search_finds_the_consumer_bound_within_5_percent(local_cluster_factory, tmp_path):
    campaign = load_campaign(CAMPAIGN)
    workload = campaign.workload
    bound = workload.consumers.count * 1000 / workload.consumers.processing_ms  # 800 msg/s by construction
    spec = campaign.scenarios[0].search
    with sharing():  # building the cluster measures nothing
        cluster = local_cluster_factory(slot=SLOT, nodes=1).cluster
    lines: list[str] = []
    runner = Runner(campaign, campaign.clusters[0].config_id, "capacity-search", f"t{int(time.time())}", cluster,
                    options=RunOptions(workers=2, out_dir=tmp_path, upload=False, sample_interval_s=2,
                                       node_interval_s=0, progress_interval_s=60),
                    echo=lines.append)
    started = time.monotonic()
    code = runner.run()
    elapsed = time.monotonic() - started
    assert code == 0, (runner.errors, lines)
    result = runner.search_result
    print("\n".join(lines[-12:]), f"\nsearch wall time {elapsed:.1f} s", sep="\n")
    assert result.status == "converged", lines
    assert abs(result.sustainable_rate - bound) <= 0.05 * bound, lines
    # The bracket holds the bound, within the 5 %: the simulated processing (virtual time in the generator's
    # worker) loses time when that process is descheduled while a consumer is idle, so on a loaded machine the
    # consumers' real bound lies a little below 800 (measured at load average ~10: first fail at 787.5 msg/s;
    # on a quieter run the bracket was [787.5, 806.25]). Above it, no pass beyond the rule's backlog tolerance.
    assert result.last_pass <= bound / PROBE_MATCH_FRACTION and result.first_fail >= 0.95 * bound, lines
    assert result.probes_used <= spec.worst_case_probes()
    # every decision is in the records, with the figures it used
    prefix = tmp_path / raw_layout.raw_run_prefix(runner.key) / "events"
    events = pd.concat([pd.read_parquet(f) for f in sorted(prefix.rglob("*.parquet"))])
    decisions = [json.loads(d) for d in events[events.kind == "search_probe"].sort_values("phase")["detail"]]
    assert [d["passed"] for d in decisions] == [o.passed for o in result.outcomes]
    # no probe passed above the bound plus the backlog tolerance the rule allows (PROBE_MATCH_FRACTION): the
    # unprocessed messages in the consumers' prefetch buffers count as backlog (sizing.criteria.search.backlog_slope)
    for decision in decisions:
        if decision["rate"] > bound / PROBE_MATCH_FRACTION:
            assert not decision["passed"], decision
