"""Reports a person can read at a glance, from scored evaluation runs.

`write_report(summaries, out_dir)` writes into out_dir:

- results.md / results.csv: one row per method, grouped per dataset (Markdown rounded
  like the EWE paper, CSV with the raw numbers); a Coverage column (the mean share of the
  subject's article the answers state, ewe.verify.coverage) where some run measured it;
- f1_by_method.png, and sweep_<param>.png per swept parameter (F1, precision, recall
  against the value, one colour per method / dataset, like the paper's section 5 figures);
- index.html: one self-contained page (plots embedded, no script, no external asset) with the
  tables, the plots and every response, with where its wall time went (stats.time_parts, in
  seconds and decode steps) and sentence by sentence: the method's own checker verdict
  with the passages it cited (title, source, character offsets, text when known; EWE's
  controller, "none" for methods that check nothing), and the scorer's verdict of each claim,
  colour-coded with its evidence;
- audit.jsonl / audit.md: a seeded random sample of checked claims, every label present
  at least once, with an empty "human_label" to fill in, to judge the metric itself.

All input is checked before anything is written, and every file is written to a
temporary file beside it and then os.replace'd, so a report is never half written.
"""
from __future__ import annotations

import base64
import csv
import html
import io
import json
import math
import random
import re
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..files import atomic_write, read_jsonl
from . import metric

LABELS = ("supported", "unsupported", "not_enough_evidence")
NUMBER_KEYS = ("n", "K", "precision", "recall", "f1", "claims_per_response", "supported_per_response",
               "tokens", "seconds_per_prompt", "pauses", "backtracks")
SUMMARY_KEYS = ("method", "dataset") + NUMBER_KEYS + ("checker", "details")
SWEEP_KEYS = ("param", "value", "method", "dataset", "precision", "recall", "f1")
RESPONSE_KEYS = ("id", "prompt", "response", "sentences", "n_claims", "n_supported", "precision", "recall", "f1")

# Markdown/HTML table: (header, summary key, formatter name).
COLUMNS = (
    ("Method", "method", "text"), ("n", "n", "int"), ("Precision", "precision", "pct"),
    ("Recall", "recall", "pct"), ("F1@K", "f1", "pct"), ("K", "K", "int"),
    ("Claims/resp", "claims_per_response", "one"), ("Supported/resp", "supported_per_response", "one"),
    ("Raw claims/resp", "raw_claims_per_response", "one"), ("Repeated sent./resp", "repeated_sentences_per_response", "two"),
    ("Off-subject claims/resp", "off_subject_claims_per_response", "two"), ("Loop sent.", "loop_sentences", "int"),
    ("Meta sent.", "meta_sentences", "int"),
    ("Tokens", "tokens", "zero"), ("s/prompt", "seconds_per_prompt", "two"), ("Pauses", "pauses", "one"),
    ("Backtracks", "backtracks", "one"), ("Refine tokens", "refine_tokens", "one"), ("Checker", "checker", "text"),
    ("In-loop checker", "in_loop_checker", "text"),
)
# only Streaming-VR / Full-VR runs have refinement counts; only `ewe eval run` knows the methods' own checkers
OPTIONAL_KEYS = ("refine_tokens", "vr_method", "in_loop_checker", "self_graded", "raw_claims_per_response",
                 "raw_supported_per_response", "repeated_sentences_per_response", "off_subject_claims_per_response",
                 "loop_sentences", "meta_sentences", "coverage", "coverage_n")
_F1_COL = [key for _, key, _ in COLUMNS].index("f1")
COVERAGE_COLUMN = ("Coverage", "coverage", "pct")  # after F1@K, where some summary measured coverage


def _columns(summaries: list[dict]) -> tuple:
    """The table's columns: COLUMNS, with Coverage after F1@K when some run measured it (a run
    whose prompts name no article, or scored before coverage, keeps the table it had)."""
    if not any(s.get("coverage") is not None for s in summaries):
        return COLUMNS
    return COLUMNS[:_F1_COL + 1] + (COVERAGE_COLUMN,) + COLUMNS[_F1_COL + 1:]


# ---------------------------------------------------------------- formatting


def _fmt(value, kind: str) -> str:
    """One cell: rates as percentages with one decimal (the paper's style), NaN / None as a dash."""
    if kind == "text":
        return str(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if kind == "pct":
        return f"{100 * value:.1f}"
    if kind == "int":
        return str(int(value))
    digits = {"zero": 0, "one": 1, "two": 2, "three": 3}[kind]
    return f"{value:.{digits}f}"


def _pct(value) -> str:
    return _fmt(value, "pct")


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# ---------------------------------------------------------------- input checks


def _require(record, keys, where: str) -> None:
    """Name every missing key at once, so one fix-up round is enough."""
    if not isinstance(record, dict):
        raise ValueError(f"{where}: expected an object, got {type(record).__name__}")
    missing = [k for k in keys if k not in record]
    if missing:
        raise ValueError(f"{where}: missing key(s) {', '.join(missing)}")


def _require_numbers(record: dict, keys, where: str, allow_none: bool = False) -> None:
    for key in keys:
        value = record[key]
        if not (_is_number(value) or (allow_none and value is None)):
            raise ValueError(f"{where}: {key} must be a number, got {value!r}")


def _check_summaries(summaries) -> None:
    if not summaries:
        raise ValueError("summaries is empty: nothing to report")
    seen = set()
    for i, s in enumerate(summaries):
        where = f"summary {i}" + (f" ({s.get('method')} / {s.get('dataset')})" if isinstance(s, dict) else "")
        _require(s, SUMMARY_KEYS, where)
        _require_numbers(s, NUMBER_KEYS, where)
        pair = (s["method"], s["dataset"])
        if pair in seen:
            raise ValueError(f"{where}: method {pair[0]!r} on dataset {pair[1]!r} appears twice")
        seen.add(pair)


def _check_sweeps(sweeps) -> None:
    for i, p in enumerate(sweeps):
        where = f"sweep point {i}"
        _require(p, SWEEP_KEYS, where)
        _require_numbers(p, ("precision", "recall", "f1"), where)
        if not isinstance(p["value"], (int, float, str)):  # a number, or a choice ("body", true)
            raise ValueError(f"{where}: value must be a number, a string or a boolean, got {p['value']!r}")


def _check_claim(claim, where: str) -> None:
    _require(claim, ("text", "label", "score"), where)
    if claim["label"] not in LABELS:
        raise ValueError(f"{where}: label {claim['label']!r} is not one of {', '.join(LABELS)}")
    _require_numbers(claim, ("score",), where, allow_none=True)
    evidence = claim.get("evidence") or []
    if not isinstance(evidence, list):
        raise ValueError(f"{where}: evidence must be a list")
    for k, e in enumerate(evidence):
        _require(e, ("title", "text"), f"{where}, evidence {k}")


def _check_response(rec, summary: dict, where: str) -> None:
    """One details line: the fields the page and the audit read, and that it belongs to its summary."""
    _require(rec, RESPONSE_KEYS, where)
    for key in ("method", "dataset"):
        if key in rec and rec[key] != summary[key]:
            raise ValueError(f"{where}: {key} {rec[key]!r} does not match its summary's {summary[key]!r}")
    if not isinstance(rec["sentences"], list):
        raise ValueError(f"{where}: sentences must be a list")
    for j, sent in enumerate(rec["sentences"]):
        _require(sent, ("text", "claims"), f"{where}, sentence {j}")
        if not isinstance(sent["claims"], list):
            raise ValueError(f"{where}, sentence {j}: claims must be a list")
        for c, claim in enumerate(sent["claims"]):
            _check_claim(claim, f"{where}, sentence {j}, claim {c}")
    _check_run_sentences(rec.get("run_sentences"), where)
    if rec.get("coverage") is not None:  # optional: measured where the prompt names an article
        _require(rec["coverage"], ("coverage", "article_sentences"), f"{where}, coverage")
        _require_numbers(rec["coverage"], ("coverage", "article_sentences"), f"{where}, coverage")


def _check_run_sentences(sentences, where: str) -> None:
    """The method's own sentence records (optional: plain generation keeps none)."""
    if sentences is None:
        return
    if not isinstance(sentences, list):
        raise ValueError(f"{where}: run_sentences must be a list")
    for j, sent in enumerate(sentences):
        _require(sent, ("text",), f"{where}, run sentence {j}")
        evidence = sent.get("evidence") or []
        if not isinstance(evidence, list):
            raise ValueError(f"{where}, run sentence {j}: evidence must be a list")
        for k, e in enumerate(evidence):
            _require(e, ("title",), f"{where}, run sentence {j}, evidence {k}")


def _load_details(summary: dict) -> list[dict]:
    """Every response of one summary's details JSONL (relative paths: from the current directory)."""
    path = Path(summary["details"])
    label = f"{summary['method']} / {summary['dataset']}"
    if not path.is_file():
        raise FileNotFoundError(f"details file for {label} not found: {path}")
    records = read_jsonl(path)
    for n, rec in records:
        _check_response(rec, summary, f"{path}:{n}")
    return [rec for _, rec in records]


# ---------------------------------------------------------------- atomic writes


# ---------------------------------------------------------------- tables


def _by_dataset(summaries: list[dict]) -> dict[str, list[dict]]:
    """Summaries grouped per dataset, both in first-seen order (the order the harness ran them)."""
    groups: dict[str, list[dict]] = {}
    for s in summaries:
        groups.setdefault(s["dataset"], []).append(s)
    return groups


def _table_rows(summaries: list[dict]) -> list[dict]:
    """Per dataset, formatted cells for each method and which one has the best F1 (bolded)."""
    columns = _columns(summaries)
    tables = []
    for dataset, rows in _by_dataset(summaries).items():
        f1s = [r["f1"] for r in rows if not math.isnan(r["f1"])]
        best = max(f1s) if f1s else None
        tables.append({"dataset": dataset, "rows": [
            {"cells": [_fmt(r.get(key, "-" if kind == "text" else None), kind) for _, key, kind in columns],
             "best": r["f1"] == best,
             "self_graded": bool(r.get("self_graded"))}
            for r in rows]})
    return tables


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _results_md(summaries: list[dict], title: str, scorer_note: str = "") -> str:
    columns = _columns(summaries)
    headers = [h for h, _, _ in columns]
    lines = [f"# {title}", "",
             "Precision, recall and F1@K in %, over each response's unique claims (a claim that repeats an earlier "
             "one of the same response counts once; raw claims count every repeat); claims, tokens, pauses and "
             "backtracks are means per response; the best F1 per dataset is in bold.", ""]
    if columns is not COLUMNS:
        lines += ["Coverage in %: the share of the subject's article (its embedded Wikipedia summary) an answer "
                  "states, each article sentence credited with the share of its claims the alignment checker finds "
                  "in the answer; the mean over the answers whose prompt names an article.", ""]
    if scorer_note:
        lines += [f"Scoring judge: {scorer_note}.", ""]
    graded = sorted({s["method"] for s in summaries if s.get("self_graded")})
    if graded:
        lines += [f"Self-graded (marked *): {', '.join(graded)} check with the scoring judge itself while they "
                  "write, so their scores are not independent.", ""]
    for table in _table_rows(summaries):
        lines += [f"## {_md_cell(table['dataset'])}", "",
                  "| " + " | ".join(headers) + " |",
                  "|" + "|".join(":---" if i == 0 or h == "Checker" else "---:" for i, h in enumerate(headers)) + "|"]
        for row in table["rows"]:
            cells = [_md_cell(c) for c in row["cells"]]
            if row.get("self_graded"):
                cells[0] += " *"
            if row["best"]:
                cells[_F1_COL] = f"**{cells[_F1_COL]}**"
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        eff = vr_efficiency(_by_dataset(summaries)[table["dataset"]])
        if eff is not None:
            lines += [f"Streaming-VR's efficiency relative to Full-VR (1 - mean refinement tokens, streaming / full): "
                      f"{100 * eff:.1f}%", ""]
    return "\n".join(lines)


def vr_efficiency(rows: list[dict]) -> float | None:
    """Streaming-VR's efficiency relative to Full-VR on one dataset (`metric.vr_efficiency`),
    when it holds exactly one run of each with refinement counts; else None."""
    by_kind = {}
    for r in rows:
        if r.get("vr_method") and r.get("refine_tokens") is not None:
            by_kind.setdefault(r["vr_method"], []).append(r["refine_tokens"])
    if len(by_kind.get("streaming-vr", [])) != 1 or len(by_kind.get("full-vr", [])) != 1:
        return None
    return metric.vr_efficiency(by_kind["streaming-vr"], by_kind["full-vr"])


def _results_csv(summaries: list[dict]) -> str:
    """Raw numbers (repr precision), so the CSV reads back to exactly what was scored."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(SUMMARY_KEYS + OPTIONAL_KEYS), extrasaction="ignore",
                            lineterminator="\n")
    writer.writeheader()
    for s in summaries:
        writer.writerow({**s, "details": str(s["details"])})
    return buf.getvalue()


# ---------------------------------------------------------------- plots


def _png(fig) -> bytes:
    """PNG bytes, so the file itself can be written atomically like the others."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, bbox_inches="tight")
    return buf.getvalue()


def _new_figure(width: float, height: float):
    """A Figure outside pyplot: no global backend switch, no figure leaks, safe in threads."""
    return Figure(figsize=(width, height))


def _bar_chart(summaries: list[dict]) -> bytes:
    """F1 of every method, bars grouped (and centred) per dataset, one colour per method, values on top."""
    groups = _by_dataset(summaries)
    colours = {m: f"C{i % 10}" for i, m in enumerate(dict.fromkeys(s["method"] for s in summaries))}
    width = 0.8 / max(len(rows) for rows in groups.values())
    fig = _new_figure(max(5.0, 1.5 + width * len(summaries) * 1.6), 3.8)
    ax = fig.add_subplot()
    for d, rows in enumerate(groups.values()):
        rows = [r for r in rows if not math.isnan(r["f1"])]
        for m, r in enumerate(rows):
            x = d + width * (m - (len(rows) - 1) / 2)
            bars = ax.bar([x], [100 * r["f1"]], width, color=colours[r["method"]])
            ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=2)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_ylabel("F1@K (%)")
    ax.set_title("F1@K by method")
    ax.set_ylim(0, 105)
    handles = [Patch(color=c, label=m) for m, c in colours.items()]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    return _png(fig)


def _sweep_chart(param: str, points: list[dict]) -> bytes:
    """F1 (thick) with precision and recall (thin) against one swept value, a colour per method / dataset."""
    fig = _new_figure(6.4, 4.0)
    ax = fig.add_subplot()
    series: dict[tuple, list[dict]] = {}
    for p in points:
        series.setdefault((p["method"], p["dataset"]), []).append(p)
    # choices (strings, booleans: every value, if any is one) are placed in the order first swept,
    # numbers on a numeric axis
    categorical = any(not _is_number(p["value"]) for p in points)
    choices = list(dict.fromkeys(p["value"] for p in points)) if categorical else []
    position = {v: i for i, v in enumerate(choices)}

    def x(value):
        return position[value] if choices else value

    for i, ((method, dataset), pts) in enumerate(series.items()):
        pts = sorted(pts, key=lambda p: x(p["value"]))
        xs, colour = [x(p["value"]) for p in pts], f"C{i % 10}"
        ax.plot(xs, [100 * p["f1"] for p in pts], color=colour, lw=2.2, marker="o", label=f"{method} / {dataset}")
        ax.plot(xs, [100 * p["precision"] for p in pts], color=colour, lw=0.9, ls="--", marker=".")
        ax.plot(xs, [100 * p["recall"] for p in pts], color=colour, lw=0.9, ls=":", marker=".")
    if choices:
        ax.set_xticks(range(len(choices)), [str(v) for v in choices])
    else:
        values = sorted({p["value"] for p in points})
        if all(float(v).is_integer() for v in values) and len(values) <= 12:
            ax.set_xticks(values)
    styles = [Line2D([], [], color="grey", lw=2.2, label="F1@K"),
              Line2D([], [], color="grey", lw=0.9, ls="--", label="precision"),
              Line2D([], [], color="grey", lw=0.9, ls=":", label="recall")]
    ax.legend(handles=ax.get_legend_handles_labels()[0] + styles, fontsize=8, loc="upper left",
              bbox_to_anchor=(1.0, 1.0))
    ax.set_xlabel(param)
    ax.set_ylabel("%")
    ax.set_title(f"F1@K, precision, recall vs {param}")
    ax.grid(alpha=0.3)
    return _png(fig)


def _sweep_files(sweeps: list[dict]) -> dict[str, list[dict]]:
    """File name -> that parameter's points; distinct params never share a name."""
    by_param: dict[str, list[dict]] = {}
    for p in sweeps:
        by_param.setdefault(p["param"], []).append(p)
    files, used = {}, set()
    for param, points in by_param.items():
        stem = "sweep_" + (re.sub(r"[^A-Za-z0-9]+", "_", str(param)).strip("_") or "param")
        name, n = f"{stem}.png", 2
        while name in used:
            name, n = f"{stem}_{n}.png", n + 1
        used.add(name)
        files[name] = points
    return files


# ---------------------------------------------------------------- audit sample


def _all_claims(runs: list[tuple[dict, list[dict]]]) -> list[dict]:
    """Every checked claim with what a person needs to judge it, in input order."""
    claims = []
    for summary, records in runs:
        for rec in records:
            for sent in rec["sentences"]:
                for claim in sent["claims"]:
                    claims.append({
                        "method": summary["method"], "dataset": summary["dataset"], "id": rec["id"],
                        "prompt": rec["prompt"], "sentence": sent["text"], "claim": claim["text"],
                        "label": claim["label"], "score": claim["score"], "error": claim.get("error"),
                        "evidence": claim.get("evidence") or [], "human_label": ""})
    return claims


def _sample_indices(labels: list[str], size: int, rng: random.Random) -> list[int]:
    """`size` indices, at least one per label present (when size allows), the rest uniform."""
    if size >= len(labels):
        chosen = list(range(len(labels)))
    else:
        by_label: dict[str, list[int]] = {}
        for i, label in enumerate(labels):
            by_label.setdefault(label, []).append(i)
        present = sorted(by_label)
        rng.shuffle(present)  # decides which labels are kept when size < number of labels
        chosen = [rng.choice(by_label[label]) for label in present[:size]]
        taken = set(chosen)
        rest = [i for i in range(len(labels)) if i not in taken]
        chosen += rng.sample(rest, size - len(chosen))
    rng.shuffle(chosen)  # mixed order, so a reader's judgement is not anchored by runs of one verdict
    return chosen


def _audit_sample(claims: list[dict], size: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    picked = _sample_indices([c["label"] for c in claims], size, rng)
    return [{"audit_id": n, **claims[i]} for n, i in enumerate(picked, 1)]


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in _md(text).splitlines() or [""])


def _md(text) -> str:
    """Generated or retrieved text shown in Markdown as text: HTML tags and entities escaped
    (a renderer would otherwise run `<script>` or draw `<img>` written by the model)."""
    return html.escape(str(text), quote=False)


def _audit_md(sample: list[dict], title: str) -> str:
    lines = [f"# {title}: claim audit", "",
             f"{len(sample)} checked claims drawn at random. For each, decide whether the claim is true "
             "given the evidence (supported / unsupported / not_enough_evidence) and write it into "
             "`human_label` in audit.jsonl; agreement with `label` measures the metric itself.", ""]
    for a in sample:
        lines += [f"## {a['audit_id']}. {a['label']} (score {_fmt(a['score'], 'three')})", "",
                  f"*{a['method']} / {a['dataset']}, response {a['id']}*", "",
                  "Sentence:", "", _quote(a["sentence"]), "", f"Claim: **{_md(a['claim'])}**", ""]
        if a["error"]:
            lines += [f"Checker error: {_md(a['error'])}", ""]
        for e in a["evidence"]:
            lines += [f"- *{_md(e['title'])}* ({_fmt(e.get('score'), 'three')}): {_md(e['text'])}"]
        if not a["evidence"]:
            lines.append("- (no evidence)")
        lines += ["", "Human label: ____", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- HTML page

# a checker verdict -> the colour class it shares with the scorer's labels
_CHECK_CLASS = {"supported": "supported", "passed": "supported", "unsupported": "unsupported",
                "flagged, refined": "unsupported", "error": "unsupported", "not_enough_evidence": "not_enough_evidence"}
_SNIPPET = 320  # characters of a cited passage shown under its title


def _norm(text) -> str:
    return " ".join(str(text).split())


def _locate(response: str, texts: list[str]) -> list[tuple[int, int] | None]:
    """Where each text lies in the response, searching on from the one before (None: not in it)."""
    spans, at = [], 0
    for text in texts:
        text = str(text).strip()
        i = response.find(text, at) if text else -1
        spans.append((i, i + len(text)) if i >= 0 else None)
        if i >= 0:
            at = i + len(text)
    return spans


def _check_label(s: dict) -> str:
    """One of the method's sentence records, its checker verdict in words."""
    if not s.get("checked"):
        return "not checked"
    if s.get("verdict"):
        return str(s["verdict"]).replace("_", " ")
    return {False: "passed", True: "flagged, refined"}.get(s.get("needs_rewrite"), "checked")


def _offsets(e: dict) -> str:
    start, end = e.get("start"), e.get("end")
    return f"chars {start}–{end}" if _is_number(start) and _is_number(end) else "offsets unknown"


def _snippet(text: str) -> str:
    return text if len(text) <= _SNIPPET else text[:_SNIPPET].rstrip() + "…"


def _check_view(s: dict, scored_text: str) -> dict:
    """One of the method's sentence records as the page shows it: verdict, its colour, the passages."""
    label = _check_label(s)
    return {
        "label": label, "cls": _CHECK_CLASS.get(str(s.get("verdict") or label), "unknown"),
        "checked": bool(s.get("checked")),
        "text": "" if _norm(s["text"]) == _norm(scored_text) else str(s["text"]).strip(),  # split differently
        "evidence": [{"title": str(e.get("title") or "(untitled)"), "source_id": str(e.get("source_id") or ""),
                      "offsets": _offsets(e), "score": e.get("score"), "claim": str(e.get("claim") or ""),
                      "text": _snippet(str(e.get("text") or ""))} for e in s.get("evidence") or []],
    }


def _sentence_views(rec: dict, has_checker: bool) -> tuple[list[dict], list[dict]]:
    """The scored sentences of one response, each with the method's own checker records of the
    sentence(s) it overlaps and the scorer's claim tally; then the method's sentence records the
    scored text does not hold (normally none)."""
    scored = rec["sentences"]
    own = (rec.get("run_sentences") or []) if has_checker else []  # a method that checks nothing: "none"
    spans = _locate(rec["response"], [s["text"] for s in scored])
    own_spans = _locate(rec["response"], [s["text"] for s in own])
    used, views = set(), []
    for s, span in zip(scored, spans):
        mine = [i for i, (o, o_span) in enumerate(zip(own, own_spans))  # overlapping, else the same text
                if (o_span[0] < span[1] and span[0] < o_span[1] if span and o_span
                    else _norm(o["text"]) == _norm(s["text"]))]
        used.update(mine)
        n = len(s["claims"])
        good = sum(c["label"] == "supported" for c in s["claims"])
        views.append({
            "text": s["text"], "claims": s["claims"],
            "checks": [_check_view(own[i], s["text"]) for i in mine],
            "checker_note": "" if mine else ("no record of this sentence" if has_checker else "none"),
            "scorer": (f"{good}/{n} claim{'' if n == 1 else 's'} supported" if n else "no checkable claims")
            + "".join(f"; {what}" for key, what in _DEFECT_NOTES if s.get(key)),
        })
    rest = [_check_view(o, "") for i, o in enumerate(own) if i not in used and _norm(o["text"])]
    return views, rest


# the scorer's own defect marks of a sentence (eval/defects.py), as the page names them
_DEFECT_NOTES = (("repeats", "repeats an earlier sentence"), ("loop", "a loop inside the sentence"),
                 ("meta", "talks to the user, not an answer"))


def _checker_tally(rec: dict) -> str:
    """'4/5 sentences supported' by the method's own checker, or '' when it checked none."""
    checked = [s for s in rec.get("run_sentences") or [] if s.get("checked")]
    if not checked:
        return ""
    good = sum(_check_label(s) in ("supported", "passed") for s in checked)
    return f"{good}/{len(checked)} sentence{'' if len(checked) == 1 else 's'} supported"


def _time_line(stats: dict) -> str:
    """'74.7 s: candidate rounds 52.2 s (486 decode steps), decode 10.1 s (94), ...', largest part
    first; '' when the method does not break its time down."""
    tp = stats.get("time_parts")
    if not isinstance(tp, dict) or not isinstance(tp.get("seconds"), dict):
        return ""
    step = tp.get("decode_step_s")
    parts = sorted(((k, v) for k, v in tp["seconds"].items() if _is_number(v) and v >= 0.005), key=lambda kv: -kv[1])
    cells = [f"{k} {v:.1f} s" + (f" ({v / step:.0f}{' decode steps' if i == 0 else ''})" if step else "")
             for i, (k, v) in enumerate(parts)]
    total = stats.get("total_s")
    return (f"{total:.1f} s: " if _is_number(total) else "") + ", ".join(cells)


def _coverage_line(cov: dict) -> str:
    """'66.7% of the 3 sentences of the article on Marie Curie: stated 1, 3; in part 2' (1-based)."""
    n = cov.get("article_sentences") or 0
    parts = [f"{what} {', '.join(str(i + 1) for i in cov.get(key) or [])}"
             for key, what in (("stated", "stated"), ("partly", "in part")) if cov.get(key)]
    return (f"{_pct(cov.get('coverage'))}% of the {n} sentence{'' if n == 1 else 's'} of the article on "
            f"{cov.get('title') or 'the subject'}" + (": " + "; ".join(parts) if parts else ": none stated"))


def _group_view(summary: dict, records: list[dict]) -> dict:
    """One method on one dataset: whether it checks while it writes (the summary's in-loop checker,
    else its records), and every response's sentence views."""
    named = summary.get("in_loop_checker")
    named = named if isinstance(named, str) and named.strip() not in ("", "-") else ""
    has_checker = bool(named) or any(s.get("checked") for r in records for s in r.get("run_sentences") or [])
    views = []
    for rec in records:
        sentences, rest = _sentence_views(rec, has_checker)
        views.append({**rec, "views": sentences, "rest": rest, "checker_tally": _checker_tally(rec),
                      "time": _time_line(rec.get("stats") or {})})
    return {"method": summary["method"], "dataset": summary["dataset"], "records": views,
            "has_checker": has_checker, "checker_name": named}


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ title }}</title>
<style>
body{font-family:system-ui,sans-serif;max-width:72rem;margin:2rem auto;padding:0 1rem;line-height:1.45;color:#222}
table{border-collapse:collapse;margin:.5rem 0 1.5rem;font-size:.92em}
th,td{border:1px solid #ccc;padding:.2rem .5rem;text-align:right}
th:first-child,td:first-child,td:last-child{text-align:left}
th{background:#f4f4f4} td.best{font-weight:bold}
img{max-width:100%;border:1px solid #eee}
details{margin:.25rem 0} summary{cursor:pointer}
.sentence{margin:.9rem 0 .4rem;padding-top:.4rem;border-top:1px dotted #ddd}
.stext{margin:0 0 .25rem;font-size:1.02em}
.claim{margin:.15rem 0 .15rem 1.5rem;padding:.15rem .5rem;border-left:4px solid #999}
.check{margin:.15rem 0 .15rem 1.5rem;padding:.2rem .5rem;border:1px solid #999;border-radius:4px}
.supported{border-color:#2e7d32;background:#e8f5e9}
.unsupported{border-color:#c62828;background:#ffebee}
.not_enough_evidence{border-color:#f9a825;background:#fff8e1}
.check.none,.check.unknown{border-style:dashed;background:#fafafa;color:#555}
.tally{margin:.15rem 0 .15rem 1.5rem}
.verdict{font-weight:bold;font-size:.8em;text-transform:uppercase}
.tag{display:inline-block;min-width:4.5em;font-size:.75em;font-weight:bold;letter-spacing:.03em;color:#fff;
background:#37474f;border-radius:3px;padding:0 .35em;text-align:center}
.tag.scorer{background:#6a1b9a}
.sources{margin:.2rem 0 .1rem;padding-left:1.2rem;font-size:.9em}
.cite{font-family:ui-monospace,monospace;font-size:.9em;color:#333}
blockquote{margin:.15rem 0 .3rem .5rem;padding-left:.5rem;border-left:2px solid #ccc;color:#444}
.evidence{margin-left:1rem;font-size:.9em;color:#444}
.muted{color:#777;font-size:.9em} pre{white-space:pre-wrap;background:#fafafa;padding:.5rem}
</style></head><body>
<h1>{{ title }}</h1>
<p>Each sentence shows two verdicts that come from different places:
<span class="tag">checker</span> the method's own check while it wrote (EWE's controller), with the passages it
cited (title, source, character offsets in the source); methods without a checker show none;
<span class="tag scorer">scorer</span> the evaluation's independent checker, claim by claim, which the scores count.</p>
<p>Verdicts: {% for label in labels %}<span class="claim {{ label }}">{{ label }}</span> {% endfor %}</p>
<p class="muted">Precision, recall and F1@K in %; other columns are means per response. Claim sample for a
human check: <a href="audit.md">audit.md</a> / <a href="audit.jsonl">audit.jsonl</a>.</p>
<h2>Results</h2>
{% for table in tables %}<h3>{{ table.dataset }}</h3>
<table><thead><tr>{% for h in headers %}<th>{{ h }}</th>{% endfor %}</tr></thead><tbody>
{% for row in table.rows %}<tr>{% for c in row.cells %}<td{% if row.best and loop.index0 == f1_col %} class="best"{% endif %}>{{ c }}</td>{% endfor %}</tr>
{% endfor %}</tbody></table>
{% endfor %}
<h2>Plots</h2>
{% for plot in plots %}<figure><img src="{{ plot.src }}" alt="{{ plot.caption }}"><figcaption class="muted">{{ plot.caption }} ({{ plot.name }})</figcaption></figure>
{% endfor %}
<h2>Responses</h2>
{% for group in groups %}<h3>{{ group.dataset }} · {{ group.method }} <span class="muted">({{ group.records|length }} responses;
{% if group.checker_name %} checker: {{ group.checker_name }}{% elif group.has_checker %} checker: the method's own{% else %} checker: none, this method checks nothing while it writes{% endif %})</span></h3>
{% for r in group.records %}<details><summary><b>{{ r.id }}</b> · F1 {{ pct(r.f1) }} · P {{ pct(r.precision) }} · R {{ pct(r.recall) }} · scorer: {{ r.n_supported }}/{{ r.n_claims }} claims supported{% if r.n_claims_raw is defined and r.n_claims_raw != r.n_claims %} (unique; {{ r.n_claims_raw }} with repeats){% endif %}{% if r.checker_tally %} · checker: {{ r.checker_tally }}{% endif %}{% if r.coverage %} · coverage {{ pct(r.coverage.coverage) }}{% endif %} · <span class="muted">{{ r.prompt|truncate(100) }}</span></summary>
<p><b>Prompt:</b> {{ r.prompt }}</p>
{% if r.time %}<p class="muted"><b>Time:</b> {{ r.time }}</p>{% endif %}
{% if r.coverage %}<p class="muted"><b>Coverage:</b> {{ coverage_line(r.coverage) }}</p>{% endif %}
<details><summary>Full response</summary><pre>{{ r.response }}</pre></details>
{% if r.guidance %}<details class="guidance"><summary>Guidance: {{ r.guidance|length }} step{{ "" if r.guidance|length == 1 else "s" }} where the prefix judge changed the top token</summary>
{% for g in r.guidance %}<div class="check"><span class="tag">judge</span> at answer token {{ g.answer_position }}: “{{ g.top_before_text }}” &rarr; “{{ g.chosen_text }}”
<table><thead><tr><th>candidate</th><th>p (model)</th><th>entailment</th><th>penalty</th></tr></thead><tbody>
{% for c in g.candidates %}<tr><td>“{{ c.text }}”</td><td>{{ num(c.p_model) }}</td><td>{{ num(c.entailment) }}</td><td>{{ num(c.penalty) }}</td></tr>
{% endfor %}</tbody></table></div>
{% endfor %}</details>{% endif %}
{% for s in r.views %}<div class="sentence"><p class="stext">{{ s.text }}</p>
{% for k in s.checks %}<div class="check {{ k.cls }}"><span class="tag">checker</span> <span class="verdict">{{ k.label }}</span>{% if k.text %} <span class="muted">(its sentence: “{{ k.text }}”)</span>{% endif %}
{% if k.evidence %}<ul class="sources">
{% for e in k.evidence %}<li><b>{{ e.title }}</b> <span class="cite">{% if e.source_id %}{{ e.source_id }} · {% endif %}{{ e.offsets }}{% if e.score is not none %} · score {{ num(e.score) }}{% endif %}</span>{% if e.claim %} <span class="muted">for “{{ e.claim }}”</span>{% endif %}
{% if e.text %}<blockquote>{{ e.text }}</blockquote>{% endif %}</li>
{% endfor %}</ul>{% elif k.checked %} <span class="muted">no supporting passage</span>{% endif %}</div>
{% else %}<div class="check none"><span class="tag">checker</span> {{ s.checker_note }}</div>
{% endfor %}
<div class="tally"><span class="tag scorer">scorer</span> {{ s.scorer }}</div>
{% for c in s.claims %}<div class="claim {{ c.label }}"><span class="verdict">{{ c.label|replace("_", " ") }}</span> <span class="muted">{{ num(c.score) }}</span> {{ c.text }}{% if c.duplicate_of %} <span class="muted">(repeats “{{ c.duplicate_of.text }}”: {{ c.duplicate_of.why }}; counted once)</span>{% endif %}{% if c.off_subject %} <span class="muted">(names no word of the subject's name: off subject)</span>{% endif %}
{% if c.error %}<div class="muted">checker error: {{ c.error }}</div>{% endif %}
{% if c.evidence %}<details class="evidence"><summary>evidence ({{ c.evidence|length }})</summary><ul>
{% for e in c.evidence %}<li><b>{{ e.title }}</b> <span class="muted">({{ num(e.get('score')) }})</span>: {{ e.text }}</li>
{% endfor %}</ul></details>{% endif %}</div>
{% endfor %}</div>
{% else %}<p class="muted">no sentences</p>
{% endfor %}
{% if r.rest %}<p class="muted">Sentences the method recorded that the scored text does not hold:</p>
{% for k in r.rest %}<div class="check {{ k.cls }}"><span class="tag">checker</span> <span class="verdict">{{ k.label }}</span> {{ k.text }}</div>
{% endfor %}{% endif %}
</details>
{% endfor %}{% endfor %}
</body></html>
"""


def _index_html(title: str, summaries: list[dict], runs: list[tuple[dict, list[dict]]],
                plots: dict[str, str], images: dict[str, bytes]) -> str:
    """The whole report in one page; autoescape, so model output can never inject markup; the
    plots embedded as data: URLs, so the page alone is the whole report."""
    from jinja2 import Environment

    env = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(pct=_pct, num=lambda v: _fmt(v, "three"), coverage_line=_coverage_line)
    records = {(s["method"], s["dataset"]): (s, recs) for s, recs in runs}
    groups = [_group_view(*records[(s["method"], dataset)]) for dataset, rows in _by_dataset(summaries).items()
              for s in rows]
    figures = [{"name": name, "caption": caption,
                "src": "data:image/png;base64," + base64.b64encode(images[name]).decode("ascii")}
               for name, caption in plots.items()]
    return env.from_string(_PAGE).render(
        title=title, labels=LABELS, headers=[h for h, _, _ in _columns(summaries)], f1_col=_F1_COL,
        tables=_table_rows(summaries), plots=figures, groups=groups)


# ---------------------------------------------------------------- entry point


def write_report(summaries: list[dict], out_dir, sweeps: list[dict] | None = None, audit_size: int = 50,
                 seed: int = 0, title: str = "ewe evaluation", scorer_note: str = "") -> dict[str, Path]:
    """Write the tables, plots, HTML page and claim audit for scored runs into out_dir.

    Checks all input (summaries, every details file, sweeps) before writing anything.
    Returns {file name: path} for every file written.
    """
    if not isinstance(audit_size, int) or isinstance(audit_size, bool) or audit_size < 0:
        raise ValueError(f"audit_size must be an integer >= 0, got {audit_size!r}")
    summaries, sweeps = list(summaries), list(sweeps or [])
    _check_summaries(summaries)
    _check_sweeps(sweeps)
    runs = [(s, _load_details(s)) for s in summaries]

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    files = {"results.md": _results_md(summaries, title, scorer_note), "results.csv": _results_csv(summaries),
             "f1_by_method.png": _bar_chart(summaries)}
    plots = {"f1_by_method.png": "F1@K by method, per dataset"}
    for name, points in _sweep_files(sweeps).items():
        param = points[0]["param"]
        files[name] = _sweep_chart(param, points)
        plots[name] = f"F1@K (thick), precision (dashed), recall (dotted) against {param}"
    sample = _audit_sample(_all_claims(runs), audit_size, seed)
    files["audit.jsonl"] = "".join(json.dumps(a, ensure_ascii=False) + "\n" for a in sample)
    files["audit.md"] = _audit_md(sample, title)
    files["index.html"] = _index_html(title, summaries, runs, plots, files)
    return {name: atomic_write(out / name, data) for name, data in files.items()}
