"""PrefixNLI's logits processor: the top-p candidate tokens are judged against the source, each as
the answer so far plus that token, and a candidate whose entailment probability p is below tau
gets lambda * log(p / (1 - p)) added to its logit; tokens outside the top-p set are excluded
(the paper, section 6.1). One function (`guide`) does it for a row; `PrefixGuide` applies it as a
hook of ewe's token loop, `PrefixNLILogitsProcessor` as a transformers LogitsProcessor for a plain
`model.generate()`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import torch

from ..verify.text import ends_sentence
from ..engine.actions import Hook
from ..judge.prefix_model import PrefixJudge
from ..judge.prefix_scorer import PrefixScorer

PROB_CLIP = 1e-6  # log-odds of a probability of exactly 0 or 1 would be infinite


@dataclass(frozen=True)
class GuideSettings:
    """The paper's tau (0.5), lambda (5), top-p (0.9); the most candidates judged per step; judging
    every `every` tokens; `scope` "answer" (the paper: the whole answer so far is the hypothesis) or
    "sentence" (the sentence being written: an answer with one wrong sentence does not drag every
    later candidate under tau); `cache` False reads each candidate's text whole (the reference)."""

    tau: float = 0.5
    lam: float = 5.0
    top_p: float = 0.9
    max_candidates: int = 8
    every: int = 1
    scope: str = "answer"
    cache: bool = True


def candidates(logits: torch.Tensor, top_p: float, most: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The smallest set of most likely tokens whose probability reaches `top_p` (at most `most`):
    their ids and probabilities, most likely first."""
    probs = torch.softmax(logits.float(), dim=-1)
    p, ids = probs.topk(min(most, probs.shape[-1]))
    before = p.cumsum(0) - p  # probability of the tokens ranked above each
    keep = int((before < top_p).sum())
    return ids[:max(1, keep)], p[:max(1, keep)]


def guide(logits: torch.Tensor, scorer: PrefixScorer, prefix: list[int], settings: GuideSettings,
          skip: set[int]) -> tuple[torch.Tensor, dict]:
    """One row's logits [V] adjusted (a new tensor) and what was judged. `skip`: tokens not judged
    (an end-of-answer token adds no claim)."""
    ids, probs = candidates(logits, settings.top_p, settings.max_candidates)
    judged = [int(t) for t in ids if int(t) not in skip]
    score = scorer.score if settings.cache else scorer.score_uncached
    entail = dict(zip(judged, score(prefix, judged).tolist())) if judged else {}
    out = torch.full_like(logits, float("-inf"))
    out[ids] = logits[ids]
    rows = []
    for t, p in zip(ids.tolist(), probs.tolist()):
        e = entail.get(t)
        penalty = 0.0
        if e is not None and e < settings.tau:
            q = min(max(e, PROB_CLIP), 1 - PROB_CLIP)
            penalty = settings.lam * math.log(q / (1 - q))
            out[t] += penalty
        rows.append({"token": t, "p_model": round(p, 4), "entailment": None if e is None else round(e, 4),
                     "penalty": round(penalty, 3)})
    return out, {"position": len(prefix), "candidates": rows, "top_before": int(ids[0]), "top_after": int(out.argmax())}


class PrefixGuide(Hook):
    """The logits processor as a hook of the token loop: each row judged against its own premise
    (None: the row has no source and is decoded as it is). The judge follows the row's record, so a
    rewound answer is judged from where it now stands."""

    def __init__(self, judge: PrefixJudge, premises: list[str | None], settings: GuideSettings, skip: set[int]):
        self.judge, self.premises, self.settings, self.skip = judge, premises, settings, set(skip)
        self.scorers: list[PrefixScorer | None] = [None] * len(premises)
        self.events: list[list[dict]] = [[] for _ in premises]
        self.judged_steps = [0] * len(premises)
        self.judge_s = [0.0] * len(premises)
        self._ends: dict[int, bool] = {}

    def logits(self, loop, logits: torch.Tensor) -> torch.Tensor:
        out = None
        for row, request in enumerate(loop.rows):
            if request.finish_reason or self.premises[row] is None:
                continue
            answer = list(request.record.tokens)
            if len(answer) % self.settings.every:
                continue
            t0 = time.perf_counter()
            scorer = self.scorer(row)
            adjusted, event = guide(logits[row], scorer, self.hypothesis(answer), self.settings, self.skip)
            self.judge_s[row] += time.perf_counter() - t0
            self.judged_steps[row] += 1
            if event["top_before"] != event["top_after"]:
                event["answer_position"] = len(answer)
                self.events[row].append(event)
            out = logits.clone() if out is None else out
            out[row] = adjusted
        return logits if out is None else out

    def on_token(self, loop, row: int, token: int, completed: list):
        events = self.events[row]
        if events and events[-1]["answer_position"] == len(loop.rows[row].record.tokens) - 1 and "chosen" not in events[-1]:
            events[-1]["chosen"] = token
        return None

    def scorer(self, row: int) -> PrefixScorer:
        if self.scorers[row] is None:
            self.scorers[row] = PrefixScorer(self.judge, self.premises[row])
        return self.scorers[row]

    def hypothesis(self, answer: list[int]) -> list[int]:
        """The tokens judged: the whole answer, or (scope "sentence") those after its last sentence end."""
        if self.settings.scope == "answer":
            return answer
        for i in range(len(answer) - 1, -1, -1):
            if self._ends_sentence(answer[i]):
                return answer[i + 1:]
        return answer

    def _ends_sentence(self, token: int) -> bool:
        if token not in self._ends:
            text = self.judge.tokenizer.decode([token])
            self._ends[token] = ends_sentence(text) or "\n" in text
        return self._ends[token]

    def summary(self, row: int) -> dict:
        scorer = self.scorers[row]
        return {"judged_steps": self.judged_steps[row], "interventions": len(self.events[row]),
                "judge_forwards": scorer.forwards if scorer else 0, "judge_tokens": scorer.tokens_read if scorer else 0,
                "judge_s": round(self.judge_s[row], 4)}


def logits_processor(judge: PrefixJudge, premises: list[str], prompt_length: int, settings: GuideSettings,
                     skip: set[int] = frozenset()):
    """PrefixNLI as a transformers LogitsProcessor, for `model.generate(..., logits_processor=[...])`:
    row b's answer is its input_ids from `prompt_length` on (the padded prompt's width)."""
    from transformers import LogitsProcessor

    class PrefixNLILogitsProcessor(LogitsProcessor):
        def __init__(self):
            self.scorers = [PrefixScorer(judge, p) for p in premises]
            self.events: list[list[dict]] = [[] for _ in premises]

        def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
            if input_ids.shape[0] != len(premises):
                raise ValueError(f"PrefixNLI logits processor: {input_ids.shape[0]} rows for {len(premises)} premises "
                                 "(one premise per row; beam search and num_return_sequences are not supported)")
            out = scores.clone()
            for b in range(input_ids.shape[0]):
                answer = input_ids[b, prompt_length:].tolist()
                if len(answer) % settings.every:
                    continue
                out[b], event = guide(scores[b], self.scorers[b], answer, settings, set(skip))
                if event["top_before"] != event["top_after"]:
                    self.events[b].append(event)
            return out

    return PrefixNLILogitsProcessor()
