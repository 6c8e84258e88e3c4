"""The trained judge as a checker backend: each claim against each evidence passage.

A passage longer than the judge's input is cut into windows of whole sentences, each
opening with the passage's title line (MiniCheck's chunking); a claim's score is the
highest P(supported) over all windows of all its passages, and it is supported above
`threshold`. Otherwise it is unsupported where some window contradicts it (P(unsupported)
above one half), else not enough evidence. Passages' lower states are cached by text, so
the passages the controller checks against again and again are encoded once.
"""
from __future__ import annotations

import functools
import json
import logging
import re
from collections import OrderedDict
from pathlib import Path
from typing import Optional, Sequence

import torch

from ..verify.text import sentence_spans
from ..verify.types import NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Claim, Evidence, Verdict
from .model import LABELS, JudgeModel, JudgeSpec, base_fingerprint, load_tokenizer

SHIPPED = Path(__file__).parent / "weights"
SHIPPED_JUDGES = ("minilm-cross", "scorer-cross")  # folders under SHIPPED (docs/JUDGE.md)
logger = logging.getLogger(__name__)


class JudgeError(RuntimeError):
    pass


class Judge:
    """A trained judge loaded from a folder with `judge.safetensors` and `manifest.json`."""

    def __init__(self, folder: str | Path = "minilm-cross", threads: Optional[int] = None, cache_size: int = 1024):
        from safetensors.torch import load_file

        self.folder = resolve(folder)
        manifest_path, weights = self.folder / "manifest.json", self.folder / "judge.safetensors"
        if not manifest_path.is_file() or not weights.is_file():
            raise JudgeError(f"{self.folder} is not a trained judge (needs manifest.json and judge.safetensors; "
                             "make one with `ewe judge train`)")
        self.manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        if self.manifest.get("base_sha256") != _base_sha():
            raise JudgeError(f"{self.folder} was trained on another base model than the installed all-MiniLM-L6-v2")
        if threads:
            torch.set_num_threads(threads)
        self.spec = JudgeSpec(**self.manifest["spec"])
        if self.spec.claim_only:
            raise JudgeError(f"{self.folder} is a claim-only leak detector, not a judge")
        self.model = JudgeModel(self.spec).eval()
        self.model.load_trained_state(load_file(str(weights)))
        self.tokenizer = load_tokenizer()
        self._cache: OrderedDict[str, torch.Tensor] = OrderedDict()
        self.cache_size = cache_size
        self.bucket = 8  # pairs per forward pass when many are checked at once (sorted by length)

    @property
    def name(self) -> str:
        return f"judge:{self.folder.name}" if self.folder.parent == SHIPPED else f"judge:{self.folder}"

    def clear_cache(self) -> None:
        """Forget the cached passage states (a benchmark's cold case)."""
        self._cache.clear()

    def windows(self, passage: str) -> list[str]:
        return windows(passage, self.tokenizer, self.spec.max_passage_tokens)

    def _passage_states(self, texts: list[str]) -> list[torch.Tensor]:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            enc = self.tokenizer(missing, truncation=True, max_length=self.spec.max_passage_tokens, padding=True,
                                 return_tensors="pt")
            h = self.model.lower(enc["input_ids"], enc["attention_mask"], 1)
            for i, t in enumerate(missing):
                self._cache[t] = h[i, : int(enc["attention_mask"][i].sum())].clone()
                if len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        out = []
        for t in texts:
            self._cache.move_to_end(t)
            out.append(self._cache[t])
        return out

    @torch.no_grad()
    def probabilities(self, claims: Sequence[str], passages: Sequence[str]) -> torch.Tensor:
        """(n, 3) P(supported, unsupported, not_enough_evidence) for n (claim, passage window) pairs."""
        if len(claims) != len(passages):
            raise ValueError(f"{len(claims)} claims but {len(passages)} passages: pairs are needed")
        if not claims:
            return torch.zeros(0, len(LABELS))
        if len(claims) > self.bucket:
            # similar lengths together (characters stand in for tokens), so a batch pads little
            sizes = [len(c) + len(p) for c, p in zip(claims, passages)]
            order = sorted(range(len(claims)), key=sizes.__getitem__)
            out = torch.empty(len(claims), len(LABELS))
            for i in range(0, len(order), self.bucket):
                idx = order[i:i + self.bucket]
                out[idx] = self.probabilities([claims[j] for j in idx], [passages[j] for j in idx])
            return out
        c = self.tokenizer(list(claims), truncation=True, max_length=self.spec.max_claim_tokens, padding=True,
                           return_tensors="pt")
        p = self.tokenizer(list(passages), truncation=True, max_length=self.spec.max_passage_tokens, padding=True,
                           return_tensors="pt")
        if self.spec.split == 0:
            logits = self.model(c["input_ids"], c["attention_mask"], p["input_ids"], p["attention_mask"])
        else:
            ch = self.model.lower(c["input_ids"], c["attention_mask"], 0)
            states = self._passage_states(list(passages))
            ph = torch.zeros(len(states), p["input_ids"].shape[1], ch.shape[-1], dtype=states[0].dtype)
            for i, s in enumerate(states):
                ph[i, : len(s)] = s
            logits = self.model.upper(ch, c["attention_mask"], ph, p["attention_mask"])
        return torch.softmax(logits.float(), dim=-1)


def windows(passage: str, tokenizer, max_tokens: int) -> list[str]:
    """`passage`, or windows of its whole sentences that each fit `max_tokens` (with the
    tokenizer's two special tokens), each opening with the passage's "Title (description):"
    line; a sentence longer than a window is left to truncation."""
    limit = max_tokens - 2
    if len(tokenizer.tokenize(passage)) <= limit:
        return [passage]
    m = re.match(r"[^:\n]{1,200}:\s", passage)
    head, body = (passage[:m.end()], passage[m.end():]) if m else ("", passage)
    out, cur = [], ""
    for a, b in sentence_spans(body) or ((0, len(body)),):
        s = body[a:b]
        trial = f"{cur} {s}".strip()
        if cur and len(tokenizer.tokenize(head + trial)) > limit:
            out.append(head + cur)
            cur = s
        else:
            cur = trial
    if cur:
        out.append(head + cur)
    return out


class JudgeChecker:
    """Checker backend over a trained Judge (the offline default): `judge` is a Judge, a shipped
    judge's name or a folder, loaded on first use."""

    def __init__(self, judge: "Judge | str | Path" = "minilm-cross", threshold: Optional[float] = None):
        self._judge = judge if isinstance(judge, Judge) or hasattr(judge, "probabilities") else None
        self._which = None if self._judge is not None else judge
        self._threshold = threshold

    @property
    def threshold(self) -> float:
        """The given threshold, else the judge's recorded operating point (`ewe judge
        operating-point --record`), else 0.5."""
        if self._threshold is None:
            self._threshold = 0.5 if self._which is None else recorded_threshold(self._which)
        return self._threshold

    @threshold.setter
    def threshold(self, value: float) -> None:
        self._threshold = value

    @property
    def judge(self) -> Judge:
        if self._judge is None:
            self._judge = load_judge(self._which)
        return self._judge

    @property
    def name(self) -> str:
        if self._judge is not None:
            return getattr(self._judge, "name", "judge")
        return f"judge:{self._which}"

    def _unread_tokens(self, claim: str) -> int:
        """Tokens of `claim` beyond the judge's max_claim_tokens (cut off before it reads them)."""
        n = len(self.judge.tokenizer(claim)["input_ids"])
        return max(0, n - self.judge.spec.max_claim_tokens)

    def check_claims(self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]) -> list[Verdict]:
        if len(claims) != len(evidence_per_claim):
            raise ValueError("one evidence list per claim is required")
        pairs = []  # (claim index, passage index, window text)
        for ci, ev in enumerate(evidence_per_claim):
            for ei, e in enumerate(ev):
                for w in self.judge.windows(e.premise()):
                    pairs.append((ci, ei, w))
        probs = self.judge.probabilities([claims[ci].text for ci, _, _ in pairs], [w for _, _, w in pairs])
        verdicts = []
        for ci, claim in enumerate(claims):
            rows = [(ei, probs[n]) for n, (c, ei, _) in enumerate(pairs) if c == ci]
            ev = list(evidence_per_claim[ci])
            if not rows:
                verdicts.append(Verdict(claim, NOT_ENOUGH_EVIDENCE, 0.0, [], self.name, rationale="no evidence"))
                continue
            best_sup = max(rows, key=lambda r: float(r[1][0]))
            best_con = max(rows, key=lambda r: float(r[1][1]))
            unread = self._unread_tokens(claim.text)
            if float(best_sup[1][0]) > self.threshold and unread:
                # the judge read only the claim's first max_claim_tokens: its end is unchecked
                label, lead = NOT_ENOUGH_EVIDENCE, best_sup[0]
            elif float(best_sup[1][0]) > self.threshold:
                label, lead = SUPPORTED, best_sup[0]
            elif float(best_con[1][1]) > 0.5:
                label, lead = UNSUPPORTED, best_con[0]
            else:
                label, lead = NOT_ENOUGH_EVIDENCE, best_sup[0]
            ordered = [ev[lead]] + [e for i, e in enumerate(ev) if i != lead]
            per_passage = {}
            for ei, p in rows:
                if ei not in per_passage or float(p[0]) > per_passage[ei][0]:
                    per_passage[ei] = [round(float(x), 3) for x in p]
            verdicts.append(Verdict(
                claim, label, float(best_sup[1][0]), ordered, self.name,
                rationale=f"P(supported) {float(best_sup[1][0]):.2f}, P(contradicted) {float(best_con[1][1]):.2f}"
                + (f"; the claim's last {unread} tokens are past what the judge reads" if unread else ""),
                details={"per_passage": [per_passage[i] for i in sorted(per_passage)]}))
        return verdicts


def recorded_threshold(which: str | Path, default: float = 0.5) -> float:
    """The operating point recorded in a judge's manifest, or `default` when it records none."""
    manifest = resolve(which) / "manifest.json"
    point = json.loads(manifest.read_text(encoding="utf-8")).get("operating_point") if manifest.is_file() else None
    return float(point["threshold"]) if point else default


def resolve(folder: str | Path) -> Path:
    """A shipped judge's name (minilm-cross) -> its folder; anything else is a folder."""
    if isinstance(folder, str) and folder in SHIPPED_JUDGES:
        return SHIPPED / folder
    path = Path(folder).expanduser()
    if not path.exists():
        raise JudgeError(f"judge {folder!r}: neither a shipped judge ({', '.join(SHIPPED_JUDGES)}) nor a folder")
    return path


@functools.lru_cache(maxsize=4)
def _load(folder: Path) -> Judge:
    return Judge(folder)


def load_judge(which: str | Path = "minilm-cross") -> Judge:
    """A judge by name or folder, loaded once per process."""
    return _load(resolve(which))


def shipped_judge(name: str = "minilm-cross") -> Judge:
    return load_judge(name)


@functools.lru_cache(maxsize=1)
def _base_sha() -> str:
    return base_fingerprint()
