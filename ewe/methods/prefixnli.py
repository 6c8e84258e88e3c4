"""PrefixNLI-guided decoding (Harary et al., "PrefixNLI"), `method: prefixnli`.

The answer is judged while it is written: at each step the top-p candidate tokens are scored by
a prefix-entailment judge (ewe/judge/prefix_model.py, trained with `ewe judge train --prefix`)
against the source, the answer so far plus the candidate as the hypothesis, and a candidate the
judge finds unlikely to be entailed (below tau) is pushed down by lambda times its log-odds
(ewe/methods/prefix_guide.py). The source is the prompt's passages: retrieved as the retrieval
section says, or given (a summarization task gives the article). They are placed for the
generator as the retrieval section says too: as text in the prompt, or as EWE's memory units
(retrieval.placement: memory) - PrefixNLI combined with EWE's memory.

A prompt without passages has nothing to be judged against and is decoded as it is (its trace
says so). The judge's cache (`prefixnli.cache`) is what makes it affordable; with it off every
candidate's text is read whole, the reference the cache is tested against.
"""
from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from ..settings import Settings
from .registry import Method


class PrefixNLIConfig(Settings):
    """PrefixNLI's settings (the paper's values by default)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, validate_by_name=True,
                              validate_by_alias=True, serialize_by_alias=True)

    judge: str = Field("prefix-smollm2", description="the prefix judge: a shipped name (ewe/judge/weights) or a "
                                                     "folder written by `ewe judge train --prefix`")
    tau: float = Field(0.5, ge=0.0, le=1.0, description="a candidate whose entailment probability is below tau is "
                                                        "penalized")
    lambda_: float = Field(5.0, alias="lambda", ge=0.0, le=1000.0,
                           description="penalty scale: logit += lambda * log(p / (1 - p)); 0 judges but never steers")
    top_p: float = Field(0.9, gt=0.0, le=1.0, description="candidates: the most likely tokens whose probability "
                                                          "reaches top_p; the others are excluded")
    max_candidates: int = Field(8, ge=1, le=256, description="at most this many candidates judged per step")
    every: int = Field(1, ge=1, le=1024, description="judge every N tokens (1: every token, the paper)")
    scope: Literal["answer", "sentence"] = Field(
        "answer", description='the hypothesis: "answer" (the whole answer so far, the paper) or "sentence" (the '
                              'sentence being written, for long answers)')
    cache: bool = Field(True, description="extend the judge's KV cache one token at a time and score the candidates "
                                          "on it as one batch (false: read each candidate's text whole; slow)")
    max_premise_tokens: int | None = Field(None, ge=16, le=32_768,
                                           description="premise tokens the judge reads (default: the judge's own)")


class PrefixNLI(Method):
    """Plain decoding (passages as text or as memory units) steered by the prefix judge."""

    name = "prefixnli"
    section = "prefixnli"
    Options = PrefixNLIConfig

    @classmethod
    def batches(cls, config) -> bool:
        return True

    def check_inputs(self, prompts: list[str], dec) -> None:
        self.runtime.prepare(prompts, dec.system_prompt, dec.max_new_tokens)

    @property
    def judge(self):
        """The prefix judge, loaded on first use and kept by the Runtime: its own copy of the base
        model (its top layers are its own), never the generator."""
        return self.runtime.part(self.judge_key(self.options), self._load_judge)

    @staticmethod
    def judge_key(options: PrefixNLIConfig) -> str:
        """What the Runtime keeps the judge of these settings under (one judge per name and premise room)."""
        return f"prefix-judge:{options.judge}:{options.max_premise_tokens}"

    def _load_judge(self):
        from dataclasses import replace

        from ..judge.prefix_model import PrefixJudge

        judge = PrefixJudge.load(self.options.judge)
        if self.options.max_premise_tokens is not None:
            judge.spec = replace(judge.spec, max_premise_tokens=self.options.max_premise_tokens)
        if self.runtime.tokenizer.get_vocab() != judge.tokenizer.get_vocab():
            raise ValueError(f"prefixnli.judge {self.options.judge!r} reads tokens of another tokenizer than the "
                             f"generator's ({self.runtime.config.model.name}): the answer's token ids would mean other "
                             "text to it; train a prefix judge on the generator's base")
        return judge

    def settings(self):
        from .prefix_guide import GuideSettings

        o = self.options
        return GuideSettings(tau=o.tau, lam=o.lambda_, top_p=o.top_p, max_candidates=o.max_candidates, every=o.every,
                             scope=o.scope, cache=o.cache)

    def run(self, prompt: str, dec, passages: list[str] | None = None):
        return self.run_batch([prompt], dec, None if passages is None else [passages])[0]

    def run_batch(self, prompts: list[str], dec, rows: list[list[str]] | None) -> list:
        from ..stats import PrefixNLIStats
        from .prefix_guide import PrefixGuide

        self.check_inputs(prompts, dec)
        guides = []

        def hooks_for(passage_rows: list[list[str]]) -> list:
            premises = ["\n".join(r) if r else None for r in passage_rows]
            guides.append(PrefixGuide(self.judge, premises, self.settings(), self.runtime.stop_ids))
            return guides

        results = self.runtime.generate_plain(prompts, rows, dec, hooks_for=hooks_for, answer=True)
        guide = guides[0]
        tok = self.runtime.tokenizer
        for row, res in enumerate(results):
            summary = guide.summary(row)
            res.stats = PrefixNLIStats(**dict(res.stats), **summary)
            if guide.premises[row] is None:
                res.trace = [{"type": "prefix_unguided", "reason": "no passages to judge the answer against"}]
                continue
            res.trace = [{"type": "prefix_guide", **event, "top_before_text": tok.decode([event["top_before"]]),
                          "chosen_text": tok.decode([event.get("chosen", event["top_after"])]),
                          "candidates": [{**c, "text": tok.decode([c["token"]])} for c in event["candidates"]]}
                         for event in guide.events[row]]
        return results
