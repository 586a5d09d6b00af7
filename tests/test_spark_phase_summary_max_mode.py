"""phase_summary for max-mode phases (issue 13): labelled with their rate mode and latency basis, never judged
against a target rate, validity unchanged. Known answers: the hand-built rows below."""

from __future__ import annotations

import pytest

from sizing.contract.layout import RunKey
from spark_jobs.lib import phase_summary as ps
from tests.spark_records import client_rows, frames, phase_row

pytestmark = pytest.mark.spark

KEY = RunKey("c", "n1-c5.2xlarge-gp2", "inflight", "R1")


def test_max_phase_is_labelled_sent_and_not_judged_against_a_target(spark):
    phases = [{**phase_row(KEY, 1, 0, 10, 2, 100), "phase_name": "rate-100"},  # a run written before issue 13
              {**phase_row(KEY, 2, 10, 10, 2, 0), "phase_name": "confirms_in_flight=5", "rate_mode": "max",
               "latency_basis": "sent"},
              {**phase_row(KEY, 3, 20, 10, 2, 0), "phase_name": "confirms_in_flight=20", "rate_mode": "max",
               "latency_basis": "sent"}]
    rows = (client_rows(KEY, 1, 0, range(0, 10), 2, target_rate=100, per_second=100)
            + client_rows(KEY, 2, 0, range(10, 20), 12, target_rate=0, per_second=900)
            + client_rows(KEY, 3, 0, range(20, 30), 22, target_rate=0, per_second=900, cpu_s=0.99))
    summary = ps.summarise(frames(spark, "phases", phases), ps.ClientRecords.of(frames(spark, "client_seconds", rows)),
                           frames(spark, "accounting", []), frames(spark, "events", []),
                           frames(spark, "broker_samples", []), ps.Rules(slo_p99_ms=1000.0))
    got = {r["phase"]: r.asDict() for r in summary.collect()}
    assert (got[1]["rate_mode"], got[1]["latency_basis"], got[1]["matched_target"]) == ("scheduled", "intended", True)
    # 900 msg/s "beats" the recorded target of 0, yet a max phase has no target to match.
    assert (got[2]["rate_mode"], got[2]["latency_basis"], got[2]["matched_target"]) == ("max", "sent", False)
    assert got[2]["confirm_rate"] == pytest.approx(900.0) and got[2]["valid"] is True
    assert got[2]["phase_name"] == "confirms_in_flight=5"
    # Its validity is only "the generator was not the bottleneck".
    assert got[3]["valid"] is False and got[3]["invalid_reason"] == "loadgen_cpu_saturated"
