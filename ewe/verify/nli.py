"""Any Hugging Face sequence-classification NLI checkpoint as a checker backend.

Premise: an evidence passage; hypothesis: the claim. The model's labels are mapped to
ours by name (entailment -> supported, neutral -> not_enough_evidence, contradiction ->
unsupported by default; configurable for checkpoints with other names or LABEL_i).
Loaded from a local path only: nothing is downloaded.
"""
from __future__ import annotations

from typing import Optional, Sequence

from .types import LABELS, NOT_ENOUGH_EVIDENCE, SUPPORTED, UNSUPPORTED, Claim, Evidence, Verdict

DEFAULT_LABEL_MAP = {
    "entailment": SUPPORTED, "entail": SUPPORTED, "entailed": SUPPORTED, "supports": SUPPORTED, "supported": SUPPORTED,
    "neutral": NOT_ENOUGH_EVIDENCE, "not_entailment": NOT_ENOUGH_EVIDENCE, "nei": NOT_ENOUGH_EVIDENCE,
    "not_enough_info": NOT_ENOUGH_EVIDENCE, "not_enough_evidence": NOT_ENOUGH_EVIDENCE,
    "contradiction": UNSUPPORTED, "contradict": UNSUPPORTED, "refutes": UNSUPPORTED, "unsupported": UNSUPPORTED,
}


def resolve_label_map(id2label: dict, label_map: Optional[dict] = None) -> list[str]:
    """Our label for each model output index. `label_map` keys may be label names
    (case-insensitive) or indices; unmapped names fall back to DEFAULT_LABEL_MAP."""
    user = {(k.lower() if isinstance(k, str) else int(k)): v for k, v in (label_map or {}).items()}
    out = []
    for i in range(len(id2label)):
        name = str(id2label.get(i, id2label.get(str(i), f"LABEL_{i}")))
        ours = user.get(i, user.get(name.lower(), DEFAULT_LABEL_MAP.get(name.lower())))
        if ours not in LABELS:
            raise ValueError(
                f"cannot map model label {i} ({name!r}) to one of {LABELS}; pass label_map, "
                f"e.g. {{{name!r}: 'supported'}}"
            )
        out.append(ours)
    return out


class NLIChecker:
    """NLI cross-encoder backend.

    A claim is supported when some passage's most likely label maps to supported;
    otherwise unsupported when some passage's maps to unsupported; else nee. The score
    is the highest probability mass on supported over the passages.
    """

    def __init__(self, model_path: str, label_map: Optional[dict] = None, device: str = "cpu",
                 max_length: int = 512, batch_size: int = 8, name: str = "nli"):
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
        self.model = AutoModelForSequenceClassification.from_pretrained(model_path, local_files_only=True).to(device).eval()
        self.labels = resolve_label_map(dict(self.model.config.id2label), label_map)
        self.device, self.max_length, self.batch_size, self.name = device, max_length, batch_size, name

    def probabilities(self, premises: list[str], hypotheses: list[str]):
        """(n, num_labels) softmax probabilities."""
        out = []
        for i in range(0, len(premises), self.batch_size):
            enc = self.tokenizer(premises[i:i + self.batch_size], hypotheses[i:i + self.batch_size], truncation="only_first",
                                 max_length=self.max_length, padding=True, return_tensors="pt").to(self.device)
            with self.torch.no_grad():
                out.append(self.torch.softmax(self.model(**enc).logits.float(), dim=-1).cpu())
        return self.torch.cat(out) if out else self.torch.zeros(0, len(self.labels))

    def check_claims(self, claims: Sequence[Claim], evidence_per_claim: Sequence[Sequence[Evidence]]) -> list[Verdict]:
        if len(claims) != len(evidence_per_claim):
            raise ValueError("one evidence list per claim is required")
        pairs = [(ci, ei) for ci, ev in enumerate(evidence_per_claim) for ei in range(len(ev))]
        probs = self.probabilities(
            [evidence_per_claim[ci][ei].premise() for ci, ei in pairs], [claims[ci].text for ci, _ in pairs]
        )
        sup = [i for i, lab in enumerate(self.labels) if lab == SUPPORTED]
        verdicts = []
        for ci, claim in enumerate(claims):
            rows = [(ei, probs[n]) for n, (c, ei) in enumerate(pairs) if c == ci]
            ev = list(evidence_per_claim[ci])
            if not rows:
                verdicts.append(Verdict(claim, NOT_ENOUGH_EVIDENCE, 0.0, [], self.name, rationale="no evidence"))
                continue
            tops = [(ei, self.labels[int(p.argmax())], float(p[sup].sum()) if sup else 0.0) for ei, p in rows]
            best = max(tops, key=lambda t: t[2])
            labels = {t[1] for t in tops}
            label = SUPPORTED if SUPPORTED in labels else UNSUPPORTED if UNSUPPORTED in labels else NOT_ENOUGH_EVIDENCE
            lead = best[0] if label != UNSUPPORTED else next(t[0] for t in tops if t[1] == UNSUPPORTED)
            ev = [ev[lead]] + [e for i, e in enumerate(ev) if i != lead]
            verdicts.append(Verdict(claim, label, best[2], ev, self.name,
                                    rationale="per passage: " + ", ".join(f"{t[1]} ({t[2]:.2f})" for t in tops)))
        return verdicts
