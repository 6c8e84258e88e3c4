"""`ewe bench run`: wall time per prompt of whole methods, each against a baseline in the same run.

With one `--config` (an EWE configuration with pauses, default configs/ewe.yaml) the baseline
is RA built from it (its passages in the prompt, no pauses). With several (`--config A
--config B ...`) each file is a method, named by its file, and the first is the baseline.
The methods share the loaded model, datastore and checker where their sections are equal, and
run the same prompts with the same decoding settings, interleaved prompt by prompt (the order
alternates), so machine noise hits them alike. Reported: median seconds per prompt, tokens
kept and decoded, pauses, checks, backtracks, two ratios to the baseline, and where each
method's time goes (stats.time_parts: seconds and decode-step equivalents per answer, mean
over the prompts). The ratios, each from this run:

* "vs RA" (or "vs" the first configuration): a method's median seconds per prompt over the baseline's. Same prompts, same model, same
  decoding limits: it is the price of answering the same prompt with that method, which by
  design does more work (retrieval pauses, checks, rewritten sentences). Target: EWE at most
  1.5x RA.
* "/tok vs RA": the median seconds per decoded token (every token the model sampled,
  discarded rewrites included) over RA's: the cost of a token, whatever the answer's length,
  so answers of different lengths (one stops early at end-of-sequence, another backtracks)
  compare per unit of the same work.
"""
from __future__ import annotations

import json
import math
import os
import statistics
import sys
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from ..argtypes import positive_int
from ..config import EWEConfig
from ..errors import RunError
from ..overrides import config_overrides
from ..record_log import RecordLog
from ..runner import check_same_config, in_input_order, read_prompts
from ..stats import decode_step_s, in_decode_steps, time_parts

PROMPTS = Path(__file__).resolve().parents[2] / "examples" / "prompts" / "bio.jsonl"
TARGET = 1.5


DEFAULT_CONFIG = "configs/ewe.yaml"


def add_bench_arguments(p) -> None:
    p.add_argument("--prompts", default=str(PROMPTS), help="JSONL of prompts (default: examples/prompts/bio.jsonl)")
    p.add_argument("--limit", type=positive_int, default=6, help="prompts to run (default 6)")
    p.add_argument("--with-memory-only", action="store_true",
                   help="with one --config: also time EWE's memory without pauses")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the report as JSON")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="write each method's answers to DIR/NAME.jsonl as they finish (the format of ewe run, so "
                        "`ewe eval score` scores the answers that were timed); a rerun resumes, timing only the "
                        "prompts missing there, and reports over all of them")


def methods(ewe) -> dict[str, object]:
    """The baselines built around `ewe` (configured as full EWE), sharing its model and datastore."""
    from ..api import EWE

    base = ewe.config.model_dump()
    ra = EWEConfig.build(base, **{"retrieval.placement": "prompt", "controller.retrieval_trigger": "never",
                                  "controller.verify_trigger": "never"})
    memory_only = EWEConfig.build(base, **{"controller.retrieval_trigger": "never", "controller.verify_trigger": "never"})
    return {
        "ra": EWE(ewe.model, ewe.tokenizer, ra, datastore=ewe.datastore, memory_adapter=ewe.runtime.memory_adapter),
        "memory_only": EWE(ewe.model, ewe.tokenizer, memory_only, datastore=ewe.datastore,
                           memory_adapter=ewe.runtime.memory_adapter),
        "ewe": ewe,
    }


def configured(paths: list[str], args, load_ewe) -> dict[str, object]:
    """One EWE per configuration file, named by the file; a later one shares an earlier one's
    model (same model section), datastore (same retrieval source) and checker (same checker
    section too), so each part is loaded once and every method reads the same weights."""
    from argparse import Namespace

    from ..api import EWE

    out: dict[str, object] = {}
    for path in paths:
        name = Path(path).stem
        while name in out:
            name += "'"
        cfg = EWEConfig.from_yaml(path, **config_overrides(args))
        same = next((e for e in out.values() if e.config.model == cfg.model
                     and e.config.memory.unit_tokens == cfg.memory.unit_tokens
                     and e.config.memory.unit_start_token == cfg.memory.unit_start_token), None)
        if same is None:
            out[name] = load_ewe(Namespace(**{**vars(args), "config": path}))
            continue
        share = same.config.retrieval.source == cfg.retrieval.source
        checker = (same.fact_checker(need_evidence=False)
                   if share and same.config.checker == cfg.checker else None)
        out[name] = EWE(same.model, same.tokenizer, cfg, datastore=same.datastore if share else None,
                        fact_checker=checker, memory_adapter=same.runtime.memory_adapter)
    return out


def _row(result: dict, seconds: float) -> dict:
    s = result["stats"]
    parts = time_parts(s)
    return {"seconds": seconds, "new_tokens": s["new_tokens"], "decoded_tokens": s.get("decoded_tokens", s["new_tokens"]),
            # every token the model sampled for this answer: its own (discarded ones too) and its candidates'
            "all_decoded": s.get("decoded_tokens", s["new_tokens"]) + s.get("candidate_tokens", 0),
            "backtracks": s.get("backtracks", 0), "checks": s.get("checks", 0),
            "pauses": s.get("pauses_retrieval", 0) + s.get("pauses_verification", 0),
            "prompt_tokens": s["prompt_tokens"], "total_s": s.get("total_s"), "parts_s": parts,
            "decode_step_s": decode_step_s(s)}


def _mean_parts(xs: list[dict]) -> dict | None:
    """Each part's mean seconds per answer, and in decode steps (of the median decode step)."""
    if any(x["parts_s"] is None for x in xs):
        return None
    steps = [x["decode_step_s"] for x in xs if x["decode_step_s"]]
    step = statistics.median(steps) if steps else None
    seconds = {k: statistics.mean(x["parts_s"][k] for x in xs) for k in xs[0]["parts_s"]}
    return {"seconds": seconds, "decode_step_s": step, "decode_steps": in_decode_steps(seconds, step)}


def run_bench(ewe, prompts: list[str] | list[dict], include_memory_only: bool = False, runners: dict | None = None,
              out: Path | None = None) -> dict:
    """Time each method on every prompt, interleaved. `runners` (name -> EWE, the first the
    baseline) replaces the default pair: RA built from `ewe`, and `ewe` itself. `prompts`: texts,
    or rows with "id" and "prompt" (as ewe run reads them). `out`: a folder where each method's
    answers are appended as they finish (NAME.jsonl, with the seconds they took); prompts already
    there are not run again, their recorded seconds count."""
    if runners is None:
        if not ewe.config.pauses:
            raise ValueError("ewe bench run needs a configuration with pauses (e.g. --config configs/ewe.yaml), "
                             "or several --config files (the first is the baseline)")
        runners = methods(ewe)
        if not include_memory_only:
            runners.pop("memory_only")
    rows_in = [p if isinstance(p, dict) else {"id": str(i), "prompt": p} for i, p in enumerate(prompts)]
    names = list(runners)
    baseline = names[0]
    with ExitStack() as stack:
        logs = {n: stack.enter_context(_answers_log(out, n, runners[n].config)) for n in names} if out else {}
        kept = {n: {str(r["id"]): r for r in log.records()} for n, log in logs.items()}
        todo = [r for r in rows_in if any(str(r["id"]) not in kept.get(n, {}) for n in names)]
        if out and len(todo) < len(rows_in):
            print(f"ewe bench run: resuming: {len(rows_in) - len(todo)} of {len(rows_in)} prompts already in {out}",
                  file=sys.stderr)
        if todo:
            for name in names:  # warm-up: loads each one's datastore and checker
                runners[name].generate(todo[0]["prompt"], max_new_tokens=4)
        for i, row in enumerate(todo):
            for name in (names if i % 2 == 0 else names[::-1]):
                if str(row["id"]) in kept.get(name, {}):
                    continue
                t0 = time.perf_counter()
                result = runners[name].generate(row["prompt"]).to_dict()
                seconds = time.perf_counter() - t0
                record = {**{k: v for k, v in row.items() if k not in ("prompt", "passages")}, **result,
                          "bench_seconds": seconds}
                if name in logs:
                    logs[name].append(record)
                kept.setdefault(name, {})[str(row["id"])] = record
    rows = {n: [_timed_row(kept[n][str(r["id"])], out, n) for r in rows_in] for n in names}
    if out:
        for n in names:
            in_input_order(out / f"{n}.jsonl", rows_in)
    base_median = statistics.median(x["seconds"] for x in rows[baseline])
    summary = {}
    for name in names:
        xs = rows[name]
        med = statistics.median(x["seconds"] for x in xs)
        summary[name] = {
            "config": runners[name].config.model_dump(mode="json"),
            "median_s": med, "vs_ra": med / base_median,
            **{k: statistics.mean(x[k] for x in xs) for k in ("new_tokens", "decoded_tokens", "backtracks", "checks",
                                                               "pauses", "prompt_tokens")},
            "s_per_decoded_token": statistics.median(x["seconds"] / max(1, x["decoded_tokens"]) for x in xs),
            "time_parts": _mean_parts(xs),
            "tail": tail([x["seconds"] for x in xs], [x["all_decoded"] for x in xs]),
        }
    base_per_token = summary[baseline]["s_per_decoded_token"]
    for x in summary.values():
        x["per_token_vs_ra"] = x["s_per_decoded_token"] / base_per_token
    measured = [n for n in names if n != baseline]
    target = {"ewe_over_ra_max": TARGET, "baseline": baseline,
              "value": {n: summary[n]["vs_ra"] for n in measured}}
    target["met"] = {n: v <= TARGET for n, v in target["value"].items()}
    return {"prompts": len(rows_in), "max_new_tokens": runners[names[-1]].config.decoding.max_new_tokens,
            "baseline": baseline, "rows": rows, "summary": summary, "target": target,
            "timed_now": len(todo)}


def tail(seconds: list[float], decoded: list[int]) -> dict:
    """How far the slowest prompts are from the typical one (issue 56: one answer's rewrites once
    cost 17x the median): seconds and tokens sampled per prompt (candidates included), median,
    p95 and max, and the mean over the median."""
    def spread(xs):
        xs = sorted(xs)
        med = statistics.median(xs)
        p95 = xs[min(len(xs) - 1, math.ceil(0.95 * len(xs)) - 1)]
        return {"median": med, "p95": p95, "max": xs[-1], "mean_over_median": statistics.mean(xs) / med if med else None,
                "max_over_median": xs[-1] / med if med else None}
    return {"seconds": spread(seconds), "decoded": spread(decoded)}


def _timed_row(record: dict, out: Path | None, name: str) -> dict:
    if not isinstance(record.get("bench_seconds"), (int, float)) or not isinstance(record.get("stats"), dict):
        raise RunError(f"{Path(out) / (name + '.jsonl')}: the answer to prompt {record.get('id')!r} has no "
                       "\"bench_seconds\" or \"stats\": only ewe bench run's answers can be resumed (use a new --out)")
    return _row(record, record["bench_seconds"])


@contextmanager
def _answers_log(out: Path, name: str, config):
    """NAME.jsonl in `out`, refused if an earlier run wrote it with another configuration."""
    path = Path(out) / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    check_same_config(path, config.model_dump(mode="json"), force=False)
    with RecordLog(path) as log:
        yield log


def run_run_bench(args, load_ewe) -> int:
    from argparse import Namespace

    paths = args.config or [DEFAULT_CONFIG]
    prompts = read_prompts(Path(args.prompts))[: args.limit]
    out = Path(args.out) if args.out else None
    if len(paths) == 1:
        ewe = load_ewe(Namespace(**{**vars(args), "config": paths[0]}))
        report = run_bench(ewe, prompts, args.with_memory_only, out=out)
    else:
        if args.with_memory_only:
            raise SystemExit("ewe bench run: --with-memory-only goes with one --config (it is built from it); "
                             "with several, add the memory-only configuration as a --config (configs/ewe-memory.yaml)")
        report = run_bench(None, prompts, runners=configured(paths, args, load_ewe), out=out)
    report["load_average"] = os.getloadavg()
    print_report(report)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


def _ratio(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.2f}x"


def print_report(report: dict) -> None:
    s, base = report["summary"], report["baseline"]
    vs = "vs RA" if base == "ra" else "vs 1st"
    print(f"run: {report['prompts']} prompts, max_new_tokens {report['max_new_tokens']}, methods interleaved; "
          f"baseline {base}; load average {report['load_average'][0]:.1f}")
    earlier = report["prompts"] - report.get("timed_now", report["prompts"])
    if earlier:
        print(f"{earlier} of the {report['prompts']} prompts were timed by an earlier run into the same --out "
              "(their recorded seconds count)")
    print("same prompts, model and decoding limits for every method; the methods do different work by design "
          f"(pauses, checks, rewrites): '{vs}' is the price per prompt of that work, '/tok {vs}' the cost per "
          "decoded token (discarded rewrites included), which compares answers of different lengths")
    width = max(12, *(len(n) + 2 for n in s))
    print(f"{'method':<{width}}{'median s':>9}{vs:>8}{'prompt tok':>11}{'kept tok':>9}{'decoded':>9}"
          f"{'pauses':>8}{'checks':>8}{'backtr.':>8}{'ms/decoded':>11}{'/tok ' + vs:>12}")
    for name, x in s.items():
        print(f"{name:<{width}}{x['median_s']:>9.2f}{x['vs_ra']:>8.2f}{x['prompt_tokens']:>11.0f}{x['new_tokens']:>9.1f}"
              f"{x['decoded_tokens']:>9.1f}{x['pauses']:>8.1f}{x['checks']:>8.1f}{x['backtracks']:>8.1f}"
              f"{1e3 * x['s_per_decoded_token']:>11.1f}{x['per_token_vs_ra']:>12.2f}")
    print("the tail, per prompt: seconds and tokens sampled (candidates included): median / p95 / max "
          "(mean over median; max over median)")
    for name, x in s.items():
        sec, dec = x["tail"]["seconds"], x["tail"]["decoded"]
        print(f"  {name}: {sec['median']:.2f} / {sec['p95']:.2f} / {sec['max']:.2f} s "
              f"({_ratio(sec['mean_over_median'])}; {_ratio(sec['max_over_median'])}), "
              f"{dec['median']:.0f} / {dec['p95']:.0f} / {dec['max']:.0f} tokens ({_ratio(dec['max_over_median'])})")
    print("where the time goes, mean per answer: seconds (decode-step equivalents, at each method's median "
          "decode step)")
    for name, x in s.items():
        tp = x["time_parts"]
        if tp is None:
            print(f"  {name}: no breakdown in this method's stats")
            continue
        cells = [f"{k} {v:.2f} s ({tp['decode_steps'][k]:.0f})" if tp["decode_steps"][k] is not None
                 else f"{k} {v:.2f} s" for k, v in tp["seconds"].items() if v >= 0.005]
        step = f"; decode step {1e3 * tp['decode_step_s']:.1f} ms" if tp["decode_step_s"] else ""
        print(f"  {name}: " + ", ".join(cells) + step)
    t = report["target"]
    for name, value in t["value"].items():
        print(f"target: {name} wall time per prompt <= {t['ewe_over_ra_max']}x {base}: {value:.2f}x -> "
              f"{'met' if t['met'][name] else 'NOT met'}")
