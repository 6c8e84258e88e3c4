"""The prefix judge while an answer is written: one KV cache per answer, extended as the answer
grows, and every candidate next token scored in the same forward pass.

The cache holds the premise and the prefix judged so far. A call brings it up to the prefix
given (crops back to the common part first, so a rewound or restarted answer is followed too),
feeds the prefix's new tokens and all candidates as one sequence, and drops the candidates again:
each candidate sits at the position after the prefix and reads the cache, the new tokens and
itself only (a tree-shaped attention mask), so N candidates cost one pass of N + new tokens,
not N passes over the premise and prefix (`score_uncached`, the reference).
"""
from __future__ import annotations

import torch

from .prefix_model import PrefixJudge


class PrefixScorer:
    """One answer's judge state against one premise; see the module docstring."""

    def __init__(self, judge: PrefixJudge, premise: str):
        from transformers import DynamicCache

        self.judge = judge
        self.header = judge.header_ids(premise)
        self.cache = DynamicCache(config=judge.model.config)
        self.judged: list[int] = []  # the hypothesis tokens on the cache after the header
        self.forwards = 0
        self.tokens_read = 0
        self._run(self.header, causal_until=len(self.header))

    def __len__(self) -> int:
        return len(self.header) + len(self.judged)

    @torch.no_grad()
    def score(self, prefix: list[int], candidates: list[int]) -> torch.Tensor:
        """Entailment probability of `prefix + [c]` for every candidate c, float32 [len(candidates)]."""
        common = 0
        for a, b in zip(self.judged, prefix):
            if a != b:
                break
            common += 1
        self._crop(len(self.header) + common)
        pending = list(prefix[common:])
        self.judged = list(prefix)
        if not pending and not candidates:
            return torch.empty(0)
        states = self._run(pending + list(candidates), causal_until=len(pending))
        self._crop(len(self))
        return self.judge.probability(states[len(pending):])

    def score_uncached(self, prefix: list[int], candidates: list[int]) -> torch.Tensor:
        """The same scores, each candidate's text read whole without a cache (the reference)."""
        texts = [self.header + list(prefix) + [c] for c in candidates]
        self.forwards += len(texts)
        self.tokens_read += sum(map(len, texts))
        return torch.stack([self.judge.score_full(t)[-1] for t in texts]) if texts else torch.empty(0)

    def _run(self, ids: list[int], causal_until: int) -> torch.Tensor:
        """Feed `ids` after the cache: the first `causal_until` as text (each reads those before it),
        the rest as siblings at the next position (each reads the text and itself). Final states [Q, H]."""
        past = self.cache.get_seq_length()
        q = len(ids)
        n_text = causal_until
        model = self.judge.model
        dtype = next(model.parameters()).dtype
        mask = torch.full((q, past + q), torch.finfo(dtype).min, dtype=dtype)
        mask[:, :past] = 0
        text = torch.ones(n_text, n_text, dtype=torch.bool).tril()
        mask[:n_text, past:past + n_text].masked_fill_(text, 0)
        mask[n_text:, past:past + n_text] = 0
        sib = torch.arange(n_text, q)
        mask[sib, past + sib] = 0
        positions = list(range(past, past + n_text)) + [past + n_text] * (q - n_text)
        out = model.model(torch.tensor([ids], device=model.device), attention_mask=mask[None, None].to(model.device),
                          position_ids=torch.tensor([positions], device=model.device), past_key_values=self.cache,
                          use_cache=True)
        self.forwards += 1
        self.tokens_read += q
        return out.last_hidden_state[0]

    def _crop(self, length: int) -> None:
        extra = self.cache.get_seq_length() - length
        if extra > 0:
            self.cache.crop(-extra)  # transformers 5 crops by a negative count
