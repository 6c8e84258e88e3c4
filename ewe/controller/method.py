"""EWE as a registered method: plain memory-augmented decoding of a batch (bare and +RA), or,
with the controller on, each prompt through the pause / check / backtrack hook."""
from __future__ import annotations

from ..methods.registry import Method
from .controlled_run import ControlledRun


class EWEMethod(Method):
    name = "ewe"

    def run(self, prompt: str, dec, passages: list[str] | None = None):
        return self.run_batch([prompt], dec, None if passages is None else [passages])[0]

    def run_batch(self, prompts: list[str], dec, rows: list[list[str]] | None) -> list:
        rt = self.runtime
        if not rt.config.pauses:
            return rt.generate_plain(prompts, rows, dec)
        checker = rt.fact_checker() if rt.config.controller.verify_trigger != "never" else None
        return [ControlledRun(rt, checker, p, dec, None if rows is None else rows[i]).run()
                for i, p in enumerate(prompts)]
