"""The answer-only loss: examples encoded with their prompt positions masked, batches padded on
the left, and cross-entropy computed only where an answer token is.

Batches are padded on the left, so every example's answer (its target plus end-of-sequence) ends
at the last position; the model is called with ``logits_to_keep`` = the longest answer + 1, so
the 262k-word output layer runs on a handful of positions instead of every prompt token (on
Gemma 3 270M that layer costs more than the rest of the network).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kbqa.finetune.examples import ReaderExample

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedTokenizerBase

IGNORE = -100
"""Label of a position that carries no loss (PyTorch's ``ignore_index``)."""


def encode_example(
    tokenizer: PreTrainedTokenizerBase, example: ReaderExample
) -> dict[str, list[int]]:
    """Token ids and labels of one example.

    The prompt is tokenised alone, with BOS, as llama.cpp tokenises it when serving; the target
    is tokenised after a space (the reply continues ``Answer:``) without BOS, then the
    end-of-sequence token. Prompt positions get :data:`IGNORE`.

    Returns:
        ``{"input_ids": [...], "labels": [...]}`` of equal length.
    """
    prompt = tokenizer(example.prompt).input_ids
    answer = tokenizer(" " + example.target, add_special_tokens=False).input_ids
    answer = [*answer, tokenizer.eos_token_id]
    return {"input_ids": prompt + answer, "labels": [IGNORE] * len(prompt) + answer}


@dataclass
class LeftPadCollator:
    """Left-pads a batch so every answer ends at the last position.

    Returns tensors ``input_ids``, ``attention_mask``, ``position_ids`` (each row counts from 0
    at its first real token) and ``labels`` (padding and prompt: :data:`IGNORE`), all of shape
    ``(batch, longest)``.
    """

    pad_id: int

    def __call__(self, features: Sequence[dict[str, list[int]]]) -> dict[str, torch.Tensor]:
        import torch

        longest = max(len(f["input_ids"]) for f in features)
        shape = (len(features), longest)
        ids = torch.full(shape, self.pad_id, dtype=torch.long)
        mask = torch.zeros(shape, dtype=torch.long)
        labels = torch.full(shape, IGNORE, dtype=torch.long)
        positions = torch.zeros(shape, dtype=torch.long)
        for row, f in enumerate(features):
            n = len(f["input_ids"])
            ids[row, longest - n :] = torch.tensor(f["input_ids"])
            mask[row, longest - n :] = 1
            labels[row, longest - n :] = torch.tensor(f["labels"])
            positions[row, longest - n :] = torch.arange(n)
        return {
            "input_ids": ids,
            "attention_mask": mask,
            "position_ids": positions,
            "labels": labels,
        }


def answer_loss(
    model: Any, batch: dict[str, torch.Tensor], num_items: torch.Tensor | int | None = None
) -> torch.Tensor:
    """Cross-entropy over the answer tokens of a left-padded batch, computing logits only at
    the last (longest answer + 1) positions.

    Args:
        model: A causal LM accepting ``logits_to_keep``.
        batch: From :class:`LeftPadCollator`.
        num_items: Answer tokens in the whole accumulated batch (transformers'
            ``num_items_in_batch``): the summed loss is divided by it, so gradient accumulation
            weighs every token alike. None: the mean over this batch.

    Raises:
        ValueError: A batch with no answer token, or one whose labelled tokens are not all at
            the end of their row (not left-padded).
    """
    import torch.nn.functional as F

    inputs = dict(batch)
    labels = inputs.pop("labels")
    counts = (labels != IGNORE).sum(dim=1)
    span = int(counts.max())
    if span == 0:
        raise ValueError("a batch without answer tokens")
    if int((labels[:, -span:] != IGNORE).sum()) != int(counts.sum()):
        raise ValueError("answer tokens must end every row: pad batches on the left")
    logits = model(**inputs, logits_to_keep=span + 1).logits[:, :-1, :]
    target = labels[:, -span:]
    total = F.cross_entropy(
        logits.float().reshape(-1, logits.size(-1)),
        target.reshape(-1),
        ignore_index=IGNORE,
        reduction="sum",
    )
    return total / (num_items if num_items is not None else counts.sum())
