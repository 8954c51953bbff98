"""verify: confirm or correct the answer against its context (HybridRAG-BN's verifier, which
changed 48 of 1,500 answers there), in at most ``max_verify_tokens`` (30) generated tokens.

Its model is configurable apart from the generator (``Context.verifier_model``; default the
quality model when installed); a LoRA-fine-tuned verifier plugs in here, with the prompt of
:func:`kbqa.prompts.render_verify_prompt`. The pattern extractor's span, when it found a typed
one (an email, a date...), is shown as a second candidate.
"""

from __future__ import annotations

import time
from typing import Any

from langgraph.runtime import Runtime

from kbqa.answers.abstention import judge
from kbqa.answers.extract import extract_answer
from kbqa.answers.normalize import normalize_answer
from kbqa.answers.snap import grounded
from kbqa.context import Context
from kbqa.nodes.common import chunks_of, context_of, fail_soft, visited
from kbqa.prompts import ANSWER_STOP, PLAIN_STYLES, Passage, render_verify_prompt
from kbqa.prompts.budget import fit_passages, prompt_budget
from kbqa.resources import verifier_for
from kbqa.state import State


@fail_soft("verify", "verify: failed")
def verify(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Set ``verified_answer`` (the verifier's own reply) and ``verify_changed``; on a change,
    ``answer``, ``abstained``, ``raw_answer`` and ``answered_by="verify"`` too. The verifier
    confirms or corrects: its abstention on an answered candidate counts as no correction (the
    candidate stays), so only an abstention can become an answer here, never the other way
    round. The prompt holds the reader's passages that fit the verifier's window, counted in its
    own tokens (:func:`~kbqa.prompts.budget.fit_passages`). A correction is taken only when it
    is :func:`~kbqa.answers.snap.grounded` in the passages shown; otherwise the candidate stays
    and the route records ``verify: ungrounded``."""
    started = time.perf_counter()
    ctx = context_of(runtime)
    chunks = chunks_of(ctx)
    given = state.get("context_chunk_ids", [])
    rank = {r["chunk_id"]: r["rank"] for r in state.get("retrieved", [])}
    passages = [(rank.get(c, i), Passage(chunks[c].title, chunks[c].text))
                for i, c in enumerate(given, start=1)]  # fmt: skip
    candidate = state.get("answer", ctx.abstention_phrase)
    hint = extract_answer(
        state["question"],
        state.get("question_type", "other"),
        [(c, chunks[c].text) for c in given],
        state.get("language", "bn"),
    )
    model = verifier_for(ctx)
    style = getattr(model, "prompt_style", "completion")
    shown_hint = hint.answer if hint and hint.method not in ("overlap", "yes/no") else ""
    # the reader's context, budgeted again in the verifier's own tokens
    messages, kept, _ = fit_passages(
        model,
        passages,
        prompt_budget(ctx.n_ctx, ctx.max_verify_tokens),
        lambda shown: render_verify_prompt(
            state["question"], shown, candidate, hint=shown_hint, style=style
        ),
    )
    reply = model.invoke(
        messages,
        stop=ANSWER_STOP if style in PLAIN_STYLES else None,
        max_tokens=ctx.max_verify_tokens,
    )
    raw = str(reply.content)
    answer, abstained = judge(raw, state["question"], ctx.abstention_phrase, ctx.max_answer_chars)
    verified = answer
    if abstained and not state.get("abstained", True):
        answer, abstained = candidate, False
    changed = normalize_answer(answer) != normalize_answer(candidate)
    status = None
    if changed and not abstained and not grounded(answer, [passages[i][1].text for i in kept]):
        # an untuned small verifier rewrites answers freely: a correction must be in the context
        answer, abstained = candidate, bool(state.get("abstained", True))
        changed, status = False, "verify: ungrounded"
    update: dict[str, Any] = {
        "verified_answer": verified,
        "verify_changed": changed,
        "stage_answers": [{"stage": "verify", "answer": answer, "abstained": abstained}],
        **visited("verify", started, status),
    }
    if changed:
        update |= {
            "answer": answer,
            "abstained": abstained,
            "answered_by": "verify",
            "raw_answer": raw,
        }
    return update
