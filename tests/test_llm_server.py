"""The reader behind an OpenAI-compatible server (``--llm-url``, :mod:`kbqa.llm.server`).

Offline: URL checks, the clear error for a server that is not there, and the first-token
abstention rule carried out over the API (a stand-in client records the requests). Integration:
``python -m llama_cpp.server`` on 127.0.0.1 serving Gemma 3 270M with the shipped reader
adapter answers 20 real BanglaRQA questions exactly as the same reader in process does.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from math import log
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from conftest import data_dir
from langchain_core.messages import HumanMessage

from kbqa.context import Context
from kbqa.errors import ModelError

pytest.importorskip("langchain_openai", reason="kbqa[server] is not installed (langchain-openai)")

from kbqa.llm.endpoint import served_models
from kbqa.llm.server import GREEDY, ServerChatModel, load_server_chat_model

PHRASE = "Context-এ তথ্য নেই"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("url", ["127.0.0.1:8000/v1", "ftp://127.0.0.1/v1", "http://"])
def test_a_bad_llm_url_is_refused_by_name(url: str) -> None:
    with pytest.raises(ValueError, match="llm_url"):
        Context(llm_url=url)


def test_a_server_that_is_not_there_is_one_clear_error() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(ModelError, match=f"LLM server at {url} cannot be reached"):
        load_server_chat_model(url, "", "gemma3-270m-reader")


class Vocab:
    """A stand-in vocabulary: token 0 ``Context``, 1 ``Cont``, 2 ``ঢাকা``, 3 ``C``, 4 ``▁``, 5 a
    line break, 6 the end of generation."""

    texts = ("Context", "Cont", "ঢাকা", "C", " ", "\n", "")

    def n_vocab(self) -> int:
        return len(self.texts)

    def token_eos(self) -> int:
        return 6

    def detokenize(self, ids: list[int]) -> bytes:
        return "".join(self.texts[i] for i in ids).encode()


class Client:
    """Records the completions requests. ``tops`` gives, for what follows the prompt ``q`` (""
    at first, `` `` after a lead-in), the top log-probabilities of the next token; the server's
    greedy token is the likeliest one ``logit_bias`` leaves (a stop sequence or the end, ``""``,
    gives ``""`` and finish reason ``stop``). A stream yields `` শহর``."""

    def __init__(self, tops: dict[str, dict[str, float]]) -> None:
        self.tops = tops
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def generate(self, prompts: list[str], **kw: Any) -> Any:
        self.calls.append(("generate", {"prompt": prompts[0], **kw}))
        top = self.tops[prompts[0].removeprefix("q")]
        banned = {Vocab.texts[int(t)] for t in kw.get("logit_bias", {})}
        text = max((t for t in top if t not in banned), key=top.__getitem__, default="")
        text = "" if text in (kw.get("stop") or []) else text
        info = {"finish_reason": "length" if text else "stop", "logprobs": {"top_logprobs": [top]}}
        return SimpleNamespace(generations=[[SimpleNamespace(text=text, generation_info=info)]])

    def stream(self, prompt: str, **kw: Any) -> Iterator[str]:
        self.calls.append(("stream", {"prompt": prompt, **kw}))
        yield from (" শ", "হর")


def served(tops: dict[str, dict[str, float]]) -> tuple[ServerChatModel, Client]:
    model = ServerChatModel(
        model_name="gemma3-270m-reader", base_url="http://x/v1", served_name="r",
        prompt_style="tuned", reader_abstention_threshold=0.9,
    )  # fmt: skip
    client = Client(tops)
    model._vocab, model._client = Vocab(), client
    return model, client


def ask(model: ServerChatModel, threshold: float = 0.9) -> tuple[str, float | None]:
    """The streamed reply and the probability that came with it."""
    settings = {"abstention_threshold": threshold, "abstention_phrase": PHRASE}
    chunks = list(model.stream([HumanMessage("q")], stop=["\n"], max_tokens=7, **settings))
    told = [c.response_metadata["abstention_probability"] for c in chunks
            if "abstention_probability" in c.response_metadata]  # fmt: skip
    assert len(told) == 1  # said once
    return "".join(str(c.content) for c in chunks), told[0]


def test_a_likely_abstention_is_the_phrase_without_generating() -> None:
    model, client = served({"": {"Context": log(0.7), "Cont": log(0.25), "ঢাকা": -3.0}})
    reply = model.invoke([HumanMessage("q")], abstention_threshold=0.9, abstention_phrase=PHRASE)
    assert reply.content == PHRASE
    assert reply.response_metadata["abstention_probability"] == pytest.approx(0.95)
    assert [name for name, _ in client.calls] == ["generate"]
    assert client.calls[0][1]["max_tokens"] == 1 and client.calls[0][1]["extra_body"] == GREEDY


def test_below_the_threshold_the_reply_goes_on_from_its_first_token() -> None:
    # "C" begins the phrase too: 0.3 + 0.1
    model, client = served({"": {"ঢাকা": log(0.5), "Context": log(0.3), "C": log(0.1)}})
    reply, p = ask(model)
    assert reply == "ঢাকা শহর" and p == pytest.approx(0.4)
    _, (name, rest) = client.calls
    assert name == "stream" and rest["prompt"] == "qঢাকা" and "logit_bias" not in rest
    assert rest["stop"] == ["\n"] and rest["max_tokens"] == 6 and rest["extra_body"] == GREEDY


def test_a_greedy_start_of_the_phrase_is_asked_again_with_every_start_banned() -> None:
    model, client = served({"": {"Context": log(0.6), "ঢাকা": log(0.3), "C": log(0.05)}})
    reply, p = ask(model)
    assert reply == "ঢাকা শহর" and p == pytest.approx(0.65)
    assert [name for name, _ in client.calls] == ["generate", "generate", "stream"]
    # every start of the phrase, the line break (a stop sequence) and the end of generation
    assert client.calls[1][1]["logit_bias"] == {str(t): -100 for t in (0, 1, 3, 5, 6)}


def test_a_lone_space_first_is_a_lead_in_after_which_the_decision_is_taken_again() -> None:
    tops = {"": {" ": log(0.8), "ঢাকা": log(0.1), "Context": log(0.05)},
            " ": {"Context": log(0.9), "ঢাকা": log(0.05)}}  # fmt: skip
    model, client = served(tops)
    reply, p = ask(model, 0.9)
    assert p == pytest.approx(0.05 + 0.8 * 0.9) and reply == " ঢাকা শহর"
    assert client.calls[-1][1]["prompt"] == "q ঢাকা" and client.calls[-1][1]["max_tokens"] == 5
    model, client = served(tops)
    assert ask(model, 0.7) == (PHRASE, pytest.approx(0.77))


def test_ending_before_a_word_counts_as_abstaining() -> None:
    tops = {"": {" ": log(0.6), "ঢাকা": log(0.3)}, " ": {"\n": log(0.7), "ঢাকা": log(0.2)}}
    model, client = served(tops)
    reply, p = ask(model, 0.9)
    assert p == pytest.approx(0.6 * 0.7) and reply == " ঢাকা শহর"
    assert "logit_bias" in client.calls[2][1]  # the line break was asked again, banned
    model, client = served(tops)
    assert ask(model, 0.4) == (PHRASE, pytest.approx(0.42))


def test_at_threshold_1_a_served_reader_never_abstains() -> None:
    model, _client = served({"": {"Context": 0.0, "ঢাকা": -30.0}})  # p rounds to 1
    assert ask(model, 1.0)[0] == "ঢাকা শহর"


def test_without_a_threshold_one_request_and_no_bias() -> None:
    model, client = served({})
    assert model.invoke([HumanMessage("q")]).content == " শহর"
    assert [name for name, _ in client.calls] == ["stream"]
    assert "logit_bias" not in client.calls[0][1]


class NoLogprobsClient(Client):
    """A server started without ``--logits_all``: it refuses ``logprobs`` (llama_cpp.server
    answers 500) or leaves them out."""

    def __init__(self, refuse: bool) -> None:
        super().__init__({})
        self.refuse = refuse

    def generate(self, prompts: list[str], **kw: Any) -> Any:
        self.calls.append(("generate", kw))
        if self.refuse:
            raise RuntimeError("Error code: 500 - logits_all must be True to use logprobs")
        return SimpleNamespace(generations=[[SimpleNamespace(generation_info={})]])


@pytest.mark.parametrize("refuse", [True, False], ids=["refused", "left-out"])
def test_a_server_without_logprobs_is_an_error_that_says_how_to_start_it(refuse: bool) -> None:
    model, _client = served({})
    model._client = NoLogprobsClient(refuse)
    with pytest.raises(ModelError, match=r"--logits_all true.*--abstention-threshold 0"):
        model.invoke([HumanMessage("q")], abstention_threshold=0.9, abstention_phrase=PHRASE)
    assert [name for name, _ in model._client.calls] == ["generate"]  # no answer guessed


class BrokenClient(Client):
    """A server whose reply is not JSON: the client raises ``json.JSONDecodeError``, a
    ``ValueError``."""

    def stream(self, prompt: str, **kw: Any) -> Iterator[str]:
        self.calls.append(("stream", kw))
        raise json.JSONDecodeError("Expecting value", "not json at all", 0)


def test_a_reply_that_is_not_json_is_a_model_error_naming_the_server() -> None:
    # a ValueError would read, in the generate node, as a prompt that does not fit (the
    # caller's to fix, so the run stops); a ModelError lets the extractor answer instead
    model, _client = served({})
    model._client = BrokenClient({})
    with pytest.raises(ModelError, match=r"server at http://x/v1 failed: JSONDecodeError") as err:
        model.invoke([HumanMessage("q")])
    assert not isinstance(err.value, ValueError)


class StandIn(http.server.BaseHTTPRequestHandler):
    """A stand-in OpenAI-compatible server: lists model ``r`` at ``/v1/models`` only (as
    llama_cpp.server does) and 404s every other GET; subclasses add ``do_POST``."""

    def do_GET(self) -> None:
        found = self.path == "/v1/models"
        body = json.dumps(
            {"object": "list", "data": [{"id": "r", "object": "model"}]} if found else {}
        )
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


@contextlib.contextmanager
def stand_in(handler: type[StandIn]) -> Iterator[str]:
    """Serve ``handler`` on 127.0.0.1 in a thread; yields the server's root URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_a_server_that_never_replies_fails_after_the_timeout_without_a_retry() -> None:
    # a stand-in server lists its model, then never answers a completion
    posts: list[float] = []
    release = threading.Event()

    class Hang(StandIn):
        def do_POST(self) -> None:
            posts.append(time.monotonic())
            release.wait(30)

    with stand_in(Hang) as root:
        url = root + "/v1"
        try:
            model = load_server_chat_model(url, "", "gemma3-270m-reader", timeout=1.0)
            started = time.monotonic()
            with pytest.raises(ModelError, match=f"server at {url} failed: .*Timeout"):
                model.invoke([HumanMessage("q")])
            assert time.monotonic() - started < 10
            assert len(posts) == 1  # one request: no retry
        finally:
            release.set()


def test_the_model_list_request_keeps_the_llm_timeout() -> None:
    release = threading.Event()

    class SlowList(StandIn):
        def do_GET(self) -> None:
            release.wait(30)

    with stand_in(SlowList) as root:
        try:
            started = time.monotonic()
            with pytest.raises(ModelError, match="cannot be reached"):
                load_server_chat_model(root + "/v1", "", "gemma3-270m-reader", timeout=0.5)
            assert time.monotonic() - started < 5  # not the 10 s of the model list's default
        finally:
            release.set()


def test_a_url_without_v1_is_told_so() -> None:
    with stand_in(StandIn) as root:
        with pytest.raises(ModelError, match=f"{root} answered 404 at /models; .* end in /v1"):
            load_server_chat_model(root, "", "gemma3-270m-reader")
        assert served_models(root + "/v1") == ["r"]


def test_the_llm_timeout_is_a_checked_setting() -> None:
    assert Context().llm_timeout == 300.0
    for bad in (0, -1, float("inf"), 4000):
        with pytest.raises(ValueError, match="llm_timeout"):
            Context(llm_timeout=bad)


def test_a_served_reader_grounds_by_snapping() -> None:
    assert Context(llm_url="http://127.0.0.1:1/v1").grounding_mode == "snap"
    assert Context().grounding_mode == "constrained"


# --- integration: llama_cpp.server with the real reader -------------------------------------

N_QUESTIONS = 20


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip("fastapi", reason="llama-cpp-python[server] is not installed")
    from kbqa.llm.models import resolve_adapter, resolve_model

    base, _ = resolve_model("gemma3-270m-reader")
    adapter = resolve_adapter("gemma3-270m-reader")
    assert adapter is not None
    port = free_port()
    args = [sys.executable, "-m", "llama_cpp.server", "--model", str(base), "--lora_path",
            str(adapter[0]), "--model_alias", "reader", "--n_ctx", "4096", "--host",
            "127.0.0.1", "--port", str(port)]  # fmt: skip
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("w") as sink:  # a pipe would fill up with llama.cpp's load messages
        proc = subprocess.Popen(args, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        import httpx

        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not start: {log.read_text()[-2000:]}")
            try:
                if httpx.get(url + "/models", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def bangla_questions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """A BM25 index of the pages of 20 BanglaRQA validation questions (seed 0) and 30 others."""
    from kbqa.corpus.loaders import load_documents
    from kbqa.embedders import NoEmbedder
    from kbqa.evals.datasets import load_questions
    from kbqa.index import build_index

    data = data_dir()
    if data is None:
        pytest.skip("real data not found: set KBQA_DATA_DIR or place shared/data beside the repo")
    questions = load_questions(data / "bn" / "banglarqa_validation.qa.jsonl")
    picked = random.Random(0).sample(questions, N_QUESTIONS)
    pages = {q.doc_id for q in picked} | set(
        random.Random(1).sample(sorted({q.doc_id for q in questions if q.doc_id}), 30)
    )
    docs = [
        d
        for d in load_documents(data / "bn" / "bnwiki_kb.jsonl", skip_bad_lines=True)
        if d.doc_id in pages
    ]
    out = tmp_path_factory.mktemp("served") / "index"
    build_index(docs, out, NoEmbedder(), progress=False)
    return out, [q.question for q in picked]


@pytest.mark.integration
def test_served_reader_answers_as_in_process(
    llama_server: str, bangla_questions: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """20 questions, temperature 0: the same final answers, and the same streamed reply."""
    from kbqa.api import KBQA
    from kbqa.llm.chat import LlamaCppChatModel

    index, questions = bangla_questions
    # joint: the streamed reply below is the reader's (per-hit readings are not streamed)
    settings = {"grounding": "snap", "web_search": "off", "reading": "joint"}
    # llama_cpp.server always reuses the last prompt's cached prefix (it has no option not to),
    # where kbqa in process evaluates each prompt whole; the same arithmetic on both sides
    # compares the client path (HTTP, streaming, parsing) and not batch rounding
    monkeypatch.setattr(LlamaCppChatModel, "_forget_previous_prompt", lambda self: None)
    local = KBQA.from_index(index, **settings)
    from kbqa.resources import chat_model_for

    chat_model_for(local.context)._llama.reset()  # type: ignore[attr-defined]  # fresh, as the server
    remote = KBQA.from_index(index, llm_url=llama_server, llm_model="reader", **settings)
    pairs = [(local.ask(q), remote.ask(q)) for q in questions]
    differ = [(a.question, a.answer, b.answer) for a, b in pairs if a.answer != b.answer]
    assert not differ, json.dumps(differ, ensure_ascii=False)
    assert [a.route for a, _ in pairs] == [b.route for _, b in pairs]
    assert sum(not a.abstained for a, _ in pairs) >= 5
    streamed = [e.text for e in remote.stream(questions[0]) if e.kind == "token"]
    assert streamed and "\ufffd" not in "".join(streamed)


@pytest.mark.integration
def test_a_model_the_server_does_not_serve_is_refused(llama_server: str) -> None:
    with pytest.raises(ModelError, match="serves reader, not 'qwen'"):
        load_server_chat_model(llama_server, "qwen", "gemma3-270m-reader")


class _Dripping(StandIn):
    """A server that starts a reply and never finishes it: ``drip`` writes a little every
    0.3 s until the test releases it."""

    release = threading.Event()

    def drip(self) -> None:
        raise NotImplementedError

    def do_POST(self) -> None:
        try:
            self.start()
            while not self.release.wait(0.3):
                self.drip()
                self.wfile.flush()
        except OSError:
            return

    def start(self) -> None:
        raise NotImplementedError


class _HeaderDrip(_Dripping):
    def start(self) -> None:
        self.wfile.write(b"HTTP/1.1 200 OK\r\n")

    def drip(self) -> None:
        self.wfile.write(b"X-Slow: 1\r\n")  # the headers never end


class _KeepAliveDrip(_Dripping):
    def start(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()

    def drip(self) -> None:
        self.wfile.write(b": keep-alive\n\n")  # a comment line: no event, ever


@pytest.mark.parametrize("server", [_KeepAliveDrip, _HeaderDrip])
def test_the_llm_timeout_is_a_deadline_for_a_whole_reply(server: type[_Dripping]) -> None:
    """Issue 34 item 9: a server streaming keep-alive comments every 2 s ran past 100 s with
    --llm-timeout 5 (httpx's timeout is per read); a break-it trial: one sending a header line
    every 0.7 s ran past 250 s with --llm-timeout 6 (the deadline covered only the body). The
    call now fails with the deadline's reason (a hang would hang the test)."""
    server.release = threading.Event()
    with stand_in(server) as root:
        try:
            model = load_server_chat_model(root + "/v1", "", "gemma3-270m-reader", timeout=2.0)
            with pytest.raises(ModelError, match=r"no whole reply within the --llm-timeout of 2 s"):
                list(model.stream([HumanMessage("q")], abstention_threshold=0))
        finally:
            server.release.set()
