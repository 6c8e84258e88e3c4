"""Claims in the generator's own words (`ewe judge paraphrase`).

The judge trained on claims in the passage's own words rejects what the embedded model
writes: "a pioneer of modern art" for "pioneered abstract painting". Here the embedded model
itself restates sentences of the articles (three instructions, sampled), and each restatement is
labelled by its consistency with the sentence it restates, MiniCheck-style:

* kept as **supported** only when it is consistent with its source sentence: every number of
  it is one of the source's, every name word is in the passage, it negates what the source
  negates, at most `max_novel` content words are new to the passage, and the embedder puts
  it close to the source (cosine >= `min_cosine`);
* dropped otherwise, with the reason (`paraphrases.jsonl` keeps every output, kept or not,
  so a reader can measure the labels' error and what the filter throws away).

`ewe judge data --paraphrases FILE` then adds each kept restatement as a supported claim and
makes its contrasts from the same model-written text (a number, name or antonym altered:
unsupported; the passage without the source sentence, or a detail added: not enough
evidence), so the model's style is on every label alike and gives none away.

Generation appends to `paraphrases.jsonl` batch by batch; a rerun skips the sentences already
done.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from ..verify.text import content_keys, fold, is_negated, name_words, number_keys, split_sentences, words
from .data import Article, is_held_out, is_proposition

INSTRUCTIONS = (
    "Rewrite this sentence in your own words: {source}",
    "Here is a fact about {subject}: \"{source}\" Write one sentence about {subject} that says this in "
    "different words.",
    "Here is a fact about {subject}: \"{source}\" Write the first sentence of a short article about {subject} "
    "that uses this fact.",
)


@dataclass
class Request:
    """One source sentence to restate: the article, which of its sentences, which instruction."""

    title: str
    sentence_index: int  # -1: the description line ("X is a ...")
    source: str
    instruction: int

    @property
    def key(self) -> str:
        """Unique per request: one sentence can hold several claims (clauses), each restated."""
        digest = hashlib.sha256(self.source.encode("utf-8")).hexdigest()[:8]
        return f"{self.title}\t{self.sentence_index}\t{self.instruction}\t{digest}"


def requests(articles: list[Article], per_article: int, seed: int) -> list[Request]:
    """`per_article` source sentences of each article (claims with their subject resolved),
    each with a seeded instruction; the same list on every machine."""
    rng = random.Random(seed)
    out = []
    for art in articles:
        sources = sorted({(i, c) for i, c in art.claims})
        rng.shuffle(sources)
        for i, claim in sources[:per_article]:
            out.append(Request(art.title, i, claim, rng.randrange(len(INSTRUCTIONS))))
    return out


def first_sentence(text: str) -> str:
    """The first sentence of the model's output, without list marks, quotes or a lead-in."""
    text = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s+", "", text.strip())
    text = re.sub(r"^(?:Sure|Here(?:'s| is)[^:]*|Rewritten sentence|Answer)\s*[:!,.]\s*", "", text, flags=re.I)
    sents = split_sentences(text.strip().strip('"').strip())
    return sents[0].strip().strip('"') if sents else ""


class Labeller:
    """Consistency of a restatement with the sentence it restates (see the module docstring)."""

    def __init__(self, max_novel: int = 2, min_cosine: float = 0.75, embedder=None):
        self.max_novel = max_novel
        self.min_cosine = min_cosine
        self._embedder = embedder

    @property
    def embedder(self):
        if self._embedder is None:
            from ..resources import embedded_minilm_path, sentence_transformer

            self._embedder = sentence_transformer(str(embedded_minilm_path()), "cpu")
        return self._embedder

    def cosines(self, pairs: list[tuple[str, str]]) -> list[float]:
        if not pairs:
            return []
        vecs = self.embedder.encode([p for p, _ in pairs] + [s for _, s in pairs], normalize_embeddings=True,
                                    convert_to_numpy=True)
        return [float(x) for x in (vecs[:len(pairs)] * vecs[len(pairs):]).sum(axis=1)]

    def reason(self, text: str, source: str, art: Article) -> Optional[str]:
        """Why `text` is not kept as a supported restatement of `source` (None: it is)."""
        if not text or not is_proposition(text):
            return "not a statement"
        if fold(text) == fold(source) or text.strip(" .") == source.strip(" ."):
            return "a copy of the source"
        subject_words = {fold(w) for w in words(art.subject)}
        if subject_words & {fold(w) for w in words(source)} and not subject_words & {fold(w) for w in words(text)}:
            return "does not name the subject"
        extra_numbers = number_keys(text) - number_keys(source)
        if extra_numbers:
            return f"number not in the source: {sorted(extra_numbers)[0]}"
        passage = art.passage()
        passage_words = {fold(w) for w in words(passage)}
        new_names = [w for w in name_words(text) if fold(w) not in passage_words]
        if new_names:
            return f"name not in the passage: {new_names[0]}"
        if is_negated(text) != is_negated(source):
            return "negation differs from the source"
        novel = sorted(k for k in content_keys(text) if not _known(k, passage_words))
        if len(novel) > self.max_novel:
            return f"{len(novel)} content words new to the passage: {', '.join(novel[:4])}"
        return None

    def label(self, outputs: list[tuple[str, Request, Article]]) -> list[dict]:
        """One row per output: the restatement, its source, and `kept` with the reason when dropped."""
        rows, to_embed = [], []
        for text, req, art in outputs:
            why = self.reason(text, req.source, art)
            row = {"id": req.key, "title": req.title, "split": "test" if is_held_out(req.title) else "train",
                   "sentence_index": req.sentence_index, "instruction": req.instruction, "source": req.source,
                   "paraphrase": text, "kept": why is None, "reason": why or ""}
            rows.append(row)
            if why is None:
                to_embed.append(row)
        for row, cos in zip(to_embed, self.cosines([(r["paraphrase"], r["source"]) for r in to_embed])):
            row["cosine"] = round(cos, 4)
            if cos < self.min_cosine:
                row["kept"], row["reason"] = False, f"cosine to the source {cos:.2f} < {self.min_cosine}"
        return rows


def _known(key: str, passage_words: set[str]) -> bool:
    """A content word the passage has, or has with another ending (pioneer/pioneered)."""
    if key in passage_words:
        return True
    stem = key[:max(5, len(key) - 3)]
    return len(key) >= 6 and any(w.startswith(stem) for w in passage_words)


class Paraphraser:
    """The embedded generator, batched and sampled, restating sources by an instruction."""

    def __init__(self, model_name: str = "embedded", batch_size: int = 16, max_new_tokens: int = 48,
                 temperature: float = 0.7, top_p: float = 0.9, repetition_penalty: float = 1.0, seed: int = 0):
        from ..model_loading import load_model

        self.model, self.tokenizer, _ = load_model(model_name)
        self.batch_size, self.max_new_tokens = batch_size, max_new_tokens
        self.temperature, self.top_p, self.seed = temperature, top_p, seed
        self.repetition_penalty = repetition_penalty  # HF counts the prompt too: above 1 it pushes the source away

    def restate(self, batch: list[tuple[Request, Article]]) -> list[str]:
        import torch

        from ..tokens import chat_ids

        prompts = [chat_ids(self.tokenizer, [{"role": "user", "content": INSTRUCTIONS[r.instruction].format(
            source=r.source, subject=art.subject)}]) for r, art in batch]
        width = max(map(len, prompts))
        pad = self.tokenizer.pad_token_id
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
        torch.manual_seed(self.seed + sum(map(len, prompts)))  # the same batch samples the same on rerun
        with torch.no_grad():
            out = self.model.generate(input_ids=ids, attention_mask=mask, max_new_tokens=self.max_new_tokens,
                                      do_sample=True, temperature=self.temperature, top_p=self.top_p,
                                      repetition_penalty=self.repetition_penalty, pad_token_id=pad)
        return [first_sentence(self.tokenizer.decode(o[width:], skip_special_tokens=True)) for o in out]


def generate(articles: list[Article], out_path: Path, per_article: int = 2, seed: int = 0,
             paraphraser: Optional[Paraphraser] = None, labeller: Optional[Labeller] = None,
             progress: bool = True) -> dict:
    """Restate `per_article` sentences of every article into `out_path` (appended per batch,
    resumed by key); returns counts of kept and dropped outputs by reason."""
    from ..record_log import RecordLog

    by_title = {a.title: a for a in articles}
    with RecordLog(out_path) as log:
        todo = [r for r in requests(articles, per_article, seed) if r.key not in log.done]
        paraphraser = paraphraser or Paraphraser(seed=seed)
        labeller = labeller or Labeller()
        batches = [todo[i:i + paraphraser.batch_size] for i in range(0, len(todo), paraphraser.batch_size)]
        if progress:
            from tqdm import tqdm

            batches = tqdm(batches, desc="restating", unit="batch")
        for batch in batches:
            pairs = [(r, by_title[r.title]) for r in batch]
            texts = paraphraser.restate(pairs)
            for row in labeller.label([(t, r, a) for t, (r, a) in zip(texts, pairs)]):
                log.append(row)
        return summary(log.records())


def summary(rows: Iterable[dict]) -> dict:
    rows = list(rows)
    reasons: dict[str, int] = {}
    for r in rows:
        if not r["kept"]:
            why = r["reason"].split(":")[0]
            reasons[why] = reasons.get(why, 0) + 1
    return {"outputs": len(rows), "kept": sum(r["kept"] for r in rows),
            "kept_by_split": {s: sum(r["kept"] and r["split"] == s for r in rows) for s in ("train", "test")},
            "dropped": dict(sorted(reasons.items(), key=lambda kv: -kv[1]))}
