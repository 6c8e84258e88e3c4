"""Balanced accuracy of a fact-checker (rule claim splitter + AlignmentChecker; with --backend ita
the ITA tree over it; with --backend judge a trained judge) on the labelled set (tests/data/factcheck/labelled.jsonl), sentence level:

  gold       the item's own Wikipedia summary is the evidence for every claim
  retrieved  evidence = top-k passages per claim from the embedded Wikipedia datastore
             (the one EWE's controller checks against: MiniLM + FAISS, chunks of at most
             127 generator tokens, one per article; built on first use, minutes on a CPU)

Reported per alteration kind, with the time per claim. `--tune` grid-searches the
checker's thresholds on the tune split only and prints the best setting; the defaults in
AlignmentConfig come from that search. The test split is never used to choose them.

    python benchmarks/checker_accuracy.py                  # test split, gold + retrieved
    python benchmarks/checker_accuracy.py --split tune --tune
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ewe.verify import AlignmentChecker, AlignmentConfig, Evidence, FactChecker  # noqa: E402
from ewe.verify.claims import RuleClaimExtractor  # noqa: E402
from ewe.eval.checker_accuracy import balanced_accuracy, run_items, summarize  # noqa: E402
from ewe.data.labelled_set import DEFAULT_PATH, load_labelled_set  # noqa: E402


def retrieved_source():
    from ewe.model_loading import load_tokenizer
    from ewe.retrieval import default_datastore
    from ewe.verify.datastore_evidence import DatastoreEvidence

    t = time.perf_counter()
    store = default_datastore(load_tokenizer("embedded"), chunk_tokens=127)
    print(f"# evidence: datastore of {len(store)} passages ready in {time.perf_counter() - t:.1f}s", flush=True)
    return DatastoreEvidence(store)


def report(name: str, rows: list[dict], k: int | None = None) -> dict:
    s = summarize(rows)
    print(f"\n## {name}: n={s['n']}  balanced accuracy {s['balanced_accuracy']:.3f}  "
          f"(true kept {s['true_recall']:.3f}, false caught {s['false_detection']:.3f})  "
          f"{s['claims_per_sentence']:.2f} claims/sentence, {1000 * s['seconds_per_claim']:.0f} ms/claim")
    for kind, (acc, n) in s["per_kind"].items():
        print(f"   {kind:9s} {acc:.3f}  (n={n})")
    for src, (acc, n) in s["false_by_replacement"].items():
        print(f"   false, replacement {src}: {acc:.3f}  (n={n})")
    if k is not None:
        hit = [any(v.evidence and any(e.title == r['item']['title'] for e in v.evidence) for v in r["check"].verdicts)
               for r in rows if r["check"].verdicts]
        s["gold_passage_retrieved"] = sum(hit) / max(1, len(hit))
        print(f"   gold passage among the top-{k} of some claim: {s['gold_passage_retrieved']:.3f}")
    return s


def tune(items: list[dict], source, k: int) -> None:
    """Grid over support_sim x window on the given items, spans computed once."""
    checker = AlignmentChecker(AlignmentConfig(window=2))
    extractor = RuleClaimExtractor()
    settings = {"gold": None, "retrieved": source} if source is not None else {"gold": None}
    for mode, src in settings.items():
        feats = []
        for it in items:
            claims = extractor.extract(it["sentence"], context=it.get("context") or None).claims
            if src is None:
                evs = [[Evidence(text=it["evidence"], title=it["title"])] for _ in claims]
            else:
                evs = src.search([c.text for c in claims], k) if claims else []
            feats.append([checker.spans(c, ev) for c, ev in zip(claims, evs)])
        gold = [it["label"] for it in items]
        results = []
        for sim, window, names in itertools.product([0.4, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8], [1, 2], [0, 1]):
            cfg = replace(checker.config, support_sim=sim, window=window, max_missing_names=names)
            pred = [all(any(s.width <= window and s.sim >= sim and s.clean(cfg) for s in spans) for spans in f)
                    for f in feats]
            results.append((balanced_accuracy(gold, pred), sim, window, names))
        results.sort(key=lambda r: (-r[0], r[2], r[3], abs(r[1] - 0.6)))
        print(f"\n## tune ({mode}): best balanced accuracy / support_sim / window / max_missing_names")
        for r in results[:8]:
            print(f"   {r[0]:.3f}  sim>={r[1]:.2f}  window={r[2]}  names={r[3]}")


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(DEFAULT_PATH))
    ap.add_argument("--split", default="test", choices=["tune", "test", "all"])
    ap.add_argument("--mode", default="both", choices=["gold", "retrieved", "both"])
    ap.add_argument("--k", type=int, default=3, help="passages retrieved per claim")
    ap.add_argument("--limit", type=int, default=0, help="first N items only (0: all)")
    ap.add_argument("--tune", action="store_true", help="grid-search thresholds on --split (use tune)")
    ap.add_argument("--json", help="write the summary here")
    ap.add_argument("--judge", default="minilm-cross", help="with --backend judge: a shipped judge or a trained folder")
    ap.add_argument("--backend", default="alignment", choices=["alignment", "ita", "judge"],
                    help="ita: Iterative Tree Analysis over the alignment checker, sub-claims split by rules "
                         "(deterministic and offline; with gold evidence sub-claims use the item's evidence)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (1 by default: on the shared 2-core box two threads "
                         "contending with other work ran MiniLM ~8x slower)")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)

    items = load_labelled_set(args.data, None if args.split == "all" else args.split)
    if args.limit:
        items = items[: args.limit]
    print(f"# {len(items)} items ({args.split}) from {args.data}; backend {args.backend}; {AlignmentConfig()}; "
          f"torch threads {args.threads}")
    source = retrieved_source() if args.mode in ("retrieved", "both") else None
    if args.tune:
        if args.split == "test":
            sys.exit("refusing to tune on the test split")
        tune(items, source, args.k)
        return
    def backend(evidence):
        if args.backend == "alignment":
            return AlignmentChecker()
        if args.backend == "judge":
            from ewe.judge.checker import JudgeChecker

            return JudgeChecker(args.judge)
        from ewe.verify.tree import TreeChecker

        return TreeChecker(AlignmentChecker(), evidence, llm=None, k=args.k)

    out = {}
    if args.mode in ("gold", "both"):
        fc = FactChecker(backend(None))
        out["gold"] = report("gold evidence", run_items(fc, items, gold_evidence=True))
    if source is not None:
        fc = FactChecker(backend(source), evidence=source, k=args.k)
        out["retrieved"] = report(f"retrieved evidence (k={args.k})", run_items(fc, items, gold_evidence=False), k=args.k)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2, default=str))


if __name__ == "__main__":
    main()
