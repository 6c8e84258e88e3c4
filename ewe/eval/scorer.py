"""Scoring results files: claims and verdicts per response, then precision, recall@K and F1@K.

Checking is the slow part, so it is resumable: each response's sentences, claims and
verdicts are appended to `<results>.details.jsonl` as they are done, and a rerun skips
checked ids. Scores need K, which needs every response of the dataset, so they are
filled into the details (atomic rewrite) once all are checked.

Each details line also carries the answer's coverage of its subject's article (the embedded
Wikipedia summary its "topic" names; ewe.verify.coverage): the share of the article's sentences
the answer states, measured with the alignment checker whichever checker scores the claims.
Lines written before coverage, or by another coverage rule (`coverage_rule`), get it on the
next run, from the response they hold (no claim is checked again).
"""
from __future__ import annotations

import statistics
import sys
from pathlib import Path

from tqdm import tqdm

from ..data import wiki
from ..files import read_jsonl
from ..record_log import RecordLog
from ..stats import decode_step_s, time_parts
from ..verify.coverage import COVERAGE, CoverageMeter, default_meter, mean_coverage
from ..verify.types import Evidence
from .claim_checkers import DEFAULT_SCORER, SCORERS, AtomicClaims, RuleClaims, with_article
from .defects import DEFECTS, mark_defects
from .metric import DEDUP, count_fields, mark_duplicates, median_k, score


class Scorer:
    """Checks responses with one of the scorers of claim_checkers.py (`scorer`: atomic, rules or
    openai; `claim_checker` gives one ready-made, e.g. the OpenAI one with its endpoint), evidence
    from the Runtime's datastore (its checker section's evidence_k passages per claim) and, with
    `use_articles`, the article a prompt's "topic" names. It never generates, so the generator is
    loaded only if the checker itself asks a model. `coverage`: measure each answer's coverage of
    its topic's article (independent of `use_articles`, which only says whether the article is
    evidence for the claims); `coverage_meter` measures it (default: the shared MiniLM, loaded on
    the first answer with an article)."""

    def __init__(self, runtime, use_articles: bool = True, redundancy=None, coverage: bool = True,
                 coverage_meter: CoverageMeter | None = None, scorer: str = DEFAULT_SCORER, claim_checker=None):
        from ..judge.checker import shipped_judge
        from ..verify.redundancy import Redundancy

        if scorer not in SCORERS:
            raise ValueError(f"scorer {scorer!r}: expected one of {', '.join(SCORERS)}")
        if scorer == "openai" and claim_checker is None:
            raise ValueError("the openai scorer needs its endpoint: build it with veriscore_openai and pass it as "
                             "claim_checker (ewe eval score --scorer openai --endpoint URL --model NAME)")
        self.runtime = runtime
        self.use_articles = use_articles
        self.redundancy = redundancy or Redundancy(shipped_judge)  # the shipped judge links claims that restate each other
        self.coverage = coverage
        self._coverage_meter = coverage_meter
        self._claim_checker = claim_checker
        self.scorer = claim_checker.name if claim_checker is not None else scorer

    @property
    def claim_checker(self):
        """The scorer's ClaimChecker, built on first use (the rules and atomic ones from the eval
        config's checker)."""
        if self._claim_checker is None:
            fc = self.runtime.fact_checker(need_evidence=False)
            self._claim_checker = RuleClaims(fc) if self.scorer == "rules" else AtomicClaims(fc.checker, fc.k)
        return self._claim_checker

    def coverage_fields(self, response: str, topic, sentences: list[dict]) -> dict:
        """{"coverage": the answer's coverage of its topic's article (None when the topic names no
        article of the embedded Wikipedia), "coverage_rule": the rule it was measured with}. The
        answer's claims as scored (`sentences`) are aligned beside its sentences."""
        article = (wiki.summaries().get(topic) or {}).get("extract") if isinstance(topic, str) else None
        if not article:
            return {"coverage": None, "coverage_rule": COVERAGE}
        if self._coverage_meter is None:
            self._coverage_meter = default_meter()
        claims = [c["text"] for s in sentences for c in s.get("claims") or []]
        return {"coverage": self._coverage_meter.measure(response, article, topic, claims_of_answer=claims),
                "coverage_rule": COVERAGE}

    @property
    def checker_name(self) -> str:
        cfg = self.runtime.config
        return (f"{self.signature} (k={cfg.checker.evidence_k}"
                f"{', article' if self.use_articles else ''})")

    @property
    def signature(self) -> str:
        """What judges the claims: the loop-style checker signature for the rules scorer (so a method
        that checks with that checker while it writes is marked self-graded), else the scorer and
        its verdict."""
        if self.scorer == "rules":
            return checker_signature(self.runtime.config)
        return self.claim_checker.signature

    def accuracy_note(self) -> str:
        """The scoring judge's balanced accuracy on the hand-labelled generated sentences, as its
        manifest records it (`ewe judge eval --record`), or why there is none."""
        from ..judge.evaluate import recorded

        cfg = self.runtime.config.checker
        if cfg.backend not in ("judge", "alignment"):
            return f"{cfg.backend}: no balanced accuracy on the hand-labelled generated sentences recorded"
        name = cfg.judge if cfg.backend == "judge" else "alignment-atomic" if cfg.extractor == "atomic" else "alignment"
        label = f"judge {name}" if cfg.backend == "judge" else "alignment checker"
        rec = recorded(name)
        if not rec:
            return f"{label}: not yet measured on the hand-labelled set (`ewe judge eval --judge {name} --record`)"
        return (f"{label}: balanced accuracy {rec['balanced_accuracy']:.3f} on {rec['n']} hand-labelled "
                f"generated sentences ({rec['set']})")

    def _evidence_for(self, topic: str | None, source_only: bool = False):
        """Where one prompt's claims find their passages. source_only: the article the prompt gave
        (a summary's source) and nothing else, not what the datastore knows."""
        if source_only and not (topic and topic in wiki.summaries()):
            raise ValueError(f'a prompt scored against its source ("score_against": "source") names no article of '
                             f'the embedded Wikipedia as its "topic" (got {topic!r})')
        base = None if source_only else self.runtime.fact_checker(need_evidence=True).evidence
        article = None
        if (self.use_articles or source_only) and topic and topic in wiki.summaries():
            article = Evidence(text=wiki.passage(topic), title=topic, score=1.0, source_id=f"article:{topic}")
        return with_article(base, article)

    def check(self, row: dict, method: str, dataset: str) -> dict:
        """One result line -> its details line (claims, verdicts, counts; scores come later). A row
        with "score_against": "source" (the summaries set) is checked against its article only."""
        response = row.get("text", "")
        evidence = self._evidence_for(row.get("topic"), row.get("score_against") == "source")
        sentences = (self.claim_checker.check(response, row["prompt"], evidence, row.get("topic"))
                     if response.strip() else [])
        mark_duplicates(sentences, self.redundancy, row["prompt"])
        defects = mark_defects(sentences, row["prompt"], row.get("topic"))
        return {
            "id": str(row["id"]), "prompt": row["prompt"], "topic": row.get("topic"), "method": method,
            "dataset": dataset, "scorer": self.scorer, "response": response, "sentences": sentences,
            **count_fields(sentences), **defects,
            **(self.coverage_fields(response, row.get("topic"), sentences) if self.coverage else {}),
            "stats": kept_stats(row),
        }

    def deduplicate(self, detail: dict) -> dict:
        """A details line checked before unique-claim scoring (or counted by older defect rules)
        gets its duplicates and defects marked and its counts redone from the claims it holds (no
        claim is checked again); one measured before coverage (or by another coverage rule) gets
        its coverage measured from its response."""
        if detail.get("dedup") != DEDUP:
            mark_duplicates(detail["sentences"], self.redundancy, detail.get("prompt"))
            detail.update(count_fields(detail["sentences"]))
        if detail.get("defects") != DEFECTS:
            detail.update(mark_defects(detail["sentences"], detail.get("prompt") or "", detail.get("topic")))
        if self.coverage and detail.get("coverage_rule") != COVERAGE:
            detail.update(self.coverage_fields(detail.get("response") or "", detail.get("topic"), detail["sentences"]))
        return detail

    def check_file(self, results: Path, details: Path, method: str, dataset: str, progress: bool = True) -> list[dict]:
        """Check every response of `results` not yet in `details`; return all details lines."""
        rows = read_results(results)
        set_aside_other_scorers(details, self.scorer)
        with RecordLog(details) as log:
            todo = [r for r in rows if str(r["id"]) not in log.done]
            for row in tqdm(todo, desc=f"checking {method}/{dataset}", unit="response", disable=not progress):
                log.append(self.check(row, method, dataset))
            written = log.records()
        by_id = {str(r["id"]): r for r in rows}
        kept = [self.deduplicate(d) for d in written if d["id"] in by_id]
        for d in kept:  # stats come from the results file, so details checked by an older ewe get today's keys
            d["stats"] = kept_stats(by_id[d["id"]])
        return kept


def set_aside_other_scorers(details: Path, scorer: str) -> None:
    """A details file checked by another scorer (lines before scorers were named: rules) is renamed
    `<name>.<its scorer>.jsonl` beside it, kept whole, so this scorer starts its own file and the
    two are never mixed in one score."""
    if not details.exists():
        return
    scorers = {d.get("scorer", "rules") for _, d in read_jsonl(details) if isinstance(d, dict)}
    if not scorers or scorers == {scorer}:
        return
    old = "+".join(sorted(scorers))
    aside = details.with_name(f"{details.name.removesuffix('.jsonl')}.{old}.jsonl")
    if aside.exists():
        raise FileExistsError(f"{details}: checked by the {old} scorer, and {aside} (where it would be moved) exists; "
                              f"move one of them, or score into another --out")
    details.rename(aside)
    print(f"ewe eval: {details} was checked by the {old} scorer; kept as {aside}, scoring with {scorer} anew",
          file=sys.stderr)


STATS_KEPT = ("method", "new_tokens", "decoded_tokens", "total_s", "pauses_retrieval", "pauses_verification",
              "backtracks", "checks", "refine_tokens")


def kept_stats(row: dict) -> dict:
    """The result's stats a details line carries (what the report's columns need), with its wall
    time by part (stats.time_parts; None for methods that do not break it down)."""
    stats = row.get("stats", {})
    parts = time_parts(stats)
    step = decode_step_s(stats) if parts else None
    return {**{k: stats.get(k) for k in STATS_KEPT},
            "time_parts": None if parts is None else {"seconds": {k: round(v, 4) for k, v in parts.items()},
                                                      "decode_step_s": step}}


def apply_scores(details: list[dict], K: int) -> list[dict]:
    for d in details:
        s = score(d["n_claims"], d["n_supported"], K)
        d.update(K=K, precision=s.precision, recall=s.recall, f1=s.f1)
    return details


def checker_signature(cfg) -> str:
    """What judges a configuration's claims: the backend (the judge's name), and the extractor."""
    c = cfg.checker
    base = c.ita_base if c.backend == "ita" else c.backend
    judge = f"judge:{c.judge}" if base == "judge" else base
    return f"{f'ita({judge})' if c.backend == 'ita' else judge}+{c.extractor}"


def in_loop_checker(cfg) -> str | None:
    """The checker a method consults while it writes (None for methods that check nothing)."""
    return checker_signature(cfg) if cfg.self_checks else None


def summarize(details: list[dict], method: str, dataset: str, K: int, checker: str, details_path: Path) -> dict:
    """Dataset means, as the report table shows them."""
    if not details:
        raise ValueError(f"{method}/{dataset}: no scored responses")

    def mean(key, source=None):
        vals = [(d if source is None else d["stats"]).get(key) for d in details]
        vals = [v for v in vals if v is not None]
        return statistics.mean(vals) if vals else 0.0

    pauses = [(d["stats"].get("pauses_retrieval") or 0) + (d["stats"].get("pauses_verification") or 0) for d in details]
    refine = [d["stats"]["refine_tokens"] for d in details if d["stats"].get("refine_tokens") is not None]
    kinds = {d["stats"].get("method") for d in details}
    vr_method = next(iter(kinds)) if len(kinds) == 1 and kinds <= {"streaming-vr", "full-vr"} else None
    coverage, coverage_n = mean_coverage([d.get("coverage") for d in details])
    return {
        "method": method, "dataset": dataset, "n": len(details), "K": K,
        "precision": mean("precision"), "recall": mean("recall"), "f1": mean("f1"),
        "coverage": coverage, "coverage_n": coverage_n,  # mean over the answers whose topic has an article
        "claims_per_response": mean("n_claims"), "supported_per_response": mean("n_supported"),
        "raw_claims_per_response": mean("n_claims_raw"), "raw_supported_per_response": mean("n_supported_raw"),
        "repeated_sentences_per_response": mean("repeated_sentences"),
        "loop_sentences": sum(d.get("loop_sentences") or 0 for d in details),
        "meta_sentences": sum(d.get("meta_sentences") or 0 for d in details),
        "off_subject_claims_per_response": _mean_known([d.get("off_subject_claims") for d in details]),
        "other_subject_credits": sum(d.get("other_subject_credits") or 0 for d in details),
        "no_claim_responses": sum(1 for d in details if d["n_claims"] == 0),
        "tokens": mean("new_tokens", "stats"), "seconds_per_prompt": mean("total_s", "stats"),
        "pauses": statistics.mean(pauses), "backtracks": mean("backtracks", "stats"),
        "refine_tokens": statistics.mean(refine) if refine else None, "vr_method": vr_method,
        "checker": checker, "details": str(details_path),
    }


def _mean_known(values: list) -> float | None:
    """The mean of the values that are not None (None when none is known)."""
    known = [v for v in values if v is not None]
    return statistics.mean(known) if known else None


def score_dataset(runs: dict[str, list[dict]], K: int | None = None) -> int:
    """Fill scores into every method's details of one dataset; K = median claims over all of them."""
    K = K or median_k([d["n_claims"] for rows in runs.values() for d in rows])
    for rows in runs.values():
        apply_scores(rows, K)
    return K


def read_results(path: Path) -> list[dict]:
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such results file")
    if not path.is_file():
        raise ValueError(f"{path}: not a file")
    rows = read_jsonl(path)
    for n, row in rows:
        if not isinstance(row, dict) or "id" not in row or not isinstance(row.get("prompt"), str):
            raise ValueError(f'{path}:{n}: a result line needs "id" and "prompt"')
        if not isinstance(row.get("text"), str):
            # a prompts file, an errors file or another tool's JSONL: scoring it would report F1 0
            raise ValueError(f'{path}:{n}: a result line needs the generated "text" (a string); is this the output '
                             "of ewe run / ewe generate --input?")
    if not rows:
        raise ValueError(f"{path}: no results in it")
    return [row for _, row in rows]
