"""The abstention threshold replayed: what a run would have scored had its reader abstained at
a lower threshold, without running the reader again. Reads a ``kbqa eval`` run directory whose
records hold ``abstention_probability``; prints a table; asserts nothing.

    python benchmarks/threshold_replay.py runs/default-s0 --thresholds 0.5,0.6,0.7,0.8
    python benchmarks/threshold_replay.py OLD_RUN --own 0.9 --thresholds 0.5  # read at 0.9
    python benchmarks/threshold_replay.py EACH_RUN --thresholds 0.5 --set stop_reading_below=0.3

At threshold ``t`` the reader abstains exactly when its probability of beginning the
abstention phrase is ``>= t`` (:class:`kbqa.llm.threshold.AbstentionThreshold`); otherwise every
way of beginning it is masked and it reads on, the same way whatever ``t``. So for any ``t`` at or below the run's own, a
question's first reading is known from the run: the phrase when ``p >= t``, else the answer
it gave. The graph is then run again on each question with a stand-in reader that gives that
reading (the real reader's tokenizer fits the prompt, so the passages are the same): retrieval,
the cross-check and every later stage run for real. A threshold above the run's own would need
answers the reader never gave, so it is refused.

A setting that decides only from what the reader said can be replayed the same way (``--set``):
under ``--reading each``, ``stop_reading_below`` (a sure reading stops the reading) needs every
hit's reading, so the run must have read every hit (``--stop-reading-below 0``). A replay that
needs a reading the run did not record (a run that stopped at a sure hit, replayed at a
threshold under that hit's probability) is refused, not guessed.

Replaying the run's own threshold must give the run's own scores; the first row checks that.
Two readings of one prompt in one process have given probabilities 0.02 apart (llama.cpp reuses
the cached prompt prefix), so a threshold within 0.02 of a question's p can go either way.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from kbqa.context import Context
from kbqa.errors import KBQAError
from kbqa.evals.datasets import load_questions
from kbqa.evals.run_dir import CONFIG_FILE, load_run
from kbqa.evals.runner import evaluate_questions
from kbqa.text import visible_text


class ReplayReader(BaseChatModel):
    """Gives each question's recorded first reading, or the abstention phrase when its
    probability reaches ``threshold``; counts tokens with the real reader."""

    real: Any
    readings: dict[str, list[tuple[str, float]]]
    """By the question as the prompt shows it (format characters dropped, stripped): its first
    reading, or under ``--reading each`` one a hit, given in turn."""
    calls: dict[str, int] = Field(default_factory=dict)
    threshold: float
    phrase: str
    misses: list[str] = Field(default_factory=list)
    """Prompts that held no question of the run (the graph would answer them otherwise)."""
    per_hit: dict[str, int] = Field(default_factory=dict)
    """Questions whose readings are one a hit, with how many records ask them: there is no
    reading past the last one of each record. (Records that ask the same question share one
    list of readings, the last record's: a run's duplicate questions replay approximately.)"""
    beyond: list[str] = Field(default_factory=list)
    """Questions asked for a reading the run did not record (its reading stopped at a sure
    hit before it)."""

    @property
    def _llm_type(self) -> str:
        return "kbqa-replay"

    @property
    def prompt_style(self) -> str:
        return str(getattr(self.real, "prompt_style", "completion"))

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        return int(self.real.get_num_tokens_from_messages(messages))

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        prompt = str(messages[-1].content)
        asked = max((q for q in self.readings if q in prompt), key=len, default=None)
        if asked is None:
            self.misses.append(prompt[-200:])
            raise KeyError("a prompt holds no question of the run")
        turn = self.calls.get(asked, 0)
        self.calls[asked] = turn + 1
        given = self.readings[asked]
        if asked in self.per_hit and turn >= len(given) * self.per_hit[asked]:
            self.beyond.append(asked)
            raise KeyError("a reading the run did not record")
        text, p = given[turn % len(given)]
        reply = self.phrase if p >= self.threshold else text
        message = AIMessage(content=reply, response_metadata={"abstention_probability": p})
        return ChatResult(generations=[ChatGeneration(message=message)])


REPLAYABLE = ("stop_reading_below", "cross_check", "cross_check_rules")
"""Settings ``--set`` may change: they decide from what the reader said, or after it, without
the reader (every other setting changes the prompts, so the recorded readings would not be
those the reader gives)."""


def _first_readings(record: dict[str, Any]) -> list[tuple[str, float]]:
    """A record's first reading ``(answer, p)``, or under ``--reading each`` its readings, one a
    hit in retrieval order (the graph reads them in that order again)."""
    each = record.get("readings") or []
    if each:  # an abstaining reading is given back empty: an abstention in any language
        return [
            ("" if r.get("abstained") else str(r["answer"]), float(r["abstention_probability"]))
            for r in each
        ]
    return [(str(record["stage_answers"][0]["answer"]), float(record["abstention_probability"]))]


def replay(
    run_dir: str,
    thresholds: list[float],
    own: float | None = None,
    save: Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> list[tuple[str, dict[str, Any]]]:
    """``(label, summary)`` for the run as recorded, replayed at its own threshold (``own``, else
    the ``abstention_threshold`` its records hold), and at each of ``thresholds``. With ``save``,
    each replay of ``thresholds`` is kept as a run folder ``save/t<threshold>`` (records and
    summary, as ``kbqa eval`` writes them), for the benchmarks that read runs. ``overrides``
    replace the run's settings in the replays of ``thresholds`` (settings that decide from
    what the reader said, such as ``stop_reading_below``; the own-threshold row keeps the
    run's)."""
    from kbqa.resources import Resources, chat_model_for

    run = load_run(run_dir)
    if not run.records:
        raise SystemExit(f"error: {run_dir} holds no record")
    try:
        config = json.loads((Path(run_dir) / CONFIG_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"error: {run_dir}/{CONFIG_FILE} is unreadable: {exc}") from None
    context = config.get("context") if isinstance(config, dict) else None
    if not isinstance(context, dict) or not config.get("questions"):
        raise SystemExit(f"error: {run_dir}/{CONFIG_FILE} names no settings (context) or no "
                         "questions file: it is not a kbqa eval run's")  # fmt: skip
    settings = {k: v for k, v in context.items() if k in Context.__dataclass_fields__}
    if "stop_reading_below" not in context:  # a run from before the setting read every hit
        settings["stop_reading_below"] = 0.0
    try:
        ctx = Context(**settings)
    except ValueError as exc:
        raise SystemExit(f"error: {run_dir}/{CONFIG_FILE}: {exc}") from None
    missing = [r["qid"] for r in run.records if r.get("abstention_probability") is None]
    if missing:
        raise SystemExit(
            f"error: {len(missing)} records of {run_dir} hold no abstention_probability (first: "
            f"{missing[0]}): run kbqa eval again with a reader that has a threshold"
        )
    real = chat_model_for(ctx)
    recorded = {r.get("abstention_threshold") for r in run.records}
    if own is not None and None not in recorded and recorded != {own}:
        raise SystemExit(f"error: --own {own} is not the threshold the records of {run_dir} were "
                         f"read at ({', '.join(map(str, sorted(recorded)))})")  # fmt: skip
    if own is None and None not in recorded and len(recorded) == 1:
        own = float(recorded.pop())
    if own is None:
        raise SystemExit(
            f"error: the records of {run_dir} do not say which threshold they were read at "
            f"(thresholds recorded: {sorted(recorded, key=str)}): give it with --own"
        )
    above = [t for t in thresholds if t > own]
    if above:
        raise SystemExit(f"error: thresholds above the run's own ({own}) need answers the reader "
                         f"never gave: {', '.join(map(str, above))}")  # fmt: skip
    for n, r in enumerate(run.records, start=1):
        p = r["abstention_probability"]
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0 <= p <= 1:
            raise SystemExit(f"error: record {n} of {run_dir} (qid {r.get('qid')}): "
                             f"abstention_probability must be a number in [0, 1], got {p!r}")  # fmt: skip
        each = r.get("readings", [])
        if not isinstance(each, list) or not all(
            isinstance(e, dict)
            and isinstance(e.get("answer"), str)
            and isinstance(e.get("abstention_probability"), int | float)
            and not isinstance(e.get("abstention_probability"), bool)
            and 0 <= e["abstention_probability"] <= 1
            and isinstance(e.get("abstained", False), bool)
            for e in each
        ):
            raise SystemExit(f"error: record {n} of {run_dir} (qid {r.get('qid')}): readings "
                             "must be a list of objects with an answer (text), an "
                             "abstention_probability in [0, 1] and abstained (true or false), "
                             "as kbqa eval --reading each writes them")  # fmt: skip
        stages = r.get("stage_answers")
        if (
            not isinstance(r.get("question"), str)
            or not isinstance(stages, list)
            or not all(
                isinstance(a, dict) and isinstance(a.get("stage"), str) and "answer" in a
                for a in stages
            )
        ):
            raise SystemExit(f"error: record {n} of {run_dir} (qid {r.get('qid')}): a record "
                             "needs a question (text) and stage_answers (a list of objects with "
                             "stage and answer), as kbqa eval writes them")  # fmt: skip
    generated = [
        r
        for r in run.records
        if r["stage_answers"] and r["stage_answers"][0]["stage"] == "generate"
    ]
    # keyed as the prompt shows the question (kbqa.prompts.answer)
    readings = {visible_text(r["question"]).strip(): _first_readings(r) for r in generated}
    per_hit = collections.Counter(
        visible_text(r["question"]).strip() for r in generated if r.get("readings")
    )
    qids = {r["qid"] for r in run.records}
    questions = [q for q in load_questions(config["questions"]) if q.qid in qids]
    rows: list[tuple[str, dict[str, Any]]] = [("recorded run", run.summary)]

    def replayed_config(t: float) -> dict[str, Any]:  # the run's, at the threshold replayed
        return {
            **config,
            "context": {**context, **(overrides or {}), "abstention_threshold": t},
            "replayed_from": run_dir,
        }

    unreplayable = sorted(set(overrides or {}) - set(REPLAYABLE))
    if unreplayable:
        raise SystemExit(f"error: --set {unreplayable[0]}: only {', '.join(REPLAYABLE)} can be "
                         "replayed (the others change what the reader is asked)")  # fmt: skip
    try:
        changed = dataclasses.replace(ctx, **(overrides or {}))
    except (TypeError, ValueError) as exc:
        raise SystemExit(f"error: --set: {exc}") from None
    note = "".join(f", {k}={v}" for k, v in (overrides or {}).items())
    for n, t in enumerate([own, *thresholds]):
        reader = ReplayReader(real=real, readings=readings, threshold=t, per_hit=dict(per_hit),
                              phrase=ctx.abstention_phrase)  # fmt: skip
        replayed = dataclasses.replace(changed if n else ctx, resources=Resources(reader=reader),
                                       abstention_threshold=t)  # fmt: skip
        with tempfile.TemporaryDirectory() as tmp:
            kept = save / f"t{t:g}" if save is not None and n > 0 else None  # not the own row
            result = evaluate_questions(questions, replayed, kept or tmp, upload=False,
                                        progress=False, config=replayed_config(t) if kept else None)  # fmt: skip
        if reader.misses:
            raise SystemExit(f"error: {len(reader.misses)} prompts held no question of {run_dir} "
                             f"(the last lines of the first: {reader.misses[0][-80:]!r})")  # fmt: skip
        if reader.beyond:
            raise SystemExit(
                f"error: {len(set(reader.beyond))} questions of {run_dir} needed a reading the "
                f"run did not record (the first: {reader.beyond[0][:60]!r}): its reading stopped "
                f"at a sure hit (stop_reading_below {ctx.stop_reading_below:g}); read the run "
                "again with --stop-reading-below 0 (and --abstention-threshold 1.0 to replay any "
                "threshold)"
            )
        label = f"replayed at {t:g}" + (" (its own)" if t == own and n == 0 else "")
        rows.append((label + (note if n else ""), result.summary))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("run", help="a kbqa eval run directory")
    ap.add_argument("--thresholds", default="0.5,0.6,0.7,0.8", help="comma-separated, in (0, 1]")
    ap.add_argument("--own", type=float, default=None,
                    help="the threshold the run read at, for runs recorded before kbqa "
                    "recorded it (default: the records' abstention_threshold)")  # fmt: skip
    ap.add_argument("--save", type=Path, default=None,
                    help="keep each replay of --thresholds as a run folder SAVE/t<threshold> "
                    "(which must not exist yet)")  # fmt: skip
    ap.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                    help=f"a setting for the replays of --thresholds, one of {', '.join(REPLAYABLE)}"
                    " (e.g. stop_reading_below=0.02); VALUE is read as JSON, else as text; "
                    "repeatable")  # fmt: skip
    args = ap.parse_args()
    settings: dict[str, Any] = {}
    for item in args.set:
        name, eq, value = item.partition("=")
        if not eq or name.strip() not in Context.__dataclass_fields__:
            raise SystemExit(f"error: --set takes NAME=VALUE with NAME a setting of "
                             f"kbqa.context.Context, got {item!r}")  # fmt: skip
        try:
            settings[name.strip()] = json.loads(value)
        except ValueError:
            settings[name.strip()] = value
    if args.own is not None and not 0 < args.own <= 1:
        raise SystemExit(f"error: --own must be in (0, 1], got {args.own}")
    if not args.thresholds.replace(",", "").strip():
        raise SystemExit("error: --thresholds is empty: give one or more, e.g. 0.5,0.7")
    try:
        thresholds = [float(t) for t in args.thresholds.split(",") if t.strip()]
    except ValueError:
        raise SystemExit(f"error: --thresholds takes numbers, got {args.thresholds!r}") from None
    if not thresholds or any(not 0 < t <= 1 for t in thresholds):
        raise SystemExit(f"error: --thresholds must be in (0, 1], got {args.thresholds!r}")
    if len({f"{t:g}" for t in thresholds}) != len(thresholds):  # as --save names the folders
        raise SystemExit(f"error: --thresholds names a threshold twice: {args.thresholds!r}")
    if args.save is not None and args.save.exists() and not args.save.is_dir():
        raise SystemExit(f"error: --save {args.save} is a file, not a folder")
    taken = [t for t in thresholds if args.save and (args.save / f"t{t:g}").exists()]
    if taken:
        raise SystemExit(f"error: {args.save / f't{taken[0]:g}'} exists: --save writes new "
                         "run folders only (remove it or choose another --save)")  # fmt: skip
    try:
        rows = replay(args.run, thresholds, args.own, args.save, settings)
    except KBQAError as exc:
        raise SystemExit(f"error: {exc}") from None
    print("| reader | answerable EM / F1 | abstained: answerable / unanswerable | F1 |")
    print("|---|---|---|---|")

    def pct(value: float | None) -> str:  # None: the run has no question of that kind
        return "-" if value is None else f"{100 * value:.1f}%"

    def num(value: float | None) -> str:  # None: the run has no answerable question
        return "-" if value is None else f"{value:.3f}"

    for label, s in rows:
        print(f"| {label} | {num(s['exact_match_answerable'])} / {num(s['token_f1_answerable'])} | "
              f"{pct(s['abstention_rate_answerable'])} / "
              f"{pct(s['abstention_rate_unanswerable'])} | {s['token_f1']:.3f} |")  # fmt: skip


if __name__ == "__main__":
    try:
        main()
    except SystemExit as exc:  # an error message: exit status 2, as kbqa's own commands
        if isinstance(exc.code, str):
            print(exc.code, file=sys.stderr)
            raise SystemExit(2) from None
        raise
