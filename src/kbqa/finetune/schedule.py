"""The learning-rate schedule of a run that may be resumed on another machine."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Schedule:
    """The learning-rate schedule of a whole run, resumed at ``offset`` steps.

    The base schedule is transformers' (``get_scheduler(name, ...)`` over ``total_steps``); a
    resumed session multiplies it by a linear warm-up over ``restart_warmup`` steps, because its
    optimizer starts with empty moments (the checkpoint does not keep them).
    """

    name: str
    warmup_steps: int
    total_steps: int
    offset: int = 0
    restart_warmup: int = 0

    def scheduler(self, optimizer: Any) -> Any:
        """A ``LambdaLR`` on ``optimizer`` whose step 0 is the run's step ``offset``."""
        from torch.optim.lr_scheduler import LambdaLR
        from transformers import get_scheduler

        base = get_scheduler(
            self.name,
            optimizer,
            num_warmup_steps=self.warmup_steps,
            num_training_steps=self.total_steps,
        ).lr_lambdas[0]
        offset, warm = self.offset, self.restart_warmup

        def factor(step: int) -> float:
            ramp = min(1.0, (step + 1) / warm) if offset and warm else 1.0
            return float(base(offset + step)) * ramp

        return LambdaLR(optimizer, factor)
