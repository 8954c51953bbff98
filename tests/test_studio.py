"""LangGraph Studio's dev server (``langgraph dev``) serves the graph offline on 127.0.0.1: the
SDK lists the assistant, fetches the graph with every node and the Context fields as settings,
streams a run, completes two runs started at once and cancels a third mid-run.

The reader is a slow fake (``KBQA_MODEL=fake/slow:...``), so the test is quick and the third run
is still running when it is cancelled; ``tests/test_chat.py`` runs the real model.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
LANGGRAPH = Path(sys.executable).with_name("langgraph")
NODES = {"classify", "retrieve", "generate", "check_abstention", "retry", "cross_check", "verify",
         "fallback", "web_search", "extract", "finalize"}  # fmt: skip

pytestmark = pytest.mark.skipif(
    not LANGGRAPH.is_file() or shutil.which("langgraph", path=str(LANGGRAPH.parent)) is None,
    reason='the dev server is not installed (pip install "langgraph-cli[inmem]", in the dev extra)',
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(both_index: Path, tmp_path: Path):  # type: ignore[no-untyped-def]
    port = free_port()
    env = {**os.environ, "KBQA_INDEX": str(both_index), "KBQA_MODEL": "fake/slow:1",
           "HF_HUB_OFFLINE": "1", "KBQA_WEB_SEARCH": "off",
           "LANGGRAPH_CLI_NO_ANALYTICS": "1"}  # fmt: skip
    log = (tmp_path / "server.log").open("w")
    proc = subprocess.Popen(
        [str(LANGGRAPH), "dev", "--no-browser", "--no-reload", "--host", "127.0.0.1",
         "--port", str(port)],
        cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"{url}/ok", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.terminate()
        pytest.fail("langgraph dev did not start: " + (tmp_path / "server.log").read_text()[-2000:])
    yield url
    proc.terminate()
    proc.wait(timeout=20)
    assert "BlockingError" not in (tmp_path / "server.log").read_text()


def test_the_dev_server_serves_streams_and_cancels(server: str) -> None:
    from langgraph_sdk import get_client

    async def scenario() -> None:
        client = get_client(url=server)
        assistants = await client.assistants.search()
        assert [a["graph_id"] for a in assistants] == ["kbqa"]
        aid = assistants[0]["assistant_id"]
        drawn = await client.assistants.get_graph(aid)
        assert {n["id"] for n in drawn["nodes"]} >= NODES
        schemas = await client.assistants.get_schemas(aid)
        settings = set(schemas["context_schema"]["properties"])
        assert {"index_dir", "model", "k", "verify", "web_search"} <= settings

        thread = await client.threads.create()
        sequence = []
        async for part in client.runs.stream(
            thread["thread_id"], aid, input={"question": "বাংলাদেশের রাজধানী কোথায়?"},
            stream_mode="updates", context={"cross_check": "off", "max_retries": 0},
        ):  # fmt: skip
            assert part.event != "error", part.data
            if part.event == "updates":
                sequence.extend(part.data)
        assert sequence == ["classify", "retrieve", "generate", "check_abstention", "finalize"]

        # two at once, on two threads: both finish (the shared model is locked, not frozen)
        threads = [await client.threads.create() for _ in range(2)]
        outs = await asyncio.gather(*(
            client.runs.wait(t["thread_id"], aid, input={"question": q},
                             context={"cross_check": "off", "max_retries": 0})
            for t, q in zip(threads, ["বাংলাদেশের রাজধানী কোথায়?", "Where is Paris?"], strict=True)
        ))  # fmt: skip
        assert all(out["route"][-1] == "finalize" and out["answer"] for out in outs)

        # a third is cancelled mid-run
        third = await client.threads.create()
        run = await client.runs.create(third["thread_id"], aid,
                                       input={"question": "পদ্মা কোন দেশের নদী?"})  # fmt: skip
        for _ in range(50):
            if (await client.runs.get(third["thread_id"], run["run_id"]))["status"] == "running":
                break
            await asyncio.sleep(0.1)
        await client.runs.cancel(third["thread_id"], run["run_id"], wait=True)
        status = (await client.runs.get(third["thread_id"], run["run_id"]))["status"]
        assert status in ("interrupted", "error"), status

    asyncio.run(scenario())
