"""Settings of ``kbqa finetune reader``: one dataclass, read from the command line by
transformers' ``HfArgumentParser`` (the TRL way), so every flag is declared once, here.

HybridRAG-BN's seed settings were LoRA r 16, alpha 32, learning rate 1.5e-5 and 2 epochs on a
GPU. The defaults below are the ones that measured best under a CPU budget on this project's
machine (2 cores); ``docs/finetune.md`` has the table that chose them.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from kbqa.embedders import DEFAULT_EMBEDDER
from kbqa.finetune.traps import DEFAULT_TRAP_RULES, TRAP_RULES

_DURATION = re.compile(
    r"^\s*(?:(\d+(?:\.\d+)?)h)?\s*(?:(\d+(?:\.\d+)?)m(?:in)?)?\s*(?:(\d+(?:\.\d+)?)s)?\s*$"
)
SCHEDULERS = (
    "constant_with_warmup",
    "constant",
    "linear",
    "cosine",
    "cosine_with_restarts",
    "polynomial",
    "inverse_sqrt",
)
"""transformers' learning-rate schedulers that need no extra arguments."""
DEFAULT_PARAPHRASE_RULES = "ki,honorific,year,mark"
"""The paraphrase rules a run applies unless told (:data:`kbqa.finetune.paraphrase.RULES`)."""
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
"""Every attention and MLP projection (the trial's choice: 3.8M parameters at r 16)."""


def parse_duration(text: str) -> float:
    """Seconds in ``"2h"``, ``"15m"``, ``"1h30m"``, ``"90s"`` or a bare number of seconds.

    Raises:
        ValueError: Anything else, or a duration that is not positive.
    """
    text = text.strip().lower()
    try:
        seconds = float(text)
    except ValueError:
        m = _DURATION.match(text)
        if not text or m is None or not any(m.groups()):
            raise ValueError(
                f"time budget {text!r} is not a duration such as 15m, 2h, 1h30m or 90s"
            ) from None
        h, mins, s = (float(g) if g else 0.0 for g in m.groups())
        seconds = h * 3600 + mins * 60 + s
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"time budget must be a positive finite duration, got {text!r}")
    return seconds


@dataclass(kw_only=True)
class ReaderConfig:
    """``kbqa finetune reader`` settings.

    Raises:
        ValueError: From :meth:`validate`, naming the bad field and value.
    """

    ROLE: ClassVar[str] = "reader"
    """The adapter role this run trains (a manifest's ``role``): an exported adapter it starts
    from must be one (:func:`kbqa.finetune.import_adapter.read_lora_gguf`)."""

    train: str = field(
        metadata={
            "help": "Training questions (JSON Lines: qid, question, "
            "answers, doc_id; optional evidence)."
        }
    )
    kb: str = field(
        metadata={"help": "The training knowledge base (JSON Lines) the questions were written on."}
    )
    index: str = field(
        default="",
        metadata={
            "help": "An index of --kb built by `kbqa index` (default: built into "
            "OUT/index with --embedder)."
        },
    )
    out: str = field(default="runs/finetune-reader", metadata={"help": "Output directory."})
    base_model: str = field(
        default="gemma3-270m", metadata={"help": "Registered model name or a .gguf path."}
    )
    embedder: str = field(
        default=DEFAULT_EMBEDDER,
        metadata={
            "help": "Dense part of the training index: none (BM25 with character 4-grams), "
            "static or e5 (the shipped adapter's)."
        },
    )
    time_budget: str = field(
        default="", metadata={"help": "Stop training after this long: 15m, 2h, 1h30m, 90s."}
    )
    max_steps: int = field(
        default=-1, metadata={"help": "Stop after this many optimizer steps (-1: epochs)."}
    )
    epochs: float = field(default=1.0, metadata={"help": "Passes over the training examples."})
    learning_rate: float = field(default=2e-4, metadata={"help": "AdamW learning rate."})
    lr_scheduler: str = field(
        default="cosine",
        metadata={
            "help": "transformers scheduler over the whole run (every epoch); "
            "constant_with_warmup keeps a budget-cut run well trained at any point."
        },
    )
    warmup_steps: int = field(default=20, metadata={"help": "Linear warm-up steps."})
    lora_r: int = field(default=16, metadata={"help": "LoRA rank."})
    lora_alpha: int = field(default=32, metadata={"help": "LoRA alpha (scale alpha / r)."})
    lora_dropout: float = field(default=0.0, metadata={"help": "LoRA dropout."})
    lora_first_layer: int = field(
        default=0,
        metadata={
            "help": "Adapt blocks from this one up (0: all). Backpropagation stops "
            "there, so a later first block trains faster."
        },
    )
    batch_size: int = field(
        default=1,
        metadata={
            "help": "Examples per forward pass (length-bucketed). On 2 cores 4 was no "
            "faster per example than 1 and needed 8 GB instead of 5."
        },
    )
    grad_accum: int = field(default=4, metadata={"help": "Forward passes per optimizer step."})
    bf16: bool = field(
        default=False, metadata={"help": "bfloat16 autocast on the CPU (float32 weights)."}
    )
    negative_ratio: float = field(
        default=0.3, metadata={"help": "Share of questions that also get an abstention example."}
    )
    redacted_share: float = field(
        default=0.5,
        metadata={
            "help": "Share of those abstention examples made by cutting the answer "
            "sentences out of the question's own context (the rest: other chunks)."
        },
    )
    yes_no_ratio: float = field(
        default=0.15, metadata={"help": "Share of questions that also get a yes/no example."}
    )
    val_fraction: float = field(
        default=0.2, metadata={"help": "Share of documents held out for validation."}
    )
    max_questions: int = field(
        default=0, metadata={"help": "Use only this many questions (0: all), for a quick try."}
    )
    val_examples: int = field(
        default=200, metadata={"help": "Validation examples scored by llama.cpp at the end."}
    )
    save_minutes: float = field(
        default=10.0, metadata={"help": "Minutes between checkpoints (also on Ctrl-C)."}
    )
    keep_checkpoints: int = field(
        default=2, metadata={"help": "Checkpoints kept (0: all, e.g. to compare budgets)."}
    )
    seed: int = field(default=0, metadata={"help": "Seeds the split, the examples and training."})
    threads: int = field(default=0, metadata={"help": "torch threads (0: every core)."})
    skip_bad_lines: bool = field(
        default=False,
        metadata={"help": "Skip malformed knowledge-base lines instead of stopping."},
    )
    resume: bool = field(
        default=False, metadata={"help": "Continue from the last checkpoint in OUT."}
    )
    resume_from: str = field(
        default="",
        metadata={
            "help": "Continue from this checkpoint directory (e.g. training/reader, "
            "committed by an earlier session on another machine)."
        },
    )
    checkpoint_copy: str = field(
        default="",
        metadata={
            "help": "Also keep the newest checkpoint in this directory (e.g. "
            "training/reader), to commit while a run is unfinished."
        },
    )
    init_adapter: str = field(
        default="",
        metadata={
            "help": "Start from this LoRA adapter's weights (a checkpoint folder such as "
            "training/reader or OUT/checkpoints/checkpoint-N, or an exported adapter: its "
            "adapter.gguf or the folder holding it, such as the shipped reader's; same r and "
            "alpha): a new run on other data that goes on from a trained reader (the schedule "
            "starts fresh)."
        },
    )
    restart_warmup_steps: int = field(
        default=10,
        metadata={"help": "Warm-up steps of a resumed session (its optimizer starts empty)."},
    )
    train_k: int = field(
        default=2,
        metadata={
            "help": "Hits in a training prompt, without the previous-chunk padding: the "
            "answer's chunk and a distractor (0: as served, k hits with padding)."
        },
    )
    served_share: float = field(
        default=0.2,
        metadata={
            "help": "Share of training examples rendered exactly as served (k hits with "
            "padding) when --train-k is set; validation examples always are."
        },
    )
    paraphrase_share: float = field(
        default=0.3,
        metadata={
            "help": "Share of training questions asked in another form by rule (kbqa."
            "finetune.paraphrase: কি/কী, honorific verbs, date words, spacing)."
        },
    )
    paraphrase_rules: str = field(
        default=DEFAULT_PARAPHRASE_RULES,
        metadata={
            "help": "The paraphrase rules, comma-separated: ki, honorific, year, mark (the "
            "default) and the opt-in order (question word moved between front and end), "
            "register (formal words made colloquial), synonym (a noun or adjective replaced by "
            "a dictionary synonym); see kbqa.finetune.paraphrase."
        },
    )
    rule_kinds: str = field(
        default="",
        metadata={
            "help": "Question kinds made by rule from the training documents' sentences, "
            "comma-separated: why (causal clauses), list (enumerations); see "
            "kbqa.finetune.kinds. Empty: none."
        },
    )
    trap_ratio: float = field(
        default=0.0,
        metadata={
            "help": "Share of questions that also get a lexical-trap abstention example (a "
            "name or relation swapped so the passage no longer answers it)."
        },
    )
    trap_rules: str = field(
        default=DEFAULT_TRAP_RULES,
        metadata={
            "help": "The trap rules, comma-separated, always tried in the order relation, "
            "entity (the default), then the opt-in number (a year or number the passage "
            "holds swapped for one it lacks); see kbqa.finetune.traps."
        },
    )
    k: int = field(default=3, metadata={"help": "Hits per prompt, as served (Context.k)."})
    n_ctx: int = field(
        default=4096, metadata={"help": "Context window whose budget prompts fit, as served."}
    )
    max_answer_tokens: int = field(
        default=32, metadata={"help": "Answer budget, as served (Context.max_answer_tokens)."}
    )

    def __post_init__(self) -> None:
        self.validate()

    def _check_types(self) -> None:
        """Each field holds its annotated type (bool is not taken for a number)."""
        kinds: dict[str, tuple[type, ...]] = {
            "str": (str,),
            "bool": (bool,),
            "int": (int,),
            "float": (int, float),
        }
        for f in fields(self):
            value = getattr(self, f.name)
            wanted = kinds.get(str(f.type))
            if wanted is None:
                continue
            if not isinstance(value, wanted) or (f.type != "bool" and isinstance(value, bool)):
                raise TypeError(f"{f.name} must be {f.type}, got {value!r}")

    def validate(self) -> None:
        """Check ranges.

        Raises:
            TypeError: A field of the wrong type (``None`` for a text field, from Python); the
                message names it.
            ValueError: A field out of range; the message names it and its value.
        """
        self._check_types()
        positive = (
            "lora_r",
            "lora_alpha",
            "batch_size",
            "grad_accum",
            "k",
            "n_ctx",
            "max_answer_tokens",
        )
        for name in positive:
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)!r}")
        for name in (
            "negative_ratio",
            "redacted_share",
            "yes_no_ratio",
            "lora_dropout",
            "served_share",
            "paraphrase_share",
            "trap_ratio",
        ):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)!r}")
        if not 0 < self.val_fraction < 1:
            raise ValueError(f"val_fraction must be in (0, 1), got {self.val_fraction!r}")
        for name in ("learning_rate", "epochs", "save_minutes"):
            value = getattr(self, name)
            if not math.isfinite(value) or value <= 0:
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        not_negative = (
            "lora_first_layer",
            "warmup_steps",
            "keep_checkpoints",
            "max_questions",
            "val_examples",
            "threads",
            "restart_warmup_steps",
            "train_k",
        )
        for name in not_negative:
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)!r}")
        if self.rule_kinds.strip() and not self.kinds:
            raise ValueError(f"rule_kinds {self.rule_kinds!r} names no kind (why, list)")
        from kbqa.finetune.kinds import MADE_KINDS

        unknown = set(self.kinds) - set(MADE_KINDS)
        if unknown:
            raise ValueError(
                f"rule_kinds: unknown kind(s) {', '.join(sorted(unknown))} (why, list)"
            )
        from kbqa.finetune.paraphrase import ALL_RULES

        if not self.paraphrases:
            raise ValueError(f"paraphrase_rules {self.paraphrase_rules!r} names no rule")
        unknown = set(self.paraphrases) - set(ALL_RULES)
        if unknown:
            raise ValueError(
                f"paraphrase_rules: unknown rule(s) {', '.join(sorted(unknown))} "
                f"({', '.join(ALL_RULES)})"
            )
        named = {r.strip() for r in self.trap_rules.split(",") if r.strip()}
        unknown_rules = sorted(named - set(TRAP_RULES))
        if not named or unknown_rules:
            said = f" (unknown: {', '.join(unknown_rules)})" if unknown_rules else ""
            raise ValueError(
                f"trap_rules {self.trap_rules!r}{said}: name one or more of {', '.join(TRAP_RULES)}"
            )
        if self.lr_scheduler not in SCHEDULERS:
            raise ValueError(
                f"lr_scheduler {self.lr_scheduler!r} is not one of {', '.join(SCHEDULERS)}"
            )
        if not 0 <= self.seed < 2**32:
            raise ValueError(f"seed must be in [0, 2**32), got {self.seed!r}")
        if self.max_steps == 0 or self.max_steps < -1:
            raise ValueError(f"max_steps must be -1 or positive, got {self.max_steps!r}")
        if self.time_budget:
            parse_duration(self.time_budget)
        if self.n_ctx < self.max_answer_tokens + 64:
            raise ValueError(
                f"n_ctx ({self.n_ctx}) must be at least max_answer_tokens "
                f"({self.max_answer_tokens}) + 64 to leave room for a prompt"
            )

    @property
    def budget_seconds(self) -> float | None:
        """The time budget in seconds, or None."""
        return parse_duration(self.time_budget) if self.time_budget else None

    @property
    def torch_threads(self) -> int:
        """Threads for torch: ``threads`` or every core."""
        return self.threads or os.cpu_count() or 1

    def data_settings(self) -> dict[str, Any]:
        """The settings that decide the examples (a change rebuilds them)."""
        keys = (
            "base_model",
            "embedder",
            "negative_ratio",
            "redacted_share",
            "yes_no_ratio",
            "val_fraction",
            "max_questions",
            "seed",
            "k",
            "n_ctx",
            "max_answer_tokens",
            "train_k",
            "served_share",
            "paraphrase_share",
        )
        settings = {k: getattr(self, k) for k in keys}
        # added only when used: runs made before these existed keep their recorded settings
        if self.rule_kinds:
            settings["rule_kinds"] = ",".join(self.kinds)
        if self.trap_ratio:
            settings["trap_ratio"] = self.trap_ratio
        if self.paraphrase_rules != DEFAULT_PARAPHRASE_RULES:
            settings["paraphrase_rules"] = ",".join(self.paraphrases)
        if self.traps != DEFAULT_TRAP_RULES.split(","):
            settings["trap_rules"] = ",".join(self.traps)
        return settings

    @property
    def kinds(self) -> list[str]:
        """``rule_kinds`` as a list, in a fixed order."""
        return sorted({k.strip() for k in self.rule_kinds.split(",") if k.strip()})

    @property
    def paraphrases(self) -> tuple[str, ...]:
        """``paraphrase_rules`` as names, in the order of
        :data:`kbqa.finetune.paraphrase.ALL_RULES` (the order they are applied in)."""
        from kbqa.finetune.paraphrase import ALL_RULES

        named = {r.strip() for r in self.paraphrase_rules.split(",") if r.strip()}
        return tuple(r for r in ALL_RULES if r in named) + tuple(sorted(named - set(ALL_RULES)))

    @property
    def traps(self) -> list[str]:
        """``trap_rules`` as names, in the order of :data:`kbqa.finetune.traps.TRAP_RULES`
        (the order they are tried in)."""
        named = {r.strip() for r in self.trap_rules.split(",") if r.strip()}
        return [r for r in TRAP_RULES if r in named]

    def to_dict(self) -> dict[str, Any]:
        """Every setting."""
        return {f.name: getattr(self, f.name) for f in fields(self)}
