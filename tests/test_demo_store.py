"""The demo's object store keeps what it holds (issue 25, item 1): the real SeaweedFS server the demo starts
(app.s3server), in a throwaway state dir, on port slot 68 (24400-24407).

Independent counter: the bytes and ETags the server returns for each key before and after, compared with what
was written. The whole stack's version (a campaign run, `make stop`, a new start, and `runs`, `query`, `report`
answering the same bytes) is in tests/test_orchestration_e2e.py.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from adapters.procs import pid_alive
from app import demo, s3server

PORT = 21000 + 50 * 68

OBJECTS = {"raw/campaign=c/config=k/scenario=s/run=r/repeat=1/manifest.json": b'{"ok": true}',
           "tables/leaderboards/campaign=c/part-0.parquet": os.urandom(300_000),
           "reports/campaign=c/run=r/report.html": "<html>verdict \u2713</html>".encode()}


@pytest.fixture
def settings(tmp_path):
    s = demo.DemoSettings(state=tmp_path / "state", s3_port=PORT)
    yield s
    pid = demo.running_pid(s, "s3")
    if pid:  # the data is thrown away: no need for the server's 16 s graceful stop
        os.killpg(pid, signal.SIGKILL)


def _listing(s: demo.DemoSettings) -> dict[str, str]:
    client = s.s3.client()
    return {o["Key"]: o["ETag"] for page in client.get_paginator("list_objects_v2").paginate(Bucket=s.bucket)
            for o in page.get("Contents", [])}


@pytest.mark.tools
def test_results_survive_stop_a_crash_and_a_new_start_and_only_clean_deletes_them(settings):
    said: list[str] = []
    demo.start_object_store(settings, said.append)
    store = settings.s3.store()
    for key, body in OBJECTS.items():
        store.put(key, body)
    before = _listing(settings)
    assert sorted(before) == sorted(OBJECTS)

    demo.stop(settings, said.append)  # what `make stop` runs
    assert demo.running_pid(settings, "s3") is None
    assert "stay in" in said[-1] and "gone" not in said[-1], said[-1]

    demo.start_object_store(settings, said.append)
    assert _listing(settings) == before
    assert {key: settings.s3.store().get(key) for key in OBJECTS} == OBJECTS

    # A crash (kill -9, as a reboot without a clean shutdown would leave it) loses nothing written before it.
    pid = demo.running_pid(settings, "s3")
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pid_alive(pid) and time.monotonic() < deadline:  # a zombie counts as dead
        time.sleep(0.1)
    demo.start_object_store(settings, said.append)
    assert {key: settings.s3.store().get(key) for key in OBJECTS} == OBJECTS

    said.clear()
    demo.clean(settings, said.append)
    assert len(said) == 1 and said[0].startswith(f"deleting {settings.state}: the local S3 store's"), said
    assert "every stored raw run, table and report" in said[0]
    assert not settings.state.exists() and demo.running_pid(settings, "s3") is None


@pytest.mark.tools
def test_the_server_accepts_only_the_demos_credentials(settings):
    import boto3
    from botocore.exceptions import ClientError

    demo.start_object_store(settings, lambda line: None)
    stranger = boto3.client("s3", endpoint_url=settings.s3_url, region_name="us-east-1",
                            aws_access_key_id="someone", aws_secret_access_key="else")
    with pytest.raises(ClientError) as refused:
        stranger.list_objects_v2(Bucket=settings.bucket)
    assert refused.value.response["Error"]["Code"] == "InvalidAccessKeyId"


def test_the_server_command_binds_loopback_only_on_its_port_block(tmp_path):
    server = s3server.S3Server(tmp_path, 9090, "k", "s", tmp_path / "weed")
    command = server.command()
    assert "-ip.bind=127.0.0.1" in command and "-master.telemetry=false" in command
    ports = sorted(int(arg.split("=")[1]) for arg in command if arg.split("=")[0].endswith((".port", ".grpc"))
                   and arg.split("=")[1].isdigit() and arg.split("=")[1] != "0")
    assert ports == list(range(9090, 9098))
    assert server.identities()["identities"][0]["credentials"] == [{"accessKey": "k", "secretKey": "s"}]


def test_volume_ids_on_disk_read_both_file_names(tmp_path):
    for name in ("rabbit-sizing_3.dat", "12.dat", "12.idx", "notes.dat"):
        (tmp_path / name).write_bytes(b"")
    assert s3server.volume_ids_on_disk(tmp_path) == {3, 12}
    assert s3server.volume_known({"locations": [{"url": "127.0.0.1:1"}]})
    assert not s3server.volume_known({"volumeOrFileId": "9", "error": "volume id 9 not found"})
