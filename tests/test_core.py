"""The core package stays pure and light; layout keys are partitioned as documented."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sizing.contract.layout import RunKey, of_run, partition_value, report_key, table_prefix, validation_key
from sizing.contract.raw_layout import manifest_key, raw_part_key, run_key_of
from sizing.contract.records import RECORD_TYPES, arrow_schema, spark_ddl

ROOT = Path(__file__).resolve().parent.parent


def test_every_core_module_loads_without_clients_or_processes() -> None:
    """The whole core (every module of sizing/ and its sub-packages, found on disk, not a list) imported in a fresh
    interpreter pulls in none of the edge: the runtime twin of the `pure-core` import contract
    (tests/test_import_contracts.py)."""
    modules = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                     for p in (ROOT / "sizing").rglob("*.py"))
    assert len(modules) >= 15
    heavy = ("airflow", "pika", "pyspark", "boto3", "requests", "subprocess", "adapters", "app", "loadgen",
             "spark_jobs")
    code = (f"import sys, importlib; [importlib.import_module(m) for m in {modules!r}]; "
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_no_core_module_imports_for_annotations_only() -> None:
    """The core's floors (the `sizing-layers` contract) hold for annotations too: import-linter leaves out imports
    under `if TYPE_CHECKING:` (exclude_type_checking_imports), so a type-only import back up would pass it unseen and
    close a loop the house has. Each type is imported where its module stands, or read through a Protocol."""
    users = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "sizing").rglob("*.py")
                   if "TYPE_CHECKING" in p.read_text())
    assert users == []


def test_raw_keys_are_partitioned_by_campaign_config_scenario_run_and_repeat() -> None:
    key = RunKey("local-quick", "n3-c5.2xlarge-gp2", "broker-kill", "manual-1", 2)
    prefix = "raw/campaign=local-quick/config=n3-c5.2xlarge-gp2/scenario=broker-kill/run=manual-1/repeat=2/"
    assert manifest_key(key) == prefix + "manifest.json"
    assert raw_part_key(key, "client_seconds", phase=3, worker=1) == prefix + "client_seconds/phase=03/worker=1.parquet"
    assert raw_part_key(key, "accounting") == prefix + "accounting/part-0.parquet"
    assert table_prefix("phase_summary", "c", "k") == "tables/phase_summary/campaign=c/config=k/"
    assert table_prefix("leaderboards", "c") == "tables/leaderboards/campaign=c/"
    # issue 24: every table is partitioned by run too; a run's objects are found by their `run=` part
    assert table_prefix("phase_summary", "c", "k", "r") == "tables/phase_summary/campaign=c/config=k/run=r/"
    assert table_prefix("leaderboards", "c", run_id="r") == "tables/leaderboards/campaign=c/run=r/"
    keys = ["tables/phase_summary/campaign=c/config=k/run=r/part-1.parquet",
            "tables/phase_summary/campaign=c/config=k/run=r2/part-1.parquet",
            "tables/phase_summary/campaign=c/config=run=r/part-1.parquet"]
    assert of_run(keys, "r") == keys[:1] and partition_value(keys[1], "config") == "k"
    assert validation_key("raw", "c", "k", "r") == "validation/raw/campaign=c/config=k/run=r/result.json"
    assert report_key("c", "r") == "reports/campaign=c/run=r/report.html"
    # ...and a raw object's key says which run it belongs to.
    assert run_key_of(raw_part_key(key, "client_seconds", phase=3, worker=1)) == key
    assert run_key_of(manifest_key(key)) == key
    for other in ("tables/phase_summary/campaign=c/config=k/part-0.parquet",
                  prefix.replace("repeat=2", "repeat=two") + "manifest.json", "raw/campaign=c/manifest.json"):
        assert run_key_of(other) is None, other


@pytest.mark.parametrize("bad", ["", "a/b", "x=y"])
def test_keys_refuse_values_that_would_break_partitions(bad: str) -> None:
    with pytest.raises(ValueError, match="cannot name an object-store partition"):
        manifest_key(RunKey("c", "k", bad, "r"))


def test_every_record_type_has_the_run_key_and_matching_schemas() -> None:
    for name, columns in RECORD_TYPES.items():
        names = [c.name for c in columns]
        assert names[:5] == ["campaign", "config_id", "scenario", "run_id", "repeat"], name
        assert len(names) == len(set(names)), name
        assert arrow_schema(name).names == names
        assert spark_ddl(name).count("`") == 2 * len(names)
    # a narrowed schema keeps the record's order, whatever order the columns are asked in; a typo is refused
    assert spark_ddl("phases", ["phase", "campaign"]) == "`campaign` STRING, `phase` INT"
    with pytest.raises(ValueError, match="phase_nmae"):
        spark_ddl("phases", ["phase_nmae"])


def test_stop_process_group_ends_the_leader_and_its_children() -> None:
    import os
    import time

    from adapters.procs import pid_alive, stop_process_group

    # The leader ignores SIGTERM, so only the SIGKILL after the grace period ends it; its child does not.
    leader = subprocess.Popen(["bash", "-c", "trap '' TERM; sleep 60 & wait"], start_new_session=True)
    time.sleep(0.3)
    stop_process_group(leader.pid, grace_s=0.5)
    assert not pid_alive(leader.pid)
    leader.wait(timeout=5)  # already reaped by stop_process_group (our child); keeps Popen from warning
    # Nothing is left in the group once the orphaned child's zombie is reaped by init.
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        try:
            os.killpg(leader.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        pytest.fail("a process of the group outlived stop_process_group")
