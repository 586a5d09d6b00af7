"""A campaign's question and its answer (sizing.findings, pure): which arms are compared with which baseline, the
effects with their exact intervals and verdicts, and the rows the GX findings suite accepts."""

from __future__ import annotations

import pandas as pd
import pytest

from sizing import findings, records
from sizing.fields import SpecError
from sizing.spec import load_campaign, parse_campaign
from spark_jobs.lib import validation

BASE = {
    "name": "cmp", "deployment": "local", "catalog": "aws-us-east-1-2020",
    "target": {"rate": 1000, "p99_latency_ms": 1000},
    "workload": {"queues": {"count": 1, "type": "quorum"}, "message": {"size_bytes": 1024},
                 "publishers": {"count": 1, "confirms_in_flight": 1000},
                 "consumers": {"count": 1, "prefetch": 1000, "multi_ack_every": 1}},
    "clusters": {"list": [{"nodes": 1, "instance_type": "c5.2xlarge", "volume": "gp2"},
                          {"nodes": 1, "instance_type": "c5.2xlarge", "volume": "st1"}]},
}
INFLIGHT = {"name": "inflight", "warmup_s": 1,
            "steps": {"vary": "confirms_in_flight", "values": [20, 200, 1000], "duration_s": 10, "rate": "max",
                      "max_rate": 20000}}
NO_CONFIRMS = {"name": "no-confirms", "warmup_s": 1,
               "steps": {"sequence": [{"confirms_in_flight": 0, "auto_ack": True}], "duration_s": 10, "rate": "max",
                         "max_rate": 20000}}


def campaign(**extra):
    return parse_campaign({**BASE, "scenarios": [INFLIGHT, NO_CONFIRMS], **extra})


def row(config: str, scenario: str, phase_name: str, repeat: int, rate: float, p99: float, **extra) -> dict:
    return {"config_id": config, "scenario": scenario, "run_id": "R", "repeat": repeat, "phase": 1,
            "phase_name": phase_name, "confirm_rate": rate, "publish_rate": rate, "consume_rate": rate,
            "e2e_p75_ms": p99 / 2, "e2e_p99_ms": p99, "e2e_p999_ms": p99 * 2, "latency_basis": "sent", "valid": True,
            **extra}


GP2, ST1 = "n1-c5.2xlarge-gp2", "n1-c5.2xlarge-st1"


def rows_by_step() -> list[dict]:
    out = []
    for repeat, jitter in enumerate((0.99, 1.0, 1.01), start=1):
        for config in (GP2, ST1):
            out += [row(config, "inflight", "confirms_in_flight=20", repeat, 3000 * jitter, 5.0 * jitter),
                    row(config, "inflight", "confirms_in_flight=200", repeat, 9000 * jitter, 20.0 * jitter),
                    row(config, "inflight", "confirms_in_flight=1000", repeat, 9100 * jitter, 80.0 * jitter),
                    # no confirms: nothing confirmed, the publish rate is what was published
                    row(config, "no-confirms", "confirms_in_flight=0,auto_ack=true", repeat, 0.0, 400.0 * jitter,
                        publish_rate=9050 * jitter)]
    return out


def test_a_campaign_without_a_purpose_sizes_and_has_no_findings() -> None:
    plain = parse_campaign({**BASE, "scenarios": [INFLIGHT]})
    assert plain.purpose == "size" and findings.findings(plain, rows_by_step()) == []


def test_by_step_compares_each_step_with_the_workloads_own_setting() -> None:
    c = campaign(purpose="compare", compare={"by": "step", "versus": [
        {"baseline": "inflight/confirms_in_flight=1000", "other": "no-confirms"}]})
    out = findings.findings(c, rows_by_step())
    effects = {(r["config_id"], r["phase_name"], r["metric"]): r for r in out if r["kind"] == "effect"}
    # baseline step: the workload's own in-flight 1000; in-flight 20 carries a third of it (3000 vs 9100)
    low = effects[(GP2, "confirms_in_flight=20", "publish_rate")]
    assert (low["baseline_phase_name"], low["n"], low["n_baseline"]) == ("confirms_in_flight=1000", 3, 3)
    assert low["effect"] == pytest.approx(3000 / 9100 - 1, abs=0.01)
    assert low["effect_level"] == pytest.approx(0.9) and low["verdict"] == "lower" and low["better"] is False
    assert low["effect_low"] <= 3000 / 9100 - 1 <= low["effect_high"]
    # 200 vs 1000: 9000 vs 9100 is within the 5 % practical threshold either way
    assert effects[(GP2, "confirms_in_flight=200", "publish_rate")]["verdict"] == "unchanged"
    # ... but its p99 is a quarter: lower latency is better
    faster = effects[(GP2, "confirms_in_flight=200", "e2e_p99_ms")]
    assert (faster["verdict"], faster["better"]) == ("lower", True)
    # no confirms, no acks against in-flight 1000: no throughput gained, latency up (seed 003's conclusion 4)
    bare = {m: effects[(GP2, "confirms_in_flight=0,auto_ack=true", m)] for m in ("publish_rate", "e2e_p99_ms")}
    assert bare["publish_rate"]["baseline_family"] == "inflight"
    assert bare["publish_rate"]["verdict"] == "unchanged" and bare["e2e_p99_ms"]["verdict"] == "higher"
    assert bare["e2e_p99_ms"]["better"] is False
    assert not any(r["phase_name"] == "confirms_in_flight=1000" for r in effects.values())  # no self-comparison
    frame = pd.DataFrame([{"campaign": c.name, "run_id": "r1", **r} for r in out],
                         columns=records.table_columns("findings"))
    assert validation.validate_frames({"findings": frame}).success, validation.validate_frames(
        {"findings": frame}).message()


def test_by_config_compares_every_config_with_the_baseline_config_and_one_repeat_is_inconclusive() -> None:
    c = campaign(purpose="compare", compare={"by": "config", "baseline": GP2})
    one_run = [r for r in rows_by_step() if r["repeat"] == 1]
    effects = [r for r in findings.findings(c, one_run) if r["kind"] == "effect"]
    assert {r["config_id"] for r in effects} == {ST1} and {r["baseline_config_id"] for r in effects} == {GP2}
    assert {r["verdict"] for r in effects} == {"inconclusive"} and {r["effect_level"] for r in effects} == {0.0}
    assert all(r["effect_low"] is None for r in effects)


def test_characterise_reports_every_arms_median_with_its_coverage() -> None:
    c = campaign(purpose="characterise")
    out = findings.findings(c, rows_by_step())
    assert {r["kind"] for r in out} == {"level"}
    rate = next(r for r in out if (r["config_id"], r["phase_name"], r["metric"]) == (
        GP2, "confirms_in_flight=20", "publish_rate"))
    assert (rate["value"], rate["value_low"], rate["value_high"], rate["n"]) == (3000.0, 2970.0, 3030.0, 3)
    assert rate["value_level"] == pytest.approx(0.75)


def test_comparison_specs_are_checked_with_their_field_paths() -> None:
    with pytest.raises(SpecError, match=r"compare: purpose compare needs"):
        campaign(purpose="compare")
    with pytest.raises(SpecError, match=r"compare.baseline: names no config of this campaign: 'n9'"):
        campaign(purpose="compare", compare={"by": "config", "baseline": "n9"})
    with pytest.raises(SpecError, match=r"compare.versus\[0\].other: names no scenario: 'nope'"):
        campaign(purpose="compare", compare={"versus": [{"baseline": "inflight", "other": "nope"}]})
    with pytest.raises(SpecError, match=r"compare.baselines.inflight: 'prefetch=1' is no step of inflight"):
        campaign(purpose="compare", compare={"by": "step", "baselines": {"inflight": "prefetch=1"}})
    with pytest.raises(SpecError, match=r"compare: applies to purpose: compare only"):
        campaign(compare={"by": "step"})


@pytest.mark.parametrize(("name", "purpose"), [
    ("quorum-sizing-2020", "size"), ("mirrored-sizing-2020", "size"), ("quorum-search-2020", "size"),
    ("disks-matter-2020", "compare"), ("flow-control-2020", "compare"), ("ndq-10q-multiack", "characterise"),
    ("disks-matter-local", "compare"), ("flow-control-local", "compare"), ("ndq-10q-multiack-local", "characterise")])
def test_every_shipped_study_states_its_question(name: str, purpose: str) -> None:
    assert load_campaign(f"campaigns/{name}.yaml").purpose == purpose


def test_the_reports_answer_words_the_levels_of_sizing_stats(monkeypatch) -> None:
    """The Findings note and the 'inconclusive' sentence word COMPARE_CONFIDENCE and PRACTICAL_EFFECT: with other
    levels the words change with them."""
    import pandas as pd

    from app.report import answer

    c = campaign(purpose="compare", compare={"by": "config", "baseline": GP2})
    frame = pd.DataFrame(findings.findings(c, [r for r in rows_by_step() if r["repeat"] == 1]))
    monkeypatch.setattr(answer, "COMPARE_CONFIDENCE", 0.8)
    monkeypatch.setattr(answer, "PRACTICAL_EFFECT", 0.1)
    sentence, _ = answer.headline(c, frame)
    note = "".join(str(part) for part in answer.section(c, frame))
    assert "no interval reaches 80 %" in sentence
    assert "interval at 80 % on one side" in note and "effect of at least 10 %" in note and "90 %" not in note
