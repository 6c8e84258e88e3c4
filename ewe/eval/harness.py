"""`ewe eval run`: every method on every prompt set with the same decoding settings, then
scores and a report, all under one output folder and all resumable.

    OUT/prompts/<dataset>.jsonl           the prompts used
    OUT/<dataset>/<method>.jsonl          generations (ewe run's format: text, trace, stats)
    OUT/<dataset>/<method>.details.jsonl  claims, verdicts, evidence, scores per response, and the
                                          method's own sentence records (its checker's verdicts and
                                          cited passages) for the report
    OUT/sweeps/<param>=<value>/...        the same for each swept value
    OUT/summary.json, OUT/report/         the table, plots, HTML page and audit sample

Methods are configuration files (configs/<name>.yaml or a path); they share one loaded
model and one datastore where their settings agree.
"""
from __future__ import annotations

from pathlib import Path

from ..config import SHARED_SECTIONS, ConfigError, EWEConfig
from ..methods.registry import method_class
from ..runtime import Runtime
from ..files import atomic_write, write_json, write_jsonl
from ..runner import run as run_prompts
from ..version import code_version
from ..data.prompt_sets import DEFAULT_SPLIT, SETS, SUFFIX, load_prompts, write_prompts
from .claim_checkers import DEFAULT_SCORER
from .scorer import Scorer, apply_scores, in_loop_checker, read_results, score_dataset, summarize

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
METHODS = ("bare", "ra-1", "ra", "ra-4", "flare", "cove", "cove-retrieval", "streaming-vr", "full-vr", "a2r", "ewe",
           "ewe-paper", "ewe-memory", "prefixnli", "prefixnli-memory")  # the shipped configs a comparison usually draws on (any configs/NAME.yaml works)


def config_path(method: str) -> Path:
    path = Path(method) if method.endswith((".yaml", ".yml")) else CONFIGS / f"{method}.yaml"
    if not path.exists():
        raise FileNotFoundError(f"method {method!r}: no configuration {path} (methods: {', '.join(METHODS)} "
                                "or a YAML path)")
    return path


def method_name(method: str) -> str:
    return Path(method).stem if method.endswith((".yaml", ".yml")) else method


def _keys(config: EWEConfig) -> tuple[tuple, tuple]:
    """What loading the model depends on (the attention kernel is chosen per call, not at load),
    and what loading the datastore depends on."""
    m, mem = config.model, config.memory
    model_key = (m.name, m.dtype, m.device, m.weights, m.memory_adapter, mem.unit_tokens, mem.unit_start_token)
    return model_key, (model_key, config.retrieval.source, config.memory.unit_tokens)


class Loader:
    """EWE instances for configurations, sharing the model and datastores where they agree."""

    def __init__(self):
        self.models: dict[tuple, tuple] = {}
        self.datastores: dict[tuple, object] = {}
        self.given: list[Runtime] = []  # what an earlier Runtime loaded while it ran is shared too

    def runtime(self, config: EWEConfig) -> Runtime:
        """A Runtime for `config` with the model and datastore already loaded for an earlier one
        that agrees; whatever is not loaded yet loads on first use (scoring never loads the model;
        prompts that all bring their passages never open the datastore)."""
        for earlier in self.given:
            self.remember(earlier)
        key, ds_key = _keys(config)
        model, tokenizer, adapter = self.models.get(key, (None, None, None))
        runtime = Runtime(config, model, tokenizer, datastore=self.datastores.get(ds_key), memory_adapter=adapter)
        self.given.append(runtime)
        return runtime

    def remember(self, runtime: Runtime) -> None:
        """Keep what `runtime` has loaded for the Runtimes that come next."""
        key, ds_key = _keys(runtime.config)
        if runtime.loaded:
            self.models[key] = (runtime.model, runtime.tokenizer, runtime.memory_adapter)
        if runtime.datastore_loaded:
            self.datastores[ds_key] = runtime.datastore

    def load(self, config: EWEConfig):
        """An EWE (model loaded) for generating with `config`."""
        from ..api import EWE

        runtime = self.runtime(config)
        ewe = EWE.from_runtime(runtime)
        self.remember(runtime)
        return ewe


def settle_prompts(path: Path, wanted: list[dict], what: str) -> None:
    """The prompts file of an evaluation folder holds exactly the prompts asked for now.

    A first run writes it; a rerun with the same settings keeps it (and resumes); a rerun
    that asks for more prompts of the same set extends it (the results files resume, so the
    first prompts are not generated again). Anything else (fewer prompts, another seed, other
    prompts) would score one set and report another, and is refused."""
    from ..files import read_jsonl

    if not path.exists():
        write_prompts(wanted, path)
        return
    have = [row for _, row in read_jsonl(path)]
    key = [(str(r.get("id")), r.get("prompt")) for r in have]
    new_key = [(str(r.get("id")), r.get("prompt")) for r in wanted]
    if key == new_key:
        return
    if len(new_key) > len(key) and new_key[:len(key)] == key:
        print(f"ewe eval: {path}: extending {len(key)} prompts to {len(new_key)} ({what})")
        write_prompts(wanted, path)
        return
    raise EvalError(f"{path.parent.parent} holds {len(have)} other prompts than {what} asks for "
                    f"({len(wanted)}); use another --out, or the settings it was made with")


def overrides_for(method: str, overrides: dict) -> dict:
    """The overrides that apply to `method`: every shared setting, and only its own method section."""
    own = method_class(method).section
    return {k: v for k, v in overrides.items() if k.split(".")[0] in (own, "method", *SHARED_SECTIONS)}


def method_configs(methods: list[str], overrides: dict) -> dict[str, EWEConfig]:
    """Each method's configuration with the overrides that apply to it; an override of a
    method section that none of `methods` reads is an error (it would change nothing)."""
    bases = {method_name(m): EWEConfig.from_yaml(config_path(m)) for m in methods}
    sections = {method_class(c.method).section for c in bases.values()} | {"method", *SHARED_SECTIONS}
    unread = sorted(k for k in overrides if k.split(".")[0] not in sections)
    if unread:
        raise ConfigError(f"{', '.join(unread)}: no method of this evaluation ({', '.join(bases)}) has that section")
    return {name: EWEConfig.from_yaml(config_path(m), **overrides_for(bases[name].method, overrides))
            for name, m in zip(bases, methods)}


def _cite_key(e: dict) -> tuple:
    return (e.get("source_id"), e.get("start"), e.get("end"), e.get("title"))


def run_sentences(row: dict) -> list[dict] | None:
    """A result line's own sentence records, as the report shows them: each kept sentence's text,
    whether the method's checker read it and its verdict (EWE's controller; Streaming-/Full-VR
    record only whether it passed), and the passages it cited (title, source, character offsets
    in the source, score, the claim they support), with each passage's text when a check in the
    run's trace read it. None when the method keeps no sentence records (plain generation)."""
    sentences = row.get("sentences")
    if not isinstance(sentences, list) or not sentences:
        return None
    texts = {}
    for event in row.get("trace") or []:
        if isinstance(event, dict) and event.get("type") == "check":
            for v in event.get("verdicts") or []:
                for e in v.get("evidence") or []:
                    if isinstance(e, dict) and e.get("text"):
                        texts.setdefault(_cite_key(e), e["text"])
    out = []
    for s in sentences:
        if not isinstance(s, dict):
            continue
        evidence = [{**e, **({"text": texts[_cite_key(e)]} if _cite_key(e) in texts and "text" not in e else {})}
                    for e in s.get("evidence") or [] if isinstance(e, dict)]
        out.append({"text": str(s.get("text", "")), "checked": bool(s.get("checked")), "verdict": s.get("verdict"),
                    "needs_rewrite": s.get("needs_rewrite"), "evidence": evidence})
    return out


def guidance(row: dict) -> list[dict] | None:
    """A guided-decoding result's interventions (PrefixNLI: where the judge's penalty changed the
    top token, with the candidates and their scores), as the report shows them; None if it has none."""
    events = [e for e in row.get("trace") or [] if isinstance(e, dict) and e.get("type") == "prefix_guide"]
    return events or None


def code_of(row: dict) -> str:
    """The commit a results row was generated at ("+dirty": with uncommitted changes; "unknown":
    written by an ewe before rows carried it, or outside a git checkout)."""
    code = row.get("code") or {}
    if not code.get("commit"):
        return "unknown"
    return code["commit"][:12] + ("+dirty" if code.get("dirty") else "")


def generated_at(results: Path) -> list[str]:
    """Every commit the rows of a results file were generated at (one, for a table's figures)."""
    return sorted({code_of(r) for r in read_results(results)})


def attach_run_sentences(details: list[dict], results: Path) -> list[dict]:
    """Put each response's `run_sentences` and `guidance` (from its line of `results`) into its
    details line, fresh on every run, like the stats: details checked by an older ewe get them too."""
    by_id = {str(r["id"]): r for r in read_results(results)}
    for d in details:
        d.pop("run_sentences", None)
        d.pop("guidance", None)
        row = by_id.get(d["id"], {})
        kept = run_sentences(row)
        if kept is not None:
            d["run_sentences"] = kept
        guided = guidance(row)
        if guided is not None:
            d["guidance"] = guided
    return details


def _generator(loader: Loader, pool, config: EWEConfig):
    """What generates with `config`: an EWE loaded here, or the Ray workers of `pool`."""
    return pool.use(config) if pool is not None else loader.load(config)


class EvalError(ValueError):
    """An evaluation folder that does not match what the command asks for."""


def run_eval(methods: list[str], datasets: list[str], out: Path, *, n: int = 30, seed: int = 0,
             suffix: str | None = SUFFIX, split: str = DEFAULT_SPLIT, eval_config: str | Path = CONFIGS / "eval.yaml",
             overrides: dict | None = None, sweeps: dict[str, list] | None = None, sweep_method: str = "ewe",
             sweep_n: int | None = None, use_articles: bool = True, progress: bool = True,
             loader: Loader | None = None, pool=None, scorer: str = DEFAULT_SCORER, claim_checker=None,
             command: str | None = None) -> dict:
    """Generate, score and report; returns {"summaries", "sweeps", "report"}.

    `pool`: an open RayPool (ewe/ray_pool.py, `ewe eval run --ray`): its workers generate (each
    loading every method's model and datastore once); scoring stays in this process. `scorer` names
    the scorer (claim_checkers.SCORERS); `claim_checker` gives a built one (the OpenAI one).
    `command`: the command line that made the run, recorded in summary.json with the commit that
    scored it, so a table made from it names both (eval/table.py)."""
    overrides = dict(overrides or {})
    configs = method_configs(methods, overrides)  # fail early
    for ds in datasets:
        if ds not in SETS and not Path(ds).is_file():
            raise EvalError(f"--datasets {ds!r}: not a named prompt set ({', '.join(SETS)}) and no such JSONL file")
    loader = loader or Loader()
    out.mkdir(parents=True, exist_ok=True)
    prompt_files = {}
    for ds in datasets:
        path = out / "prompts" / f"{Path(ds).stem}.jsonl"
        settle_prompts(path, load_prompts(ds, n, seed, suffix, split), f"{ds} (--n {n}, --seed {seed}, --split {split})")
        prompt_files[Path(ds).stem] = path
    failed = []
    for ds, prompts in prompt_files.items():
        for name, cfg in configs.items():
            s = run_prompts(_generator(loader, pool, cfg), prompts, out / ds / f"{name}.jsonl", progress=progress)
            if s["errors"]:
                failed.append(f"{name} on {ds}: {s['errors']} (see {s['output']}.errors.jsonl)")
    if failed:
        raise EvalError("prompts that could not run: " + "; ".join(failed) + ". The methods would be compared on "
                        "different prompt sets; fix or drop those prompts and rerun (finished ones are kept)")

    scorer = Scorer(loader.runtime(EWEConfig.from_yaml(eval_config)), use_articles=use_articles, scorer=scorer,
                    claim_checker=claim_checker)
    summaries, dataset_k = [], {}
    for ds in prompt_files:
        runs = {name: scorer.check_file(out / ds / f"{name}.jsonl", out / ds / f"{name}.details.jsonl", name, ds,
                                        progress) for name in configs}
        dataset_k[ds] = score_dataset(runs)
        for name, rows in runs.items():
            attach_run_sentences(rows, out / ds / f"{name}.jsonl")
            path = out / ds / f"{name}.details.jsonl"
            write_jsonl(path, rows)
            s = summarize(rows, name, ds, dataset_k[ds], scorer.checker_name, path)
            loop = in_loop_checker(configs[name])
            s["in_loop_checker"] = loop or "-"
            s["self_graded"] = loop == scorer.signature
            s["generated_at"] = generated_at(out / ds / f"{name}.jsonl")
            summaries.append(s)

    sweep_rows = []
    for param, values in (sweeps or {}).items():
        ds = next(iter(prompt_files))
        base = config_path(sweep_method)
        for value in values:
            folder = out / "sweeps" / f"{param}={value}"
            prompts = prompt_files[ds]
            if sweep_n:
                sub = folder / "prompts.jsonl"
                if not sub.exists():  # written whole or not at all: a rerun never finds a partial subset
                    atomic_write(sub, "".join(prompts.read_text(encoding="utf-8").splitlines(True)[:sweep_n]))
                prompts = sub
            swept = {key: value for key in param.split("+")}
            cfg = EWEConfig.from_yaml(base, **{**overrides_for(EWEConfig.from_yaml(base).method, overrides), **swept})
            results = folder / f"{method_name(sweep_method)}.jsonl"
            run_prompts(_generator(loader, pool, cfg), prompts, results, progress=progress)
            rows = scorer.check_file(results, folder / "details.jsonl", method_name(sweep_method), ds, progress)
            apply_scores(rows, dataset_k[ds])
            attach_run_sentences(rows, results)
            write_jsonl(folder / "details.jsonl", rows)
            s = summarize(rows, method_name(sweep_method), ds, dataset_k[ds], scorer.checker_name,
                          folder / "details.jsonl")
            sweep_rows.append({"param": param, "value": value, **{k: s[k] for k in ("method", "dataset", "precision",
                                                                                     "recall", "f1", "n")},
                               "coverage": s.get("coverage")})
    from .report import vr_efficiency, write_report

    report = write_report(summaries, out / "report", sweeps=sweep_rows or None, scorer_note=scorer.accuracy_note())
    efficiency = {ds: vr_efficiency([s for s in summaries if s["dataset"] == ds]) for ds in prompt_files}
    result = {"command": command, "scored_at": code_of({"code": code_version()}),
              "summaries": summaries, "sweeps": sweep_rows, "K": dataset_k, "scorer": scorer.accuracy_note(),
              "vr_efficiency": {ds: e for ds, e in efficiency.items() if e is not None},
              "report": {k: str(v) for k, v in report.items()}}
    write_json(out / "summary.json", result)
    return result


def score_files(results: list[Path], out: Path, *, eval_config: str | Path = CONFIGS / "eval.yaml",
                dataset: str = "custom", K: int | None = None, use_articles: bool = True, progress: bool = True,
                loader: Loader | None = None, scorer: str = DEFAULT_SCORER, claim_checker=None) -> dict:
    """`ewe eval score`: score results files (one method each, named by file stem) as one dataset."""
    names = [Path(r).stem for r in results]
    if len(set(names)) != len(names):
        raise ValueError(f"results files need distinct names (they name the methods): {names}")
    for r in results:  # every file checked before the checker loads or --out is made
        read_results(Path(r))
    loader = loader or Loader()
    scorer = Scorer(loader.runtime(EWEConfig.from_yaml(eval_config)), use_articles=use_articles, scorer=scorer,
                    claim_checker=claim_checker)
    out.mkdir(parents=True, exist_ok=True)
    runs = {name: scorer.check_file(Path(r), out / f"{name}.details.jsonl", name, dataset, progress)
            for name, r in zip(names, results)}
    K = score_dataset(runs, K)
    summaries = []
    for (name, rows), r in zip(runs.items(), results):
        attach_run_sentences(rows, Path(r))
        write_jsonl(out / f"{name}.details.jsonl", rows)
        summaries.append(summarize(rows, name, dataset, K, scorer.checker_name, out / f"{name}.details.jsonl"))
    from .report import write_report

    report = write_report(summaries, out / "report", scorer_note=scorer.accuracy_note())
    result = {"summaries": summaries, "K": {dataset: K}, "scorer": scorer.accuracy_note(),
              "report": {k: str(v) for k, v in report.items()}}
    write_json(out / "summary.json", result)
    return result
