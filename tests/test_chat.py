"""``kbqa chat`` through a pseudo-terminal (pexpect), with fake models: streaming, citations,
commands, a follow-up, Ctrl-C, Ctrl-D and a resumed thread."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver

from kbqa.graph import build_graph

pexpect = pytest.importorskip("pexpect")

KBQA = str(Path(sys.executable).with_name("kbqa"))
PROMPT = r"(?<!-)> "


def spawn(index: Path, db: Path, *extra: str, model: str) -> pexpect.spawn:
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "KBQA_WEB_SEARCH": "off",
        "COLUMNS": "200",
        "TERM": "dumb",
    }  # fmt: skip  (no colour codes between the words)
    # one prompt a reading: a scripted reader gives one answer a question, and its tokens stream
    args = ["chat", "--index", str(index), "--embedder", "fake/hash", "--model", model,
            "--db", str(db), "--cross-check", "off", "--reading", "joint", *extra]  # fmt: skip
    return pexpect.spawn(KBQA, args, env=env, encoding="utf-8", timeout=60, dimensions=(40, 200))


def thread_of(child: pexpect.spawn, db: Path | None = None) -> str:
    # the banner's resume command names the same index, settings and thread store
    child.expect(r"resume it with: \S*kbqa chat --index \S+ (.*?)--thread (\w+) --db (\S+)\r?\n")
    assert "--embedder fake/hash" in child.match.group(1)  # a setting that is not the default
    if db is not None:
        assert child.match.group(3) == str(db)
    return str(child.match.group(2))


def test_a_conversation_with_a_followup_then_resumed(both_index: Path, tmp_path: Path) -> None:
    db = tmp_path / "chat.sqlite"
    child = spawn(both_index, db, model="fake/script:১৯১৩|কলকাতায়")
    thread = thread_of(child, db)
    child.expect(PROMPT)
    child.sendline("রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?")
    child.expect("generate: ১৯১৩")  # streamed from the generate node
    child.expect("answer: ১৯১৩")
    child.expect(r"\[1\] রবীন্দ্রনাথ ঠাকুর \(doc d2\)")
    child.expect("তিনি ১৯১৩ সালে নোবেল পুরস্কার পান")  # the sentence it came from
    child.expect(PROMPT)
    child.sendline("আর তিনি কোথায় জন্মগ্রহণ করেন?")
    child.expect("· classify: follow-up rewritten")  # the stage named once
    child.expect(r"understood as: রবীন্দ্রনাথ ঠাকুর কোথায় জন্মগ্রহণ করেন\?")
    child.expect("answer: কলকাতায়")
    child.expect(PROMPT)
    child.sendline("/route")
    child.expect("classify -> classify: follow-up rewritten -> retrieve")
    child.expect(r"finalize\s+\d+\.\d{3} s")
    child.sendline("/k 0")
    child.expect("k not changed: k must be a positive integer")
    child.sendline("/nonsense")
    child.expect("unknown command /nonsense")
    child.sendcontrol("c")  # at the prompt: nothing to stop, the session goes on
    child.sendline("/help")
    child.expect("/history")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0

    again = spawn(both_index, db, "--thread", thread, model="fake/script:x")
    again.expect(f"resumed thread {thread}")
    again.expect(PROMPT)
    again.sendline("/history")
    again.expect("1. রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান\\?")
    again.expect("-> ১৯১৩")
    again.expect(r"2\. আর তিনি কোথায় জন্মগ্রহণ করেন\? \(understood as: রবীন্দ্রনাথ ঠাকুর কোথায়")
    again.expect("-> কলকাতায়")
    again.sendline("/quit")
    again.expect(pexpect.EOF)


def test_ctrl_c_stops_an_answer_not_the_session(both_index: Path, tmp_path: Path) -> None:
    child = spawn(both_index, tmp_path / "c.sqlite", "--max-retries", "0", model="fake/slow:5")
    child.expect(PROMPT)
    child.sendline("বাংলাদেশের রাজধানী কোথায়?")
    child.expect("· retrieve")
    child.sendcontrol("c")
    child.expect(r"\(stopped\)", timeout=20)
    child.expect(PROMPT)
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_unknown_thread_and_json_output(both_index: Path, tmp_path: Path) -> None:
    db = tmp_path / "j.sqlite"
    bad = subprocess.run([KBQA, "chat", "--index", str(both_index), "--embedder", "fake/hash",
                          "--model", "fake/abstain", "--db", str(db), "--thread", "nope"],
                         capture_output=True, text=True, input="")  # fmt: skip
    assert bad.returncode == 2 and "no thread 'nope'" in bad.stderr
    empty = subprocess.run([KBQA, "chat", "--index", str(both_index), "--db", " "],
                           capture_output=True, text=True, input="")  # fmt: skip
    assert empty.returncode == 2 and "--db is empty" in empty.stderr, empty.stderr
    done = subprocess.run(
        [KBQA, "chat", "--index", str(both_index), "--embedder", "fake/hash", "--model",
         "fake/script:ঢাকা", "--db", str(db), "--json", "--cross-check", "off"],
        capture_output=True, text=True, input="বাংলাদেশের রাজধানী কোথায়?\n/quit\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [json.loads(x) for x in done.stdout.splitlines() if x.startswith("{")]
    assert len(lines) == 1 and lines[0]["answer"] == "ঢাকা" and lines[0]["sources"]
    assert lines[0]["why"] is None  # an answer: no abstention reason
    readings = lines[0]["readings"]  # --reading each (the default): every hit's reading
    assert len(readings) > 1 and {r["answer"] for r in readings} == {"ঢাকা"}
    assert re.fullmatch(r"\w{8}", lines[0]["thread"])


@pytest.mark.integration
def test_a_real_conversation_streams_whole_characters(both_index: Path, tmp_path: Path) -> None:
    """The default reader (Gemma 3 270M + the shipped adapter, llama.cpp): a Bangla question,
    a follow-up, an English question; what was streamed is the reader's whole reply, with no
    Bangla character broken across tokens."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "KBQA_WEB_SEARCH": "off", "TERM": "dumb"}
    db = tmp_path / "real.sqlite"
    # --reading joint: the default's per-hit readings are not streamed
    args = ["chat", "--index", str(both_index), "--embedder", "fake/hash", "--db", str(db),
            "--reading", "joint"]  # fmt: skip
    child = pexpect.spawn(KBQA, args, env=env, encoding="utf-8", timeout=180, dimensions=(40, 200))
    thread = thread_of(child)
    streamed: list[str] = []
    for question in ("রবীন্দ্রনাথ ঠাকুর কত সালে নোবেল পুরস্কার পান?",
                     "আর তিনি কোথায় জন্মগ্রহণ করেন?", "Which river does Paris lie on?"):  # fmt: skip
        child.expect(PROMPT)
        child.sendline(question)
        child.expect(r"generate: ([^\r\n]*)\r\n")
        streamed.append(child.match.group(1))
        child.expect(r"answer: ([^\r\n]*)")
    child.expect(PROMPT)
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    again = spawn(both_index, db, "--thread", thread, "--json", model="gemma3-270m-reader")
    again.sendline("/quit")
    again.expect(pexpect.EOF)
    saver = SqliteSaver(sqlite3.connect(str(db), check_same_thread=False))
    history = (
        build_graph(checkpointer=saver)
        .get_state({"configurable": {"thread_id": thread}})
        .values["history"]
    )
    assert len(history) == 3
    assert history[1]["question"].startswith("রবীন্দ্রনাথ ঠাকুর")  # the follow-up, rewritten
    assert all("\ufffd" not in t["answer"] for t in history)
    assert all(text.strip() and "\ufffd" not in text for text in streamed), streamed


@pytest.mark.integration
def test_streamed_pieces_join_to_the_whole_reply() -> None:
    """llama.cpp may split one UTF-8 character across tokens: the streamed pieces must still
    join to exactly the reply a whole generation gives."""
    from kbqa.llm.models import load_chat_model
    from kbqa.prompts import ANSWER_STOP, Passage, render_answer_prompt

    model = load_chat_model("gemma3-270m-reader", 2048, 0)
    passage = Passage("রবীন্দ্রনাথ ঠাকুর", "রবীন্দ্রনাথ ঠাকুর ১৮৬১ সালে কলকাতার জোড়াসাঁকোয় জন্মগ্রহণ "
                      "করেন। তিনি ১৯১৩ সালে সাহিত্যে নোবেল পুরস্কার পান।")  # fmt: skip
    for question in ("রবীন্দ্রনাথ ঠাকুর কোথায় জন্মগ্রহণ করেন?", "তিনি কবে নোবেল পান?"):
        messages = render_answer_prompt(question, [passage], style="tuned")
        whole = str(model.invoke(messages, stop=ANSWER_STOP, max_tokens=24).content)
        pieces = [str(c.content) for c in model.stream(messages, stop=ANSWER_STOP, max_tokens=24)]
        assert "".join(pieces) == whole and "\ufffd" not in whole and whole.strip()


def _chat(index: Path, *args: str, stdin: str = "/quit\n") -> subprocess.CompletedProcess[str]:
    return subprocess.run([KBQA, "chat", "--index", str(index), "--embedder", "fake/hash",
                           "--model", "fake/script:ঢাকা", "--cross-check", "off", *args],
                          capture_output=True, text=True, input=stdin)  # fmt: skip


def test_chat_says_what_the_reader_said_why_it_abstained_and_the_web_note_once(
    both_index: Path, tmp_path: Path
) -> None:
    questions = ["বাংলাদেশের রাজধানী কোথায়?", "মঙ্গল গ্রহের প্রথম মেয়রের ফোন নম্বর কত?",
                 "বৃহস্পতি গ্রহের রাজার নাম কী?"]  # fmt: skip
    done = subprocess.run(
        [KBQA, "chat", "--index", str(both_index), "--embedder", "fake/hash", "--model",
         "fake/script:প্যারিস|x@0.99", "--abstention-threshold", "0.5", "--cross-check-rules",
         "all", "--db",
         str(tmp_path / "w.sqlite")],
        capture_output=True, text=True, input="\n".join([*questions, "/quit"]) + "\n",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "reader said: প্যারিস (replaced by cross_check)" in out  # the first answer
    assert out.count("why: the reader found no answer in the passages (p = 0.99)") == 2, out
    assert out.count("passages read (no answer found in them):") == 2, out  # not cited as sources
    assert done.stderr.count("web search is off") == 1, done.stderr  # once, not per abstention


def test_chat_says_when_a_reranker_ordered_the_pool(both_index: Path, tmp_path: Path) -> None:
    """``kbqa ask`` printed the retrieval line and ``kbqa chat`` did not (noted 2026-12-07)."""

    def chat(*extra: str) -> str:
        done = subprocess.run(
            [KBQA, "chat", "--index", str(both_index), "--embedder", "fake/hash", "--model",
             "fake/script:ঢাকা", "--db", str(tmp_path / f"r{len(extra)}.sqlite"), *extra],
            capture_output=True, text=True, input="বাংলাদেশের রাজধানী কোথায়?\n/quit\n",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "retrieval: " in (out := chat("--reranker", "lexical")) and "+ rerank (lexical)" in out
    assert "retrieval: " not in chat()  # the default retrieval says nothing


def test_a_bad_db_is_refused_and_left_as_it_was(both_index: Path, tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("create table checkpoints (id integer, payload text)")
    before = other.read_bytes()
    cases = [
        (text, "is not a SQLite database"),
        (other, "another program's"),
        (tmp_path, "is a directory"),
        (text / "x.db", "cannot create"),
    ]
    for db, message in cases:
        done = _chat(both_index, "--db", str(db))
        assert done.returncode == 2 and message in done.stderr, done.stderr
    assert other.read_bytes() == before and text.read_text() == "not a database\n"


def test_json_mode_answers_every_line_and_a_thread_has_one_chat(
    both_index: Path, tmp_path: Path
) -> None:
    db = tmp_path / "j.sqlite"
    done = _chat(both_index, "--db", str(db), "--json",
                 stdin="বাংলাদেশের রাজধানী কোথায়?\n/k abc\n/nonsense\n/quit\n")  # fmt: skip
    lines = [json.loads(x) for x in done.stdout.splitlines()]
    assert [sorted(set(x) - {"thread"})[0] for x in lines][1:] == ["error", "error"]
    assert "k must be a positive integer, got 'abc'" in lines[1]["error"]
    thread = lines[0]["thread"]
    holder = spawn(both_index, db, "--thread", thread, model="fake/script:ঢাকা")
    holder.expect(PROMPT)
    assert list(tmp_path.glob("j.sqlite.*.lock")) != [], "the holder's lock file is there"
    second = _chat(both_index, "--db", str(db), "--thread", thread)
    assert second.returncode == 2 and "open in another kbqa chat" in second.stderr
    holder.sendline("/quit")
    holder.expect(pexpect.EOF)
    assert _chat(both_index, "--db", str(db), "--thread", thread).returncode == 0
    assert list(tmp_path.glob("j.sqlite.*.lock")) == [], "chats leave no lock file behind"


def test_a_lock_on_a_removed_lock_file_is_taken_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbqa.threads import sqlite as threads

    db = tmp_path / "c.sqlite"
    first = threads.lock_thread(db, "t")
    real_flock, calls = threads.fcntl.flock, []

    def flock_after_release(handle: Any, op: int) -> None:
        # the first holder releases (and removes the file) between this open and this lock
        if not calls:
            threads.release_thread(first)
        calls.append(op)
        real_flock(handle, op)

    monkeypatch.setattr(threads.fcntl, "flock", flock_after_release)
    second = threads.lock_thread(db, "t")
    monkeypatch.setattr(threads.fcntl, "flock", real_flock)
    assert len(calls) == 2, "the lock on the removed file was dropped and taken again"
    path = tmp_path / "c.sqlite.t.lock"
    assert os.stat(path).st_ino == os.fstat(second.fileno()).st_ino
    with pytest.raises(ValueError, match="open in another kbqa chat"):
        threads.lock_thread(db, "t")
    threads.release_thread(second)
    assert not path.exists()


@pytest.mark.parametrize("thread", ["a/b", "../up", "x" * 300, "ঢাকা"])
def test_any_thread_name_can_be_locked(tmp_path: Path, thread: str) -> None:
    from kbqa.threads import sqlite as threads

    db = tmp_path / "c.sqlite"
    held = threads.lock_thread(db, thread)
    with pytest.raises(ValueError, match="open in another kbqa chat"):
        threads.lock_thread(db, thread)
    assert [p.parent for p in tmp_path.glob("*.lock")] == [tmp_path], "beside the database"
    threads.release_thread(held)
    assert list(tmp_path.glob("*.lock")) == []


def test_a_db_in_a_read_only_folder_is_named_as_such(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kbqa.threads import sqlite as threads

    db = tmp_path / "x.sqlite"
    threads.open_db(db).close()

    def read_only(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Read-only file system")

    # a read-only mount refuses even root, which chmod does not
    monkeypatch.setattr("kbqa.paths.tempfile.TemporaryFile", read_only)
    with pytest.raises(ValueError, match=f"its folder {tmp_path} is not writable"):
        threads.open_db(db)


def test_sigterm_releases_the_thread(both_index: Path, tmp_path: Path) -> None:
    import signal

    db = tmp_path / "t.sqlite"
    holder = spawn(both_index, db, model="fake/script:ঢাকা")
    holder.expect(PROMPT)
    assert len(list(tmp_path.glob("t.sqlite.*.lock"))) == 1
    holder.kill(signal.SIGTERM)
    holder.expect(pexpect.EOF)
    assert list(tmp_path.glob("t.sqlite.*.lock")) == [], "the lock file goes with the chat"


def test_a_thread_held_through_one_name_is_held_through_a_symbolic_link(tmp_path: Path) -> None:
    """Issue 34 item 6: --db through a symlink to the same file opened a held thread."""
    from kbqa.threads import sqlite as threads

    db = tmp_path / "real" / "c.sqlite"
    threads.open_db(db).close()
    link = tmp_path / "link.sqlite"
    link.symlink_to(db)
    held = threads.lock_thread(db, "t")
    with pytest.raises(ValueError, match="open in another kbqa chat"):
        threads.lock_thread(link, "t")
    threads.release_thread(held)
    again = threads.lock_thread(link, "t")  # released: the link's name takes it
    assert [p.parent for p in tmp_path.rglob("*.lock")] == [db.parent], "beside the file itself"
    threads.release_thread(again)


def test_a_thread_held_through_one_name_is_held_through_a_hard_link(tmp_path: Path) -> None:
    """Issue 34 item 6: a hard link, another name of the same file, opened a held thread."""
    from kbqa.threads import sqlite as threads

    db = tmp_path / "real" / "c.sqlite"
    threads.open_db(db).close()
    (tmp_path / "elsewhere").mkdir()
    for link in (tmp_path / "real" / "same-folder.sqlite", tmp_path / "elsewhere" / "c.sqlite"):
        os.link(db, link)
        held = threads.lock_thread(db, "t")
        with pytest.raises(ValueError, match=r"open in another kbqa chat .*another name"):
            threads.lock_thread(link, "t")
        other = threads.lock_thread(link, "another-thread")  # other threads stay free
        threads.release_thread(other)
        threads.release_thread(held)
        again = threads.lock_thread(link, "t")  # released: the link's name takes it
        threads.release_thread(again)
    assert list(tmp_path.rglob("*.lock")) == []


def test_a_hard_linked_database_is_refused_and_an_odd_path_opens(tmp_path: Path) -> None:
    """A break-it trial: a chat opening a hard link of a database another chat holds made a
    second -wal for it (SQLite: a corruption risk); ``--db //tmp/...`` was read as a URI."""
    from kbqa.threads import sqlite as threads

    db = tmp_path / "real" / "c.sqlite"
    threads.open_db(db).close()
    (tmp_path / "hl").mkdir()
    os.link(db, tmp_path / "hl" / "c.sqlite")
    for name in (db, tmp_path / "hl" / "c.sqlite"):
        with pytest.raises(ValueError, match="has 2 names on the disk"):
            threads.open_db(name)
    (tmp_path / "hl" / "c.sqlite").unlink()
    weird = tmp_path / "a?b#c%20.sqlite"
    for path in (db, weird):
        conn = threads.open_db(path)
        conn.execute("create table checkpoints (thread_id text)")  # a chat database's table
        conn.commit()
        conn.close()
    threads.open_db(Path("/" + str(db))).close()  # //tmp/...: a POSIX path, not a URI's host
    threads.open_db(weird).close()  # checked through its file: URI, ? and # quoted


def test_history_on_a_database_that_breaks_is_one_line(
    both_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 34 item 6: /history on a corrupted database printed a traceback (asking gave a
    clean error)."""
    import sqlite3

    from typer.testing import CliRunner

    from kbqa.cli import app
    from kbqa.cli.chat import Session

    def broken(self: Session, thread: str | None = None) -> dict[str, Any]:
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(Session, "values", broken)
    result = CliRunner().invoke(app, ["chat", "--index", str(both_index), "--embedder",
                                      "fake/hash", "--model", "fake/script:ঢাকা", "--db",
                                      str(tmp_path / "h.sqlite")],
                                input="/history\n/quit\n")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "error: database disk image is malformed" in result.output
    assert result.exception is None
