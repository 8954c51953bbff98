"""verify: confirm or correct the answer against its context (HybridRAG-BN's verifier, which
changed 48 of 1,500 answers there), in at most ``max_verify_tokens`` (30) generated tokens.

Its model is configurable apart from the generator (``Context.verifier_model``; default the
generator, :func:`kbqa.resources.verifier_name`); a LoRA-fine-tuned verifier plugs in here,
with the prompt of :func:`kbqa.prompts.render_verify_prompt`. The pattern extractor's span,
when it found a typed one (an email, a date...), is shown as a second candidate.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kbqa.answers.extract import typed_hint
from kbqa.answers.verification import apply_verification
from kbqa.context import Context, context_of
from kbqa.nodes.common import fail_soft, judged, node, on_route, stage_answer
from kbqa.passages import chunks_of
from kbqa.prompts import ANSWER_STOP, PLAIN_STYLES, Passage
from kbqa.prompts.budget import prompt_budget
from kbqa.prompts.verify import fit_verify_prompt
from kbqa.resources import verifier_for
from kbqa.state import State


@node("verify")
@fail_soft("verify", "verify: failed")
def verify(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Set ``verified_answer`` (the verifier's own reply) and ``verify_changed``; on a change,
    ``answer``, ``abstained``, ``raw_answer`` and ``answered_by="verify"`` too. The verifier
    confirms or corrects: its abstention on an answered candidate counts as no correction (the
    candidate stays), so only an abstention can become an answer here, never the other way
    round. The prompt holds the reader's passages that fit the verifier's window, counted in its
    own tokens (:func:`~kbqa.prompts.verify.fit_verify_prompt`). A correction is taken only when it
    is :func:`~kbqa.answers.snap.grounded` in the passages shown; otherwise the candidate stays
    and the route records ``verify: ungrounded``."""
    ctx = context_of(runtime)
    chunks = chunks_of(ctx)
    given = state.get("context_chunk_ids", [])
    rank = {r["chunk_id"]: r["rank"] for r in state.get("retrieved", [])}
    passages = [
        (rank.get(c, i), Passage(chunks[c].title, chunks[c].text))
        for i, c in enumerate(given, start=1)
    ]
    candidate = state.get("answer", ctx.abstention_phrase)
    hint = typed_hint(
        state["question"],
        state.get("question_type", "other"),
        [(c, chunks[c].text) for c in given],
        state.get("language", "bn"),
    )
    model = verifier_for(ctx)
    style = getattr(model, "prompt_style", "completion")
    # the reader's context, budgeted again in the verifier's own tokens
    messages, kept = fit_verify_prompt(
        model,
        state["question"],
        passages,
        candidate,
        prompt_budget(ctx.n_ctx, ctx.max_verify_tokens),
        hint=hint,
        style=style,
    )
    reply = model.invoke(
        messages,
        stop=ANSWER_STOP if style in PLAIN_STYLES else None,
        max_tokens=ctx.max_verify_tokens,
    )
    raw = str(reply.content)
    verified, verified_abstained = judged(raw, state, ctx)
    verdict = apply_verification(
        candidate,
        bool(state.get("abstained", True)),
        verified,
        verified_abstained,
        [passages[i][1].text for i in kept],
    )
    answer, abstained, changed = verdict.answer, verdict.abstained, verdict.changed
    update: dict[str, Any] = {
        "verified_answer": verified,
        "verify_changed": changed,
        **stage_answer("verify", answer, abstained),
        **on_route(verdict.status),
    }
    if changed:
        update |= {
            "answer": answer,
            "abstained": abstained,
            "answered_by": "verify",
            "raw_answer": raw,
        }
    return update
