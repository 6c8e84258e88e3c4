"""The Critics benchmark, built the way the ITA paper built Med-Critics (papers/ita-iterative-tree-
analysis.txt, 4.1): texts with a known set of falsified claims, and a critic's precision, recall and
F1 at finding them.

A text is the summary of one embedded-Wikipedia article no judge trained on (data.splits.is_held_out),
5 to 15 of its sentences, each made self-contained as the judge data does (a leading pronoun becomes
the subject). A text with errors has 1 to 3 of them (at most a third) falsified, one edit each
(falsify.py); each edit's category is chosen first, the least used one the text allows, so the
categories come out as even as the articles permit. Unaltered sentences are the negatives.

A critique flags spans of a text ("verdict": "reject"); a falsified sentence is found when a flagged
span overlaps it (a span finds at most one, the one it overlaps most), and a flagged span that
overlaps none is a false positive.
"""
from __future__ import annotations

import io
import re
from dataclasses import replace
from pathlib import Path
from typing import Optional

from ..files import atomic_write, read_jsonl
from ..judge import data as judge_data
from ..data.splits import is_held_out
from ..judge.data import Article
from ..verify.text import split_sentences
from .falsify import CATEGORIES, Falsifier
from .falsify_independent import IndependentFalsifier
from .paraphrase import reword

MIN_SENTENCES, MAX_SENTENCES = 5, 15
RULES = ("judge-data", "independent")  # the edits that falsify: falsify.py, falsify_independent.py
CHART = "critics_by_category.png"
# what a critic cost per text, when its results carry it (ewe eval critics run)
COST_COLUMNS = {"seconds_per_text": "s/text (median)", "judged_claims_per_text": "claims judged/text",
                "llm_calls_per_text": "LLM calls/text", "searches_per_text": "searches/text"}


# --- texts -----------------------------------------------------------------------------------


def held_out_articles(summaries: dict) -> list[Article]:
    """The articles no judge trains on, in title order; swaps draw from these too."""
    out = []
    for e in sorted(summaries.values(), key=lambda e: e["title"]):
        text = " ".join((e.get("extract") or "").split())
        if len(text) >= 200 and is_held_out(e["title"]):
            out.append(Article(e["title"], (e.get("description") or "").strip(), e.get("topic") or "",
                               split_sentences(text)))
    return out


def text_sentences(art: Article) -> list[str]:
    """The sentences a text is written from: whole statements, a leading pronoun resolved, at most 15."""
    usable = [s for s in art.sentences if 4 <= len(s.split()) <= 60 and s[:1].isupper() and s.endswith(".")
              and not re.search(r":[A-Za-z]", s)
              and s.count("(") == s.count(")")]
    named = replace(art, title=re.sub(r" \([^()]*\)$", "", art.title))  # "Hans Krebs", not "Hans Krebs (biochemist)"
    return [judge_data.resolve_subject(s, named) for s in usable][:MAX_SENTENCES]


def build(n: int, seed: int = 0, error_free_share: float = 0.2, summaries: Optional[dict] = None,
          categories: tuple[str, ...] = CATEGORIES, rules: str = "judge-data", paraphrase: bool = False) -> list[dict]:
    """`n` benchmark rows on held-out articles, sampled and falsified deterministically from `seed`.

    `rules`: "judge-data" falsifies with the judge data's own edits (falsify.py), "independent" with
    edits the judge never trained on (falsify_independent.py). `paraphrase` rewords every sentence
    (paraphrase.py) after the edits, so the text no longer repeats its source word for word."""
    if n < 1:
        raise ValueError(f"n={n}: ask for at least 1 text")
    if not 0 <= error_free_share <= 1:
        raise ValueError(f"error-free share {error_free_share} must be between 0 and 1")
    if not categories or set(categories) - set(CATEGORIES):
        raise ValueError(f"categories {categories!r}: choose from {CATEGORIES}")
    if rules not in RULES:
        raise ValueError(f"rules {rules!r}: choose from {RULES}")
    if summaries is None:
        from ..data import wiki

        summaries = wiki.summaries()
    articles = held_out_articles(summaries)
    falsifier = (IndependentFalsifier if rules == "independent" else Falsifier)(articles, seed)
    rng = falsifier.rng
    error_free = set(rng.sample(range(n), round(n * error_free_share)))
    counts = dict.fromkeys(categories, 0)
    pool = list(articles)
    rng.shuffle(pool)
    rows: list[dict] = []
    for art in pool:
        if len(rows) == n:
            break
        sentences = text_sentences(art)
        if len(sentences) < MIN_SENTENCES:
            continue
        edits = {} if len(rows) in error_free else _falsify(falsifier, art, sentences, counts, categories)
        if edits is not None:
            shown = [edits[i][1] if i in edits else s for i, s in enumerate(sentences)]
            if paraphrase:
                shown = reword(art, shown)
            row = _row(f"critics-{len(rows) + 1:04d}", art, sentences, shown, {i: c for i, (c, _) in edits.items()})
            rows.append({**row, "rules": rules, "paraphrased": paraphrase})
    if len(rows) < n:
        raise ValueError(f"only {len(rows)} held-out articles have {MIN_SENTENCES} usable sentences (and an edit "
                         f"where one is needed); ask for at most that many")
    return rows


def _falsify(f: Falsifier, art: Article, sentences: list[str], counts: dict, categories) -> Optional[dict]:
    """{sentence index: (category, altered)}, the least used category first; None when nothing applies."""
    edits: dict[int, tuple[str, str]] = {}
    for _ in range(f.rng.randint(1, max(1, min(3, len(sentences) // 3)))):
        for category in sorted(categories, key=lambda c: (counts[c], CATEGORIES.index(c))):
            order = [i for i in range(len(sentences)) if i not in edits]
            f.rng.shuffle(order)
            hit = next(((i, a) for i in order for a in [f.edit(category, art, sentences[i])] if a), None)
            if hit:
                edits[hit[0]] = (category, hit[1])
                counts[category] += 1
                break
    return edits or None


def _row(id_: str, art: Article, originals: list[str], shown: list[str], categories: dict[int, str]) -> dict:
    """The text of `shown` sentences; those in `categories` (index -> category) are the falsified ones."""
    spans, falsified, at = [], [], 0
    for i, (original, s) in enumerate(zip(originals, shown)):
        spans.append({"text": s, "start": at, "end": at + len(s)})
        if i in categories:
            falsified.append({"sentence_index": i, "start": at, "end": at + len(s), "category": categories[i],
                              "original": original, "altered": s})
        at += len(s) + 1
    return {"id": id_, "title": art.title, "text": " ".join(s["text"] for s in spans), "sentences": spans,
            "falsified": falsified, "evidence": [art.passage()], "error_free": not falsified}



# --- scoring ---------------------------------------------------------------------------------


def score(rows: list[dict], critiques: list[dict]) -> dict:
    """Precision, recall and F1 at finding the falsified sentences, micro-averaged over every text (a flag
    in an error-free text is a false positive), recall per category, and the share of error-free texts
    flagged at all. A falsified sentence counts once however many flagged claims overlap it; a text
    with no critique counts as one with no flags and is listed in "missing"."""
    texts = {r["id"]: r["text"] for r in rows}
    bad = _first_problem(critiques, texts)
    if bad:
        raise ValueError(f"critique {bad[0] + 1}: {bad[1]}")
    by_id = {c["id"]: c for c in critiques}
    falsified = {c: 0 for c in CATEGORIES}
    found = {c: 0 for c in CATEGORIES}
    false_positives = flagged = false_alarms = 0
    for r in rows:
        claims = by_id.get(r["id"], {}).get("claims", [])
        flags = [(c["start"], c["end"]) for c in claims if c["verdict"].lower() == "reject"]
        hit = set()
        for start, end in flags:
            # a flag finds at most one falsified sentence, the one it overlaps most: flagging a
            # whole paragraph must not find every error in it
            over = {i: min(end, f["end"]) - max(start, f["start"]) for i, f in enumerate(r["falsified"])}
            over = {i: n for i, n in over.items() if n > 0}
            if over:
                hit.add(max(over, key=over.get))
            false_positives += not over
        for i, f in enumerate(r["falsified"]):
            falsified[f["category"]] = falsified.get(f["category"], 0) + 1
            found[f["category"]] = found.get(f["category"], 0) + (i in hit)
        flagged += len(flags)
        false_alarms += bool(r["error_free"] and flags)
    n_found, n_falsified = sum(found.values()), sum(falsified.values())
    error_free = sum(bool(r["error_free"]) for r in rows)
    precision = _ratio(n_found, n_found + false_positives)
    recall = _ratio(n_found, n_falsified)
    return {"precision": precision, "recall": recall, "f1": _f1(precision, recall),
            "false_alarm_rate": _ratio(false_alarms, error_free),
            # a false positive has no category: per category only recall is defined
            "per_category": {c: {"falsified": falsified[c], "found": found[c], "recall": _ratio(found[c], falsified[c])}
                             for c in falsified if falsified[c] or c in CATEGORIES},
            "counts": {"texts": len(rows), "error_free_texts": error_free, "falsified": n_falsified, "found": n_found,
                       "flagged_claims": flagged, "false_positives": false_positives, "false_alarms": false_alarms},
            "missing": [r["id"] for r in rows if r["id"] not in by_id]}


def _ratio(a: int, b: int) -> Optional[float]:
    return a / b if b else None


def _f1(precision: Optional[float], recall: Optional[float]) -> Optional[float]:
    if recall is None:
        return None
    return 2 * precision * recall / (precision + recall) if precision and recall else 0.0


def _first_problem(critiques: list, texts: dict[str, str]) -> Optional[tuple[int, str]]:
    """(position, what is wrong) of the first critique that cannot be scored against the benchmark."""
    seen = set()
    for i, c in enumerate(critiques):
        if not isinstance(c, dict) or not isinstance(c.get("id"), str):
            return i, 'expected an object with a string "id" and a list "claims"'
        cid = c["id"]
        if cid not in texts:
            return i, f"id {cid!r} is not in the benchmark"
        if cid in seen:
            return i, f"id {cid!r} has a second critique"
        seen.add(cid)
        if not isinstance(c.get("claims"), list):
            return i, f'id {cid!r}: "claims" must be a list of {{"start", "end", "verdict"}}'
        for j, cl in enumerate(c["claims"]):
            if not (isinstance(cl, dict) and type(cl.get("start")) is int and type(cl.get("end")) is int
                    and isinstance(cl.get("verdict"), str)):
                return i, f'id {cid!r}: claim {j} needs whole-number "start" and "end" and a string "verdict"'
            if not 0 <= cl["start"] < cl["end"] <= len(texts[cid]):
                return i, (f"id {cid!r}: claim {j} spans {cl['start']}..{cl['end']}, not a non-empty span of "
                           f"its text (0..{len(texts[cid])})")
    return None


def read_benchmark(path: Path) -> list[dict]:
    """Benchmark rows, each checked where a bad one would be scored wrong, errors naming path:line."""
    rows, ids = [], set()
    for line, r in read_jsonl(path):
        keys_ok = isinstance(r, dict) and isinstance(r.get("id"), str) and isinstance(r.get("text"), str)
        falsified = r.get("falsified") if keys_ok else None
        if not keys_ok or not isinstance(falsified, list) or not isinstance(r.get("error_free"), bool):
            raise ValueError(f'{path}:{line}: not a benchmark row (needs "id", "text", "falsified", "error_free"; '
                             "ewe eval critics build writes them)")
        for f in falsified:
            if not (isinstance(f, dict) and type(f.get("start")) is int and type(f.get("end")) is int
                    and 0 <= f["start"] < f["end"] <= len(r["text"]) and isinstance(f.get("category"), str)):
                raise ValueError(f"{path}:{line}: id {r['id']!r}: a falsified entry needs a span of the text "
                                 "and a category")
        if r["id"] in ids:
            raise ValueError(f"{path}:{line}: id {r['id']!r} appears twice")
        ids.add(r["id"])
        rows.append(r)
    if not rows:
        raise ValueError(f"{path}: no benchmark rows")
    return rows


def read_critiques(path: Path, rows: list[dict]) -> list[dict]:
    """A critic's JSONL file ({"id", "claims": [{"start", "end", "verdict"}]} a line), errors naming path:line."""
    lines = read_jsonl(path)
    bad = _first_problem([c for _, c in lines], {r["id"]: r["text"] for r in rows})
    if bad:
        raise ValueError(f"{path}:{lines[bad[0]][0]}: {bad[1]}")
    return [c for _, c in lines]


# --- table and chart -------------------------------------------------------------------------


def write_table(results: dict, out_dir: Path) -> dict[str, Path]:
    """critics.md (a row per critic: P, R, F1, false alarms, recall per category) and the per-category
    recall chart, from {"critic name": score(...)} (or one score). The table is written first: without
    matplotlib the chart fails with a RuntimeError that says so."""
    if "per_category" in results:
        results = {"critic": results}
    categories = list(dict.fromkeys(c for r in results.values() for c in r["per_category"]))
    pct = lambda v: "–" if v is None else f"{100 * v:.1f}"  # noqa: E731
    costs = [k for k in COST_COLUMNS if any(k in r.get("cost", {}) for r in results.values())]
    lines = ["| Critic | Precision | Recall | F1 | False alarms | " + " | ".join(categories + [COST_COLUMNS[k] for k in costs])
             + " |", "|---|" + "---:|" * (4 + len(categories) + len(costs))]
    for name, r in results.items():
        cells = [pct(r["precision"]), pct(r["recall"]), pct(r["f1"]), pct(r["false_alarm_rate"])]
        cells += [pct(r["per_category"][c]["recall"]) if c in r["per_category"] else "–" for c in categories]
        cells += [str(r.get("cost", {}).get(k, "–")) for k in costs]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    first = next(iter(results.values()))
    counts = ", ".join(f"{c} {first['per_category'][c]['falsified']}" for c in categories if c in first["per_category"])
    n, clean = first["counts"]["texts"], first["counts"]["error_free_texts"]
    lines += ["", f"Percent. Precision, recall and F1 at finding the falsified sentences of {n} texts; false alarms: "
                  f"the share of the {clean} error-free texts with a flag; per category: recall. Falsified sentences: "
                  f"{counts}." + (" Cost: per text, in the same run." if costs else "")]
    out_dir = Path(out_dir)
    written = {"critics.md": atomic_write(out_dir / "critics.md", "\n".join(lines) + "\n")}
    written[CHART] = atomic_write(out_dir / CHART, _chart(results, categories))
    return written


def _chart(results: dict, categories: list[str]) -> bytes:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise RuntimeError(f"matplotlib is not installed: critics.md was written, {CHART} was not "
                           "(pip install matplotlib)") from None
    fig = Figure(figsize=(max(6.0, 1.2 * len(categories)), 3.8))
    ax = fig.add_subplot()
    width = 0.8 / len(results)
    for m, (name, r) in enumerate(results.items()):
        xs = [i + width * (m - (len(results) - 1) / 2) for i in range(len(categories))]
        ys = [100 * (r["per_category"].get(c, {}).get("recall") or 0) for c in categories]
        ax.bar_label(ax.bar(xs, ys, width, label=name, color=f"C{m % 10}"), fmt="%.0f", fontsize=7, padding=2)
    ax.set_xticks(range(len(categories)), [c.replace("_", " ") for c in categories], fontsize=8)
    ax.set_ylabel("recall (%)")
    ax.set_ylim(0, 105)
    ax.set_title("Falsified sentences found, by category")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    return buf.getvalue()
