"""What a verifier's reply does to the candidate answer: the rule the verify node applies and
``kbqa finetune verifier`` scores with (HybridRAG-BN's refinement step, which changed 48 of
1,500 answers there).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbqa.answers.normalize import normalize_answer
from kbqa.answers.snap import grounded


@dataclass(frozen=True, slots=True)
class Verdict:
    """The answer after verification.

    Attributes:
        answer: The answer kept (the candidate, or the verifier's correction).
        abstained: Whether that answer is an abstention.
        changed: The answer differs from the candidate (after normalisation).
        status: ``verify: ungrounded`` when a correction was refused for being in no passage,
            else None.
    """

    answer: str
    abstained: bool
    changed: bool
    status: str | None = None


def apply_verification(
    candidate: str,
    candidate_abstained: bool,
    verified: str,
    verified_abstained: bool,
    passages: Sequence[str],
) -> Verdict:
    """Confirm or correct ``candidate`` with the verifier's judged reply.

    - The verifier's abstention on an answered candidate is no correction: the candidate stays,
      so verification can turn an abstention into an answer, never the reverse.
    - A correction is taken only when it is :func:`~kbqa.answers.snap.grounded` in
      ``passages`` (the texts the verifier was shown); otherwise the candidate stays: a
      verifier cannot turn a grounded answer into an ungrounded one.

    Args:
        candidate: The answer so far (the abstention phrase when ``candidate_abstained``).
        candidate_abstained: Whether the answer so far is an abstention.
        verified: The verifier's reply after :func:`~kbqa.answers.abstention.judge`.
        verified_abstained: Whether that reply is an abstention.
        passages: The texts shown to the verifier.
    """
    if verified_abstained and not candidate_abstained:
        return Verdict(candidate, False, False)
    answer, abstained = verified, verified_abstained
    changed = normalize_answer(answer) != normalize_answer(candidate)
    if changed and not abstained and not grounded(answer, passages):
        return Verdict(candidate, candidate_abstained, False, "verify: ungrounded")
    return Verdict(answer, abstained, changed)
