"""`ewe eval prompts | score | claims | compare | table | run | critics`: prompt sets, scoring results files, paired
differences, whole comparisons, and the Critics benchmark."""
from __future__ import annotations

import json
import shlex
import sys
from contextlib import ExitStack
from pathlib import Path

import yaml

from ..argtypes import command_group, non_negative_int, positive_int, share
from ..ray_pool import add_ray_options


def _sweeps(items: list[str]) -> dict[str, list]:
    out = {}
    for item in items:
        key, sep, values = item.partition("=")
        if not sep or not values or not all("." in k for k in key.split("+")):
            raise SystemExit(f"ewe eval: --sweep {item!r}: expected SECTION.KEY=V1,V2,... e.g. memory.retrieval_units=1,2,4 "
                             "(KEY1+KEY2=... sets both to each value)")
        out[key] = [yaml.safe_load(v) for v in values.split(",")]
    return out


def _print_table(summaries: list[dict]) -> None:
    print(f"{'dataset':<10}{'method':<16}{'n':>4}{'K':>4}{'prec':>7}{'rec':>7}{'F1':>7}{'cover':>7}{'claims':>8}"
          f"{'tokens':>8}{'s/prompt':>9}{'pauses':>8}{'backtr':>8}{'refine':>8}")
    for s in summaries:
        cover = "-" if s.get("coverage") is None else format(100 * s["coverage"], ".1f")  # % of the article stated
        print(f"{s['dataset']:<10}{s['method']:<16}{s['n']:>4}{s['K']:>4}{100 * s['precision']:>7.1f}"
              f"{100 * s['recall']:>7.1f}{100 * s['f1']:>7.1f}{cover:>7}{s['claims_per_response']:>8.1f}{s['tokens']:>8.1f}"
              f"{s['seconds_per_prompt']:>9.1f}{s['pauses']:>8.1f}{s['backtracks']:>8.1f}"
              f"{'-' if s.get('refine_tokens') is None else format(s['refine_tokens'], '.1f'):>8}")


def _scorer_options(args, command: str) -> dict:
    """--scorer and, for openai, the endpoint it asks (built here, so a bad URL fails before any work)."""
    if args.scorer != "openai":
        if args.endpoint or args.model:
            raise SystemExit(f"ewe eval {command}: --endpoint and --model are for --scorer openai")
        return {"scorer": args.scorer}
    if not (args.endpoint and args.model):
        raise SystemExit(f"ewe eval {command}: --scorer openai needs --endpoint URL (an OpenAI-compatible API, "
                         f"e.g. http://localhost:8000/v1) and --model NAME")
    from .veriscore_openai import build

    return {"scorer": "openai", "claim_checker": build(args.endpoint, args.model, api_key_env=args.api_key_env)}


def _print_k(k_by_dataset: dict, given: bool = False) -> None:
    how = "given by --K" if given else "the median claim count of the answers scored, as VeriScore sets it"
    print("K (" + how + "): " + ", ".join(f"{ds} {k}" for ds, k in k_by_dataset.items()))


def _add_scorer_arguments(parser) -> None:
    from .claim_checkers import DEFAULT_SCORER, SCORERS

    parser.add_argument("--scorer", choices=SCORERS, default=DEFAULT_SCORER,
                        help="atomic: spaCy atomic claims, checked by the scorer's own verdict; rules: the loop-style "
                             "rule splitter and the eval config's checker (figures before the atomic scorer); openai: "
                             "VeriScore's prompts on --endpoint (ewe/eval/claim_checkers.py)")
    parser.add_argument("--endpoint", help="--scorer openai: base URL of an OpenAI-compatible API")
    parser.add_argument("--model", help="--scorer openai: the model name to ask")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY",
                        help="--scorer openai: environment variable holding the API key (unset: no key sent)")


def cmd_prompts(args) -> int:
    from ..data.prompt_sets import SUFFIX, prompt_set, write_prompts

    rows = prompt_set(args.set, args.n, args.seed, None if args.no_suffix else SUFFIX, args.split)
    if args.output:
        write_prompts(rows, Path(args.output))
        print(f"ewe eval: {len(rows)} prompts written to {args.output}", file=sys.stderr)
    else:
        for r in rows:
            print(json.dumps(r, ensure_ascii=False))
    return 0


def cmd_score(args) -> int:
    from .harness import score_files

    result = score_files([Path(r) for r in args.results], Path(args.out), eval_config=args.eval_config,
                         dataset=args.dataset, K=args.K, use_articles=not args.no_articles,
                         **_scorer_options(args, "score"))
    _print_table(result["summaries"])
    _print_k(result["K"], given=args.K is not None)
    print(f"report: {result['report'].get('index.html', args.out)}")
    return 0


def cmd_claims(args) -> int:
    from .claim_agreement import agreement, atomic_extract, read_labels, second_reader, summary

    try:
        rows = read_labels(Path(args.labels))
        extract = atomic_extract if args.reader is None else second_reader(rows, read_labels(Path(args.reader)))
    except (OSError, ValueError) as e:
        raise SystemExit(f"ewe eval claims: {e}") from None
    results = agreement(rows, extract)
    for r in results[: args.show]:
        print(f"\n{r.id}: {len(r.extracted)} extracted, {len(r.labelled)} labelled, {len(r.pairs)} matched")
        for c in r.missed:
            print(f"  missed:    {c}")
        for c in r.unmatched:
            print(f"  unmatched: {c}")
    s = summary(results)
    by, theirs = ("extracted", "extracted claims") if args.reader is None else \
        ("by the second reader", "the second reader's claims")
    print(f"\n{s['answers']} answers, {s['labelled_claims']} labelled claims, {s['extracted_claims']} {by}: "
          f"count off by {100 * s['count_error']:.1f}% per answer (mean absolute; target <= 20%), recall of the "
          f"labelled claims {s['recall']:.3f} (target >= 0.85), {theirs} matched {s['precision']:.3f}")
    return 0


def cmd_compare(args) -> int:
    from .compare import paired_difference

    for path in (args.a, args.b):
        if not Path(path).is_file():
            raise SystemExit(f"ewe eval compare: {path}: no such details file")
    try:
        d = paired_difference(Path(args.a), Path(args.b), args.K, args.resamples, args.seed, metric=args.metric)
    except ValueError as e:
        raise SystemExit(f"ewe eval compare: {e}") from None
    name = lambda p: Path(p).name.removesuffix(".details.jsonl")  # noqa: E731
    label = {"f1": f"F1@{d['K']}", "precision": "precision", "recall": f"recall@{d['K']}"}[d["metric"]]
    print(f"{name(args.a)} - {name(args.b)}: {label} {100 * d['mean_a']:.1f} - {100 * d['mean_b']:.1f} = "
          f"{100 * d['difference']:+.1f} over {d['n']} prompts ({100 * d['level']:.0f}% paired bootstrap interval "
          f"{100 * d['low']:+.1f} to {100 * d['high']:+.1f}, {d['resamples']} resamples)")
    if d["only_in_a"] or d["only_in_b"]:
        print(f"left out: {d['only_in_a']} responses only in A, {d['only_in_b']} only in B")
    return 0


def cmd_table(args) -> int:
    from .table import write

    if not Path(args.summary).is_file():
        raise SystemExit(f"ewe eval table: {args.summary}: no such summary file (ewe eval run writes OUT/summary.json)")
    try:
        table = write(Path(args.summary), args.baseline.split(","), Path(args.out), allow_mixed=args.allow_mixed)
    except (ValueError, FileNotFoundError) as e:
        raise SystemExit(f"ewe eval table: {e}") from None
    print(table["markdown"], end="")
    print(f"written: {args.out}")
    return 0


def cmd_run(args) -> int:
    from ..runner import RunError
    from .harness import EvalError, run_eval
    from ..data.prompt_sets import SUFFIX

    overrides = {"decoding.max_new_tokens": args.max_new_tokens, "decoding.temperature": 0.0}
    if args.ray_workers is not None and args.ray is None:
        raise SystemExit("ewe eval run: --ray-workers needs --ray auto|ADDRESS")
    try:
        with ExitStack() as stack:
            pool = None
            if args.ray is not None:  # Ray workers generate; scoring stays here
                from ..ray_pool import RayPool

                pool = stack.enter_context(RayPool(args.ray, args.ray_workers))
            result = run_eval(args.methods.split(","), args.datasets.split(","), Path(args.out), n=args.n,
                              seed=args.seed, suffix=None if args.no_suffix else SUFFIX, split=args.split,
                              eval_config=args.eval_config,
                              overrides=overrides, sweeps=_sweeps(args.sweep), sweep_method=args.sweep_method,
                              sweep_n=args.sweep_n, use_articles=not args.no_articles, pool=pool,
                              command=shlex.join(["ewe", *args.argv]),
                              **_scorer_options(args, "run"))
    except (EvalError, RunError) as e:
        raise SystemExit(f"ewe eval run: {e}") from None
    _print_table(result["summaries"])
    _print_k(result["K"])
    for row in result["sweeps"]:
        print(f"sweep {row['param']}={row['value']}: F1 {100 * row['f1']:.1f} (P {100 * row['precision']:.1f}, "
              f"R {100 * row['recall']:.1f}, n={row['n']})"
              + ("" if row.get("coverage") is None else f", coverage {100 * row['coverage']:.1f}"))
    for ds, eff in result.get("vr_efficiency", {}).items():
        print(f"{ds}: Streaming-VR efficiency relative to Full-VR (1 - refinement tokens S / F): {100 * eff:.1f}%")
    print(f"report: {result['report'].get('index.html', args.out)}")
    return 0


def cmd_critics_build(args) -> int:
    from ..files import write_jsonl
    from .critics import build

    try:
        rows = build(args.n, args.seed, args.error_free_share, rules=args.rules, paraphrase=args.paraphrase)
    except ValueError as e:
        raise SystemExit(f"ewe eval critics build: {e}") from None
    write_jsonl(args.out, rows)
    counts: dict[str, int] = {}
    for f in (f for r in rows for f in r["falsified"]):
        counts[f["category"]] = counts.get(f["category"], 0) + 1
    falsified = ", ".join(f"{c} {k}" for c, k in sorted(counts.items()))
    print(f"ewe eval critics: {len(rows)} texts ({sum(r['error_free'] for r in rows)} error-free), falsified "
          f"sentences: {falsified}; written to {args.out}", file=sys.stderr)
    return 0


def cmd_critics_score(args) -> int:
    from ..files import write_json
    from .critics import read_benchmark, read_critiques, score, write_table

    names = [Path(p).stem for p in args.critiques]
    if len(set(names)) < len(names):
        raise SystemExit(f"ewe eval critics score: two critiques files have the same name ({', '.join(names)}); the "
                         "file name (without .jsonl) names the critic in the table")
    try:
        rows = read_benchmark(Path(args.bench))
        results = {name: score(rows, read_critiques(Path(p), rows)) for name, p in zip(names, args.critiques)}
    except (ValueError, FileNotFoundError) as e:
        raise SystemExit(f"ewe eval critics score: {e}") from None
    write_json(Path(args.out) / "critics.json", results)
    for name, r in results.items():
        if r["missing"]:
            print(f"ewe eval critics: {name}: no critique for {len(r['missing'])} texts (counted as no flags), "
                  f"e.g. {r['missing'][0]}", file=sys.stderr)
    try:
        written = write_table(results, Path(args.out))
    except RuntimeError as e:
        raise SystemExit(f"ewe eval critics score: {e}") from None
    print(Path(written["critics.md"]).read_text(encoding="utf-8"), end="")
    print(f"written: {', '.join(str(p) for p in written.values())}, {Path(args.out) / 'critics.json'}")
    return 0


def cmd_critics_run(args) -> int:
    from .critics_run import run

    try:
        results = run(Path(args.bench), Path(args.out), args.config, tuple(filter(None, args.critics.split(","))),
                      tuple(filter(None, args.evidence.split(","))), args.limit)
    except (ValueError, FileNotFoundError, RuntimeError) as e:
        raise SystemExit(f"ewe eval critics run: {e}") from None
    print((Path(args.out) / "critics.md").read_text(encoding="utf-8"), end="")
    return 0 if results else 1


def add_eval_commands(sub) -> None:
    from ..data.prompt_sets import DEFAULT_SPLIT, SETS, SPLIT_CHOICES
    from .harness import CONFIGS

    split_help = ("the articles the named sets draw from (ewe/data/splits.py): test (the figures), dev (answers read, "
                  "rules written), train (what learned parts train on), or any (every article, as before the split)")

    which = command_group(sub, "eval", "factuality evaluation: prompt sets, a local VeriScore-style score, reports")

    p = which.add_parser("prompts", help="write a prompt set drawn from the embedded Wikipedia")
    p.set_defaults(func=cmd_prompts)
    p.add_argument("set", choices=list(SETS), help="bio, objects, or summaries (an article given, scored against it)")
    p.add_argument("--n", type=positive_int, default=30)
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--no-suffix", action="store_true", help="leave out the 'Provide as many specific details' suffix")
    p.add_argument("--split", choices=SPLIT_CHOICES, default=DEFAULT_SPLIT, help=split_help)
    p.add_argument("--output", help="JSONL file (default: print)")

    s = which.add_parser("score", help="score results files (one method each) and write details and a report")
    s.add_argument("results", nargs="+", help="JSONL results of ewe run / ewe generate (file stem = method name)")
    s.add_argument("--out", required=True, help="folder for details, summary.json and report/")
    s.add_argument("--dataset", default="custom", help="the name the table gives these prompts")
    s.add_argument("--K", type=positive_int, help="claims needed for full recall (default: the median over the files)")
    s.add_argument("--eval-config", default=str(CONFIGS / "eval.yaml"), help="the checker to score with")
    s.add_argument("--no-articles", action="store_true", help="datastore evidence only, not the prompt's article")
    _add_scorer_arguments(s)
    s.set_defaults(func=cmd_score)

    a = which.add_parser("claims", help="the scorer's claim extractor against answers split into claims by hand "
                                        "(tests/data/atomic_claims/): count difference and recall")
    a.add_argument("labels", help="JSONL of hand-split answers (tests/data/atomic_claims/LABELLING.md)")
    a.add_argument("--reader", help="JSONL of the same answers split by a second reader: compared in place of the "
                                    "extractor (how close two readers come)")
    a.add_argument("--show", type=non_negative_int, default=0, help="print the missed and unmatched claims of the "
                                                                    "first N answers")
    a.set_defaults(func=cmd_claims)

    c = which.add_parser("compare", help="two methods' F1@K on the same prompts: the mean difference and a paired "
                                         "bootstrap interval")
    c.add_argument("a", help="details of method A (OUT/<dataset>/<method>.details.jsonl)")
    c.add_argument("b", help="details of method B, scored on the same prompts")
    c.add_argument("--K", type=positive_int, help="claims needed for full recall: give the table's K (default: the "
                                                  "median claims per response over the two files)")
    c.add_argument("--metric", choices=["f1", "precision", "recall"], default="f1",
                   help="what is compared per prompt (precision: the share of an answer's unique claims supported)")
    c.add_argument("--resamples", type=positive_int, default=5000)
    c.add_argument("--seed", type=non_negative_int, default=0)
    c.set_defaults(func=cmd_compare)

    t = which.add_parser("table", help="the README's results table from a run: unique-claim F1, the paired "
                                       "difference to the best baseline, repeats, other subjects' facts, seconds")
    t.add_argument("summary", help="OUT/summary.json of ewe eval run")
    t.add_argument("--baseline", default="ra-1,ra,ra-4", help="comma-separated methods; the best of them per dataset is "
                                                          "what the others are compared with")
    t.add_argument("--out", required=True, help="JSON file: the figures and the Markdown table")
    t.add_argument("--allow-mixed", action="store_true",
                   help="make the table even if the run's rows come from several commits or uncommitted code "
                        "(refused otherwise); its caption names every commit")
    t.set_defaults(func=cmd_table)

    r = which.add_parser("run", help="run methods on prompt sets, score and report (resumable)")
    r.add_argument("--methods", default="bare,ra,flare,cove,ewe",
                   help="comma-separated config names (configs/NAME.yaml) or YAML paths")
    r.add_argument("--datasets", default="bio,objects", help="comma-separated: bio, objects, summaries, or JSONL paths")
    r.add_argument("--n", type=positive_int, default=30, help="prompts per dataset")
    r.add_argument("--seed", type=non_negative_int, default=0)
    r.add_argument("--no-suffix", action="store_true")
    r.add_argument("--split", choices=SPLIT_CHOICES, default=DEFAULT_SPLIT, help=split_help)
    r.add_argument("--max-new-tokens", type=positive_int, default=256, help="the same for every method")
    r.add_argument("--out", required=True)
    r.add_argument("--eval-config", default=str(CONFIGS / "eval.yaml"))
    r.add_argument("--no-articles", action="store_true")
    r.add_argument("--sweep", action="append", default=[], metavar="KEY=V1,V2,...",
                   help="also run --sweep-method at each value on the first dataset (repeatable); "
                        "KEY1+KEY2=V1,... sets both keys, e.g. memory.retrieval_units+retrieval.top_k=1,4,8")
    r.add_argument("--sweep-method", default="ewe")
    r.add_argument("--sweep-n", type=positive_int, help="prompts per swept value (default: all of the first dataset)")
    add_ray_options(r)
    _add_scorer_arguments(r)
    r.set_defaults(func=cmd_run)

    k = command_group(which, "critics", "the Critics benchmark: texts about held-out articles with known falsified "
                                        "sentences, and critics' precision / recall / F1 at finding them")
    kb = k.add_parser("build", help="write the benchmark's texts (JSONL)")
    kb.add_argument("--n", type=positive_int, default=120, help="texts")
    kb.add_argument("--seed", type=non_negative_int, default=0)
    kb.add_argument("--error-free-share", type=share, default=0.2, help="share of texts with no error (0 to 1)")
    kb.add_argument("--rules", choices=("judge-data", "independent"), default="judge-data",
                    help="the edits that falsify: the judge data's own (judge-data), or edits the judge never trained "
                         "on (independent)")
    kb.add_argument("--paraphrase", action="store_true", help="reword every sentence after the edits, so the text "
                    "does not repeat its source word for word")
    kb.add_argument("--out", required=True, help="JSONL file")
    kb.set_defaults(func=cmd_critics_build)
    ks = k.add_parser("score", help="score critics' critiques: critics.md, critics_by_category.png, critics.json")
    ks.add_argument("--bench", required=True, help="the benchmark JSONL (ewe eval critics build)")
    ks.add_argument("--critiques", required=True, nargs="+", help='JSONL files of {"id", "claims": [{"start", '
                    '"end", "verdict"}]}, one per critic (file stem = critic name); verdict "reject" flags a claim')
    ks.add_argument("--out", required=True, help="folder for the table, the chart and the scores")
    ks.set_defaults(func=cmd_critics_score)
    kr = k.add_parser("run", help="critics side by side in one run (ITA, the flat judge, the alignment heuristic; "
                      "evidence given and retrieved), scored, with their cost per text")
    kr.add_argument("--bench", required=True, help="the benchmark JSONL (ewe eval critics build)")
    kr.add_argument("--out", required=True, help="folder: one critiques JSONL per critic (appended; a rerun "
                    "resumes), critics.md, critics_by_category.png, critics.json")
    kr.add_argument("--critics", default="ita,judge,alignment", help="comma-separated: ita, ita-veto, ita-details, ita-unsure, judge, judge-veto, alignment")
    kr.add_argument("--evidence", default="given,retrieved", help="comma-separated: given (the text's source "
                    "article), retrieved (the datastore)")
    kr.add_argument("--config", default="configs/ita.yaml", help="the checker's other settings (judge, evidence_k, "
                    "ITA's depth and width) and the datastore")
    kr.add_argument("--limit", type=positive_int, help="the first N texts only")
    kr.set_defaults(func=cmd_critics_run)
