"""The `ewe` command line. It only parses arguments and calls the API."""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from .argtypes import positive_int
from .overrides import config_overrides
from .ray_pool import add_ray_options


def _choices(section: str, key: str) -> list[str]:
    """A setting's allowed values, read from its type in the configuration (never listed twice)."""
    from typing import Literal, get_args, get_origin

    from pydantic import BaseModel

    from .config import EWEConfig
    from .methods.registry import section_model

    def literals(tp) -> list[str]:
        if get_origin(tp) is Literal:
            return [str(a) for a in get_args(tp)]
        return [v for a in get_args(tp) for v in literals(a)]

    if section in EWEConfig.model_fields:
        [section_type] = [t for t in (EWEConfig.model_fields[section].annotation, *get_args(
            EWEConfig.model_fields[section].annotation)) if isinstance(t, type) and issubclass(t, BaseModel)]
    else:
        section_type = section_model(section)  # a method's own section
    return literals(section_type.model_fields[key].annotation)


def _add_model_options(p: argparse.ArgumentParser, several_configs: bool = False) -> None:
    g = p.add_argument_group("model and memory")
    if several_configs:
        g.add_argument("--config", action="append", help="YAML configuration (see configs/); repeat it to run "
                       "several on the same prompts, the first being the baseline of every ratio")
    else:
        g.add_argument("--config", help="YAML configuration (see configs/)")
    g.add_argument("--model", dest="model.name", help='"embedded" (default), a local folder or a hub id')
    g.add_argument("--dtype", dest="model.dtype", choices=_choices("model", "dtype"))
    g.add_argument("--attention-impl", dest="model.attention_impl", choices=_choices("model", "attention_impl"))
    g.add_argument("--weights", dest="model.weights", choices=_choices("model", "weights"),
                   help="lighter linear layers for a faster decode step (int8: the compiled kernel, `make ext`)")
    g.add_argument("--unit-tokens", dest="memory.unit_tokens", type=int, help="M, tokens per memory unit")
    g.add_argument("--retrieval-units", dest="memory.retrieval_units", type=int)
    g.add_argument("--start-token", dest="memory.unit_start_token", action=argparse.BooleanOptionalAction,
                   default=None, help="begin each memory unit with the BOS token")
    r = p.add_argument_group("retrieval (used when no --passage is given)")
    r.add_argument("--datastore", dest="retrieval.source",
                   help='"embedded" (default: Wikipedia summaries, built on first use) or a datastore folder')
    r.add_argument("--no-retrieval", dest="retrieval.source", action="store_const", const="__none__",
                   help="no retrieval: the memory holds only --passage texts")
    r.add_argument("--top-k", dest="retrieval.top_k", type=int, help="passages retrieved for the prompt")
    r.add_argument("--threshold", dest="retrieval.threshold", type=float, help="minimum retrieval score")
    r.add_argument("--placement", dest="retrieval.placement", choices=_choices("retrieval", "placement"),
                   help='"prompt": the passages as text in the prompt (retrieval.prompt_format): the "+RA" baseline')
    r.add_argument("--prompt-format", dest="retrieval.prompt_format", choices=_choices("retrieval", "prompt_format"),
                   help='how passages are written into a prompt: "after" the request (default), "numbered" '
                        "before it (ewe's list until issue 30)")
    d = p.add_argument_group("decoding")
    d.add_argument("--max-new-tokens", dest="decoding.max_new_tokens", type=int)
    d.add_argument("--temperature", dest="decoding.temperature", type=float, help="0 is greedy")
    d.add_argument("--top-p", dest="decoding.top_p", type=float)
    d.add_argument("--seed", dest="decoding.seed", type=int)
    c = p.add_argument_group("controller (pauses, checks, rewrites)")
    c.add_argument("--retrieval-trigger", dest="controller.retrieval_trigger",
                   choices=_choices("controller", "retrieval_trigger"))
    c.add_argument("--retrieval-interval", dest="controller.retrieval_interval", type=int, help="T_r in tokens")
    c.add_argument("--verify-trigger", dest="controller.verify_trigger",
                   choices=_choices("controller", "verify_trigger"))
    c.add_argument("--verify-interval", dest="controller.verify_interval", type=int, help="T_v in tokens")
    c.add_argument("--checker", dest="checker.backend", choices=_choices("checker", "backend"))
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="any configuration value, e.g. --set controller.max_retries=1 (YAML syntax; repeatable)")


# What `ewe check` and `ewe critique` set where no --config or option says otherwise: the contradiction
# veto, as configs/ewe.yaml's loop checks (docs/RESULTS.md "The contradiction veto in the loop and in
# `ewe check`": precision up in the loop at the same F1, and on the hand-labelled sentences).
CHECK_DEFAULTS = {"checker.veto": "contradiction"}


def _load_ewe(args):
    """The EWE for a command's options. `ewe check` and `ewe critique` load the generator only if its checker asks
    it something (checker.extractor or backend llm_judge): the judge and the rules need none."""
    from .api import EWE

    checks = getattr(args, "command", None) in ("check", "critique")
    overrides = config_overrides(args)
    if checks and not args.config:
        overrides = {**CHECK_DEFAULTS, **overrides}
    return EWE.from_config(args.config, load_model=not checks, **overrides)


def cmd_generate(args) -> int:
    if args.input is None and args.prompt is None:
        raise SystemExit("ewe generate: give a PROMPT or --input FILE")
    if args.input is not None and args.prompt is not None:
        raise SystemExit("ewe generate: give a PROMPT or --input FILE, not both")
    if args.input and not args.output:
        raise SystemExit("ewe generate: --input needs --output FILE (JSONL, appended as prompts finish)")
    passages = list(args.passage or [])
    for n, text in enumerate(passages, 1):
        if not text.strip():
            raise SystemExit(f"ewe generate: --passage number {n} is empty; give the passage's text")
    for f in args.passage_file or []:
        try:
            passages.append(Path(f).read_text(encoding="utf-8").strip())
        except (OSError, UnicodeDecodeError) as e:
            raise SystemExit(f"ewe generate: --passage-file {f}: cannot read it as UTF-8 text ({e})") from None
        if not passages[-1]:
            raise SystemExit(f"ewe generate: --passage-file {f} is empty")
    from .runner import RunError, preflight, print_summary, run

    rows = None
    if args.input:
        try:
            rows = preflight(Path(args.input), Path(args.output))  # before the model loads
        except RunError as e:
            raise SystemExit(f"ewe generate: {e}") from None
    ewe = _load_ewe(args)
    if args.prompt is not None:
        result = ewe.generate(args.prompt, passages=passages or None)
        if args.json:
            print(json.dumps(result.to_dict(), ensure_ascii=False))
        else:
            if args.show_trace and result.trace:
                from .controller import render

                print(render(result.trace), file=sys.stderr)
            for hit in result.retrieved:
                print(f"[retrieved {hit['score']:.3f}] {hit['title']}", file=sys.stderr)
            print(result.text)
        return 0
    try:
        summary = run(ewe, Path(args.input), Path(args.output), passages=passages or None, rows=rows)
    except RunError as e:
        raise SystemExit(f"ewe generate: {e}") from None
    print_summary(summary)
    return 1 if summary["errors"] else 0


def cmd_run(args) -> int:
    from .runner import RunError, preflight, print_summary, run

    if not args.config:
        raise SystemExit("ewe run: --config is required (configs/ewe.yaml, rag.yaml, flare.yaml, ra.yaml, bare.yaml)")
    if args.ray_workers is not None and args.ray is None:
        raise SystemExit("ewe run: --ray-workers needs --ray auto|ADDRESS")
    try:
        rows = preflight(Path(args.input), Path(args.output), args.limit)  # before the model loads
        if args.ray is not None:  # Ray workers load the model; this process only writes the output
            from .config import EWEConfig
            from .ray_pool import RayPool

            config = EWEConfig.from_yaml(args.config, **config_overrides(args))  # what _load_ewe would load
            with RayPool(args.ray, args.ray_workers) as pool:
                summary = run(pool.use(config), Path(args.input), Path(args.output), force=args.force,
                              show_trace=args.show_trace, rows=rows)
        else:
            ewe = _load_ewe(args)
            summary = run(ewe, Path(args.input), Path(args.output), force=args.force, show_trace=args.show_trace,
                          rows=rows)
    except RunError as e:
        raise SystemExit(f"ewe run: {e}") from None
    print_summary(summary)
    if summary["errors"]:
        print(f"ewe run: {summary['errors']} prompt(s) could not run; see {args.output}.errors.jsonl", file=sys.stderr)
        return 1
    return 0


def cmd_check(args) -> int:
    if (args.sentence is None) == (args.input is None):
        raise SystemExit("ewe check: give a SENTENCE or --input FILE (with --output), not both")
    if args.input is not None:
        return _check_batch(args)
    from .verify.veto import veto_reason, vetoed

    ewe = _load_ewe(args)
    evidence = list(args.evidence or []) or None
    check = ewe.check(args.sentence, prompt=args.prompt, context=args.context, evidence=evidence)
    if args.json:
        print(json.dumps(check.to_dict(), ensure_ascii=False, indent=2))
        return 0
    if not check.checkable:
        print(f"not checkable (no checkable claim: a question, a fragment, or not English): {check.sentence}")
        return 0
    verdict = "needs rewrite" if check.needs_rewrite else ("factual" if check.factual else "kept (check incomplete)")
    print(f"{verdict}: {check.sentence}")
    for v in check.verdicts:
        if vetoed(v):  # overruled: its score is the judge's, capped; the reason is what counts
            print(f"  [{v.label}: vetoed] {v.claim.text}\n      {veto_reason(v)}")
        else:
            print(f"  [{v.label} {v.score:.2f}] {v.claim.text}" + (f"  (error: {v.error})" if v.error else ""))
        for e in v.evidence[:2]:
            text = e.text if len(e.text) < 160 else e.text[:157] + "..."
            print(f"      <- {e.title or 'given'} ({e.score:.2f}): {text}")
    return 0


def cmd_critique(args) -> int:
    """`ewe critique --input texts.jsonl --output critiques.jsonl`: each text's claims with verdicts,
    reasons, references and trees, appended as each text is done; a rerun resumes."""
    from .critique.batch import critique_file, read_texts
    from .critique.report import write_report
    from .errors import RunError
    from .files import read_jsonl

    inp, out = Path(args.input), Path(args.output)
    try:
        result = critique_file(lambda need: _load_ewe(args).critic(need), inp, out, retrieve=args.retrieve,
                               limit=args.limit)
        if args.report:
            critiques = [row for _, row in read_jsonl(out, skip_bad=True) if isinstance(row, dict)]
            result["report"] = str(write_report(read_texts(inp), critiques, Path(args.report)))
    except RunError as e:
        raise SystemExit(f"ewe critique: {e}") from None
    print(json.dumps(result, indent=2))
    return 0


def _check_batch(args) -> int:
    """`ewe check --input cases.jsonl --output verdicts.jsonl`: one verdict line per case, appended
    as each is done; a rerun skips ids already in the output."""
    from tqdm import tqdm

    from .checks import read_cases, verdict_line
    from .errors import RunError
    from .record_log import RecordLog, refuse_same_file, refuse_unwritable

    if not args.output:
        raise SystemExit("ewe check: --input needs --output (a JSONL file, appended; a rerun resumes)")
    inp, out = Path(args.input), Path(args.output)
    try:
        refuse_same_file(inp, out, out.with_name(out.name + ".lock"))
        cases = read_cases(inp)
        refuse_unwritable(out)
        with RecordLog(out) as log:
            todo = [c for c in cases if c["id"] not in log.done]
            if len(todo) < len(cases):
                print(f"ewe: resuming: {len(cases) - len(todo)} of {len(cases)} cases already in {out}", file=sys.stderr)
            ewe = _load_ewe(args) if todo else None
            for case in tqdm(todo, desc="checks", unit="case"):
                check = ewe.check(case["claim"], prompt=case.get("prompt"), context=case.get("context"),
                                  evidence=case.get("evidence"))
                log.append(verdict_line(case, check))
    except RunError as e:
        raise SystemExit(f"ewe check: {e}") from None
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ewe", description="Explicit Working Memory generation")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)

    g = sub.add_parser("generate", help="answer a prompt (or a JSONL file of prompts) with passages in memory")
    g.add_argument("prompt", nargs="?", help="the prompt; omit when using --input")
    g.add_argument("--passage", action="append", help="a passage to put in working memory (repeatable)")
    g.add_argument("--passage-file", action="append", help="a text file whose content is one passage (repeatable)")
    g.add_argument("--input", help="JSONL of prompts: {\"id\", \"prompt\", \"passages\": [...]} per line")
    g.add_argument("--output", help="JSONL of results, appended as each prompt finishes; a rerun resumes")
    g.add_argument("--json", action="store_true", help="print the whole result as JSON")
    g.add_argument("--show-trace", action="store_true", help="print the controller's trace (pauses, checks, rewrites)")
    _add_model_options(g)
    g.set_defaults(func=cmd_generate)

    r = sub.add_parser("run", help="long-form generation over a prompt file with a method's configuration",
                       description="Run a configuration (configs/ewe.yaml, rag.yaml, flare.yaml, ra.yaml, bare.yaml) "
                       "over a JSONL of prompts; one result line per prompt is appended as it finishes, and a rerun "
                       "skips finished ids.")
    r.add_argument("--input", required=True, help='JSONL of prompts: {"id", "prompt", "passages"?} per line')
    r.add_argument("--output", required=True, help="JSONL of results (text, trace, stats), appended")
    r.add_argument("--limit", type=positive_int, help="only the first N prompts (N >= 1)")
    r.add_argument("--force", action="store_true", help="append even if the output was made with another config")
    r.add_argument("--show-trace", action="store_true", help="print each prompt's trace as it finishes")
    add_ray_options(r)
    _add_model_options(r)
    r.set_defaults(func=cmd_run)

    k = sub.add_parser("check", help="fact-check a sentence against the datastore with the configured checker (without "
                       "--config: the judge with the contradiction veto, as the default loop checks)")
    k.add_argument("sentence", nargs="?", help="the sentence; omit when using --input")
    k.add_argument("--input", help='JSONL of cases: {"claim", "evidence": [passage, ...], "prompt"?, "context"?, "id"?}')
    k.add_argument("--output", help="JSONL of verdicts (each case plus verdict and score), appended; a rerun resumes")
    k.add_argument("--prompt", help="the question the sentence answers (claims may name its subject)")
    k.add_argument("--context", help="text before the sentence (resolves 'she', 'it')")
    k.add_argument("--evidence", action="append", help="check against this passage instead of retrieving (repeatable)")
    k.add_argument("--json", action="store_true")
    _add_model_options(k)
    k.set_defaults(func=cmd_check)

    c = sub.add_parser("critique", help="find the wrong claims of given texts (ITA's task): each claim's verdict, "
                       "reason, references and verification tree")
    c.add_argument("--input", required=True, help='JSONL: {"id", "text", "evidence"?: [passage or {"title", "text"}, '
                   '...]}; a text without evidence is checked against the datastore')
    c.add_argument("--output", required=True, help="JSONL of critiques, appended as texts finish; a rerun resumes")
    c.add_argument("--retrieve", action="store_true", help="search the datastore even where a text brings evidence")
    c.add_argument("--limit", type=positive_int, help="the first N texts only")
    c.add_argument("--report", metavar="DIR", help="also write DIR/index.html: the texts with their claims marked, "
                   "trees collapsible")
    _add_model_options(c)
    c.set_defaults(func=cmd_critique)

    from .eval.cli import add_eval_commands

    add_eval_commands(sub)
    from .bench import add_bench_commands

    add_bench_commands(sub, _add_model_options, _load_ewe)
    from .serving.cli import add_serve_command

    add_serve_command(sub, _add_model_options)
    from .judge.cli import add_judge_commands

    add_judge_commands(sub)
    from .training.cli import add_train_commands

    add_train_commands(sub)
    from .retrieval.cli import add_index_commands

    add_index_commands(sub)
    return parser


def _interrupt(signum, frame):
    raise KeyboardInterrupt  # a batch system's SIGTERM stops a run the way Ctrl-C does


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # what a run records as the command that made it
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from .config import ConfigError

    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        return args.func(args) or 0
    except (ConfigError, ValueError, TypeError, OSError, KeyError) as e:
        if args.verbose:
            raise
        message = str(e)
        if len(message) > 2000:  # e.g. a 100,000-character --set value echoed back
            message = message[:2000] + f" ... ({len(message)} characters)"
        print(f"ewe: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ewe: interrupted; finished results are kept", file=sys.stderr)
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
