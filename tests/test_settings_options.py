"""One source of settings: every ``Context`` field is an option of ``kbqa ask`` and ``kbqa eval
run``, and every option of theirs is a field, except the few listed here."""

from __future__ import annotations

from typing import Any

import pytest
import typer.main

from kbqa.cli import app
from kbqa.cli.settings import inert_settings, option_args
from kbqa.context import Context

OWN_OPTIONS = {
    "ask": {"question", "as_json", "verbose"},
    "chat": {"thread", "db", "as_json"},
    "eval run": {
        "questions", "limit", "sample", "seed", "disjoint_from", "out", "overwrite", "ablate",
        "models", "max_concurrency", "dataset_name", "report",
    },
    "eval generate": {"n", "out", "seed", "overwrite"},
}  # fmt: skip
"""Options that are the command's own, not graph settings."""
GENERATE_SETTINGS = {"index_dir", "model", "embedder", "n_ctx"}


def command(path: str) -> Any:
    """The Click command Typer builds for ``kbqa PATH``."""
    cmd: Any = typer.main.get_command(app)
    for name in path.split():
        cmd = cmd.commands[name]
    return cmd


@pytest.mark.parametrize("path", ["ask", "chat", "eval run"])
def test_every_setting_is_an_option_and_every_option_a_setting(path: str) -> None:
    names = {p.name for p in command(path).params}
    assert set(Context.field_names()) - names == set(), "a Context field has no option"
    assert names - set(Context.field_names()) == OWN_OPTIONS[path], "an option has no field"


def test_eval_generate_takes_the_settings_it_uses() -> None:
    names = {p.name for p in command("eval generate").params}
    assert names == GENERATE_SETTINGS | OWN_OPTIONS["eval generate"]


def test_option_args_give_a_command_back_the_same_settings() -> None:
    settings = Context(
        index_dir="idx", model="gemma3-270m", k=5, use_llm=False, pad_previous=False,
        fusion="rrf", abstention_threshold=None, cross_check="off", web_search="off",
    ).settings()  # fmt: skip
    cmd = command("eval run")
    parsed = cmd.make_context("run", ["questions.jsonl", *option_args(settings)]).params
    assert {name: parsed[name] for name in settings} == settings


def test_a_setting_another_one_switches_off_warns_and_is_not_passed_on() -> None:
    settings = Context(index_dir="idx", web_search="off").settings()
    warned = inert_settings(settings, ["retry_k", "verifier_adapter", "web_timeout", "k"])
    assert warned == {
        "retry_k": "--retry-k has no effect without --max-retries 1 or more",
        "verifier_adapter": "--verifier-adapter has no effect without --verify",
        "web_timeout": "--web-timeout has no effect without --web-search",
    }
    on = {**settings, "max_retries": 1, "verify": True, "web_search": "ddgs"}
    assert inert_settings(on, ["retry_k", "verifier_adapter", "web_timeout"]) == {}
    assert "--retry-k" not in option_args(settings)
    assert "--retry-k" in option_args(on)
    joint = Context(index_dir="idx", reading="joint", stop_reading_below=0.5).settings()
    assert inert_settings(joint, ["stop_reading_below"]) == {
        "stop_reading_below": "--stop-reading-below has no effect without --reading each"
    }
    off = Context(index_dir="idx", cross_check="off", cross_check_rules="all").settings()
    assert inert_settings(off, ["cross_check_rules"]) == {
        "cross_check_rules": "--cross-check-rules has no effect without --cross-check auto or on"
    }


@pytest.mark.parametrize(
    ("extra", "warning"),
    [
        (["--retry-k", "20"], "warning: --retry-k has no effect without --max-retries 1 or more"),
        (["--no-retry-unread-first"], "warning: --no-retry-unread-first has no effect without"),
        (["--retry-k", "20", "--max-retries", "-1"], None),  # the error alone: no warning too
        (["--retry-k", "20", "--max-retries", "1"], None),
        (["--verifier-model", "fake/abstain"], "warning: --verifier-model has no effect without"),
        (["--verifier-model", "no-such-model"], None),  # preload's unknown-model error, alone
        ([], None),
    ],
)
def test_the_command_line_warns_once_about_an_option_without_effect(
    tmp_path: Any, extra: list[str], warning: str | None
) -> None:
    from typer.testing import CliRunner

    res = CliRunner().invoke(app, ["ask", "q", "--index", str(tmp_path / "none"), *extra])
    assert res.exit_code != 0, "no index: the command still fails as before"
    warnings = [line for line in res.output.splitlines() if line.startswith("warning:")]
    if warning is None:
        assert warnings == []
    else:
        assert len(warnings) == 1 and warnings[0].startswith(warning), res.output
