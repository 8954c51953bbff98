"""The graph's settings as command-line options, from one source: :class:`~kbqa.context.Context`.

Every settings field of ``Context`` becomes an option of the commands decorated with
:func:`context_options` (TRL's ``HfArgumentParser`` does the same for its config dataclasses):
its name (``max_retries`` -> ``--max-retries``), type, default and help are the field's. A few
keep a shorter or older spelling (:data:`OPTION_DECLS`), and three read an environment variable
(:data:`OPTION_ENV`). :func:`option_args` turns settings back into arguments, so ``kbqa eval
--models`` hands each model's process the same settings without listing them by hand.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from dataclasses import MISSING, fields
from typing import Annotated, Any, TypeVar, get_type_hints

import typer
from rich.markup import escape

from kbqa.context import Context
from kbqa.errors import ModelError
from kbqa.llm.models import DEFAULT_MODEL

OPTION_DECLS: dict[str, tuple[str, ...]] = {
    "index_dir": ("--index", "-i"),
    "model": ("--model", "-m"),
    "k": ("--k", "-k"),
    "use_llm": ("--llm/--no-llm",),
}
"""Options spelled otherwise than ``--field-name``."""
OPTION_ENV = {"index_dir": "KBQA_INDEX", "model": "KBQA_MODEL", "web_search": "KBQA_WEB_SEARCH"}
"""Options that fall back on an environment variable (as the ``Context`` field does)."""
ENV_DEFAULTS: dict[str, Any] = {"index_dir": "index", "model": DEFAULT_MODEL, "web_search": "off"}
"""Defaults of the fields whose default is read from the environment at construction."""

INERT_UNLESS: dict[str, tuple[str, Callable[[Any], bool], str]] = {
    "retry_k": ("max_retries", lambda v: v > 0, "--max-retries 1 or more"),
    "retry_unread_first": ("max_retries", lambda v: v > 0, "--max-retries 1 or more"),
    "verifier_model": ("verify", bool, "--verify"),
    "verifier_adapter": ("verify", bool, "--verify"),
    "max_verify_tokens": ("verify", bool, "--verify"),
    "rerank_pool": ("reranker", lambda v: v != "off", "--reranker"),
    "rerank_weight": ("reranker", lambda v: v != "off", "--reranker"),
    "rerank_add": ("reranker", lambda v: v != "off", "--reranker"),
    "cross_check_rules": ("cross_check", lambda v: v != "off", "--cross-check auto or on"),
    "web_timeout": ("web_search", lambda v: v != "off", "--web-search"),
    "web_max_results": ("web_search", lambda v: v != "off", "--web-search"),
    "stop_reading_below": ("reading", lambda v: v == "each", "--reading each"),
}
"""Settings that only act when another one is on: field -> (that field, its test, the option)."""

HELP_PANELS: dict[str, tuple[str, ...]] = {
    "Models": (
        "model",
        "reader_adapter",
        "model_en",
        "reader_adapter_en",
        "llm_url",
        "llm_model",
        "llm_timeout",
        "n_ctx",
        "n_threads",
        "use_llm",
    ),
    "Retrieval": (
        "embedder",
        "k",
        "bm25_weight",
        "dense_weight",
        "fusion",
        "candidate_pool",
        "reranker",
        "rerank_pool",
        "rerank_weight",
        "rerank_add",
        "pad_previous",
    ),
    "Reading": (
        "grounding",
        "reading",
        "stop_reading_below",
        "abstention_threshold",
        "abstention_phrase",
        "abstention_phrase_en",
        "max_answer_tokens",
        "max_answer_chars",
    ),
    "Retry": ("max_retries", "retry_k", "retry_unread_first"),
    "After reading": (
        "cross_check",
        "cross_check_rules",
        "verify",
        "verifier_model",
        "verifier_adapter",
        "max_verify_tokens",
        "fallback",
        "web_search",
        "web_timeout",
        "web_max_results",
    ),
}
"""``--help`` groups the settings by pipeline stage, one table each (so one long option name
no longer narrows every other table's columns); ``--index`` stays with the command's own."""
_PANEL = {name: panel for panel, names in HELP_PANELS.items() for name in names}

F = TypeVar("F", bound=Callable[..., Any])
CLICK_CONTEXT = "kbqa_click_context"
"""The wrapper's own parameter for the command's context (which options the user gave)."""


def inert_settings(settings: dict[str, Any], given: Iterable[str]) -> dict[str, str]:
    """The settings in ``given`` (set by the user) that ``settings`` leaves unused, each with a
    warning.

    Example: ``--retry-k 20`` without ``--max-retries`` -> ``{"retry_k": "--retry-k has no effect
    without --max-retries 1 or more"}``.
    """
    out = {}
    for name in given:
        rule = INERT_UNLESS.get(name)
        if rule is None or rule[0] not in settings or rule[1](settings[rule[0]]):
            continue
        on, _, off = option_decls(name)[0].partition("/")
        typed = off or f"--no-{on.removeprefix('--')}" if settings[name] is False else on
        out[name] = f"{typed} has no effect without {rule[2]}"
    return out


def _valid(settings: dict[str, Any]) -> bool:
    """``Context(**settings)`` accepts them (it checks values only) and its model names and
    adapters can load (:func:`kbqa.resources.check_models`, which the commands run too)."""
    from kbqa.resources import check_models

    try:
        check_models(Context(**settings))
    except (TypeError, ValueError, ModelError):
        return False
    return True


def _given(click_ctx: typer.Context, names: Iterable[str]) -> list[str]:
    """The names among ``names`` whose option came from the command line or the environment."""
    user = ("COMMANDLINE", "ENVIRONMENT")  # click's ParameterSource (typer vendors click)
    return [n for n in names if getattr(click_ctx.get_parameter_source(n), "name", "") in user]


def option_decls(name: str) -> tuple[str, ...]:
    """The option's spelling(s) for a ``Context`` field (a yes/no field: ``--x/--no-x``)."""
    return OPTION_DECLS.get(name, (f"--{name.replace('_', '-')}",))


def _typer_decls(name: str, hint: Any) -> tuple[str, ...]:
    if name in OPTION_DECLS or hint is not bool:
        return option_decls(name)
    return ()  # Typer names a yes/no option --x/--no-x itself


def _default(name: str) -> Any:
    if name in ENV_DEFAULTS:
        return ENV_DEFAULTS[name]
    f = next(f for f in fields(Context) if f.name == name)
    return f.default if f.default is not MISSING else f.default_factory()  # type: ignore[operator]


def _parameter(name: str, hint: Any, help_text: str) -> inspect.Parameter:
    env = OPTION_ENV.get(name)
    if env:  # Typer adds "[env var: ...]" itself
        help_text = help_text.replace(f" (env {env})", "")
    # Typer's help reads rich markup, which would drop "[server]" from "kbqa[server]"
    option = typer.Option(
        *_typer_decls(name, hint),
        help=escape(help_text),
        envvar=env,
        rich_help_panel=_PANEL.get(name),
    )
    return inspect.Parameter(
        name,
        inspect.Parameter.KEYWORD_ONLY,
        default=_default(name),
        annotation=Annotated[hint, option],
    )


def context_options(only: Iterable[str] | None = None) -> Callable[[F], F]:
    """Give a Typer command one option per ``Context`` setting (or those in ``only``).

    The command receives them together as ``settings: dict[str, Any]`` (field name -> value),
    ready for ``Context(**settings)``; its own parameters stay as they are.
    """
    names = Context.field_names() if only is None else list(only)
    hints = get_type_hints(Context)
    helps = {f.name: f.metadata.get("description", "") for f in fields(Context)}

    def wrap(command: F) -> F:
        signature = inspect.signature(command, eval_str=True)
        own = [p for p in signature.parameters.values() if p.name != "settings"]
        order = list(HELP_PANELS)  # the panels in pipeline order (Typer keeps first-seen order)
        ranked = sorted(names, key=lambda n: order.index(_PANEL[n]) + 1 if n in _PANEL else 0)
        extra = [_parameter(n, hints[n], helps[n]) for n in ranked]
        # Typer hands a parameter annotated typer.Context the command's context (not an option)
        extra.append(
            inspect.Parameter(
                CLICK_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context
            )
        )

        @functools.wraps(command)
        def run(*args: Any, **kwargs: Any) -> Any:
            click_ctx = kwargs.pop(CLICK_CONTEXT)
            settings = {n: kwargs.pop(n) for n in names if n in kwargs}
            warnings = inert_settings(settings, _given(click_ctx, settings))
            if warnings and _valid(settings):  # else the command's error says what is wrong
                for warning in warnings.values():
                    typer.echo(f"warning: {warning}", err=True)
            return command(*args, settings=settings, **kwargs)

        run.__signature__ = signature.replace(parameters=[*own, *extra])  # type: ignore[attr-defined]
        run.__annotations__ = {p.name: p.annotation for p in [*own, *extra]}
        if signature.return_annotation is not inspect.Signature.empty:
            run.__annotations__["return"] = signature.return_annotation
        return run  # type: ignore[return-value]

    return wrap


def option_args(settings: dict[str, Any]) -> list[str]:
    """Command-line arguments that give a command decorated with :func:`context_options` these
    ``settings`` (``None`` values are left out: the option's default is None; so are the
    settings that another one switches off, :data:`INERT_UNLESS`, which would only warn)."""
    args: list[str] = []
    inert = inert_settings(settings, settings)
    for name, value in settings.items():
        if name in inert:
            continue
        decl = option_decls(name)[0]
        if isinstance(value, bool):
            on, _, off = decl.partition("/")
            args.append(on if value else off or f"--no-{on.removeprefix('--')}")
        elif value is not None:
            args += [decl, str(value)]
    return args
