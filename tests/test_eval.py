"""The local VeriScore-style metric on hand-labelled toy responses, scoring files, and `ewe eval run`."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from scripted import scripted_model, text_script
from tiny import tiny_tokenizer

from ewe import EWE, cli
from ewe.config import EWEConfig
from ewe.runtime import Runtime
from ewe.eval.harness import run_eval
from ewe.eval.metric import WithArticle, median_k, score
from ewe.data.prompt_sets import SUFFIX, prompt_set
from ewe.eval.scorer import Scorer, apply_scores, score_dataset, summarize
from ewe.verify import FactChecker, StaticEvidenceSource
from ewe.verify.types import SUPPORTED, UNSUPPORTED, Claim, Evidence, Verdict

TRUE = {"Marie Curie was a physicist.", "Marie Curie won two Nobel prizes.", "Marie Curie was born in Warsaw."}


class LookupBackend:
    """Supported exactly when the claim text is in TRUE; counts calls."""

    name = "lookup"

    def __init__(self):
        self.claims = []

    def check_claims(self, claims, evidence_per_claim):
        self.claims += [c.text for c in claims]
        return [Verdict(c, SUPPORTED if c.text in TRUE else UNSUPPORTED, 1.0 if c.text in TRUE else 0.0, list(ev),
                        self.name) for c, ev in zip(claims, evidence_per_claim)]


def checking_runtime(backend):
    """A Runtime with no model loaded, checking with `backend` (scoring never needs the generator)."""
    checker = FactChecker(backend, evidence=StaticEvidenceSource([Evidence("Curie passage", "Marie Curie", 0.9)]), k=2)
    return Runtime(EWEConfig(), fact_checker=checker)


# -- the metric, by hand ------------------------------------------------------------------------


@pytest.mark.parametrize("claims,supported,K,p,r,f1", [
    (4, 3, 5, 0.75, 0.6, 2 * 0.75 * 0.6 / 1.35),
    (4, 3, 2, 0.75, 1.0, 2 * 0.75 / 1.75),   # recall is capped at 1
    (10, 0, 5, 0.0, 0.0, 0.0),
    (0, 0, 5, 0.0, 0.0, 0.0),                # no claims: scores 0
    (3, 3, 3, 1.0, 1.0, 1.0),
])
def test_precision_recall_f1_by_hand(claims, supported, K, p, r, f1):
    s = score(claims, supported, K)
    assert (s.precision, s.recall) == pytest.approx((p, r)) and s.f1 == pytest.approx(f1)


def test_k_is_the_median_claim_count():
    assert median_k([1, 3, 8]) == 3 and median_k([2, 4, 5, 9]) == 4 and median_k([0, 0, 1]) == 1
    with pytest.raises(ValueError):
        median_k([])
    with pytest.raises(ValueError, match="n_supported"):
        score(2, 3, 1)


def test_toy_responses_scored_claim_by_claim(tmp_path):
    responses = [  # hand-labelled: claims (supported?)
        ("a", "Marie Curie was a physicist. She was born in Paris.", 2, 1),
        ("b", "Marie Curie was a physicist. She won two Nobel prizes. She was born in Warsaw.", 3, 3),
        ("c", "Hello there!", 0, 0),
    ]
    results = tmp_path / "m.jsonl"
    results.write_text("".join(json.dumps({"id": i, "prompt": "Tell me a bio of Marie Curie.", "text": t}) + "\n"
                               for i, t, _, _ in responses))
    backend = LookupBackend()
    rows = Scorer(checking_runtime(backend), use_articles=False).check_file(results, tmp_path / "d.jsonl", "m", "toy",
                                                                        progress=False)
    assert [(r["n_claims"], r["n_supported"]) for r in rows] == [(c, s) for _, _, c, s in responses]
    K = score_dataset({"m": rows})
    assert K == 2  # median of 2, 3, 0
    assert [round(r["f1"], 4) for r in rows] == [round(2 * 0.5 * 0.5 / 1.0, 4), 1.0, 0.0]
    claims = [c for s in rows[0]["sentences"] for c in s["claims"]]
    assert [(c["text"], c["label"]) for c in claims] == [("Marie Curie was a physicist.", "supported"),
                                                        ("Marie Curie was born in Paris.", "unsupported")]
    # resumable: a rerun checks nothing again
    before = len(backend.claims)
    Scorer(checking_runtime(backend), use_articles=False).check_file(results, tmp_path / "d.jsonl", "m", "toy", progress=False)
    assert len(backend.claims) == before


def test_details_carry_the_results_stats_even_when_checked_by_an_older_version(tmp_path):
    results = tmp_path / "svr.jsonl"
    stats = {"method": "streaming-vr", "new_tokens": 9, "refine_tokens": 7, "total_s": 1.5, "unrelated": 1}
    results.write_text(json.dumps({"id": "a", "prompt": "Tell me a bio of Marie Curie.",
                                   "text": "Marie Curie was a physicist.", "stats": stats}) + "\n")
    details = tmp_path / "d.jsonl"
    scorer = Scorer(checking_runtime(LookupBackend()), use_articles=False)
    [row] = scorer.check_file(results, details, "svr", "toy", progress=False)
    assert row["stats"]["refine_tokens"] == 7 and row["stats"]["method"] == "streaming-vr"
    assert "unrelated" not in row["stats"]
    old = json.loads(details.read_text())
    old["stats"] = {"new_tokens": 9}  # as an older ewe wrote it
    details.write_text(json.dumps(old) + "\n")
    [row] = scorer.check_file(results, details, "svr", "toy", progress=False)
    assert row["stats"]["refine_tokens"] == 7
    summary = summarize(apply_scores([row], 1), "svr", "toy", 1, "c", details)
    assert (summary["refine_tokens"], summary["vr_method"]) == (7, "streaming-vr")


def test_the_prompts_article_comes_first_as_evidence():
    src = WithArticle(StaticEvidenceSource(["retrieved one", "retrieved two", "article text"]),
                      Evidence("article text", "Marie Curie"))
    [row] = src.search(["q"], 3)
    assert [e.text for e in row] == ["article text", "retrieved one", "retrieved two"]


def test_prompt_sets_come_from_the_embedded_wikipedia():
    bio = prompt_set("bio", n=5, seed=1)
    assert len(bio) == 5 and all(r["prompt"].startswith("Tell me a bio of ") and r["prompt"].endswith(SUFFIX)
                                 for r in bio)
    assert bio == prompt_set("bio", n=5, seed=1) and bio != prompt_set("bio", n=5, seed=2)
    objects = prompt_set("objects", n=12, suffix=None)
    assert len({o["topic"] for o in objects}) == 12 and all(o["prompt"].endswith("?") for o in objects)
    with pytest.raises(ValueError, match="prompt set"):
        prompt_set("poems")


# -- the whole comparison ------------------------------------------------------------------------


class ScriptedLoader:
    """Every method runs the scripted model; the scorer's EWE carries the lookup checker."""

    def __init__(self, backend):
        self.backend, self.generated = backend, []
        self.model = scripted_model(text_script(lambda units: "Marie Curie was a physicist. She was born in Paris."))

    def load(self, config):
        ewe = EWE(self.model, tiny_tokenizer(), config)
        ewe.runtime.use_fact_checker(checking_runtime(self.backend).fact_checker())
        real = ewe.generate

        def generate(prompt, **kw):
            self.generated.append(prompt)
            return real(prompt, **kw)

        ewe.generate = generate
        return ewe

    def runtime(self, config):
        return self.load(config).runtime


EVAL_BASE = {"memory": {"unit_tokens": 24}, "retrieval": {"source": None}, "decoding": {"max_new_tokens": 40}}


def eval_inputs(folder: Path, rows: list[dict]) -> tuple[list[str], Path, Path]:
    """Two methods (one plain, one whose controller checks and backtracks), a scorer config and
    a prompts file `toy.jsonl` of `rows`, written in `folder`: (method config paths, eval config, prompts)."""
    methods = []
    for name, extra in [("plain", {}), ("checked", {"controller": {"verify_trigger": "interval"}})]:
        path = folder / f"{name}.yaml"
        path.write_text(yaml.safe_dump({**EVAL_BASE, **extra}))
        methods.append(str(path))
    eval_cfg = folder / "eval.yaml"
    eval_cfg.write_text(yaml.safe_dump(EVAL_BASE))
    prompts = folder / "toy.jsonl"
    prompts.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return methods, eval_cfg, prompts


def test_eval_run_generates_scores_reports_and_resumes(tmp_path):
    methods, eval_cfg, prompts = eval_inputs(tmp_path, [{"id": i, "prompt": "Tell me a bio of Marie Curie."}
                                                        for i in range(3)])
    loader = ScriptedLoader(LookupBackend())
    out = tmp_path / "eval"
    result = run_eval(methods, [str(prompts)], out, eval_config=eval_cfg, loader=loader, progress=False)
    assert len(loader.generated) == 6
    by_method = {s["method"]: s for s in result["summaries"]}
    assert set(by_method) == {"plain", "checked"}
    # "checked" does pause and check, but its rewrite comes out the same (the script ignores memory), so
    # both methods answer alike: 2 claims, 1 supported; K = 2
    for s in by_method.values():
        assert s["K"] == 2 and s["precision"] == pytest.approx(0.5) and s["recall"] == pytest.approx(0.5)
    assert (out / "toy" / "plain.details.jsonl").exists() and (out / "summary.json").exists()
    assert json.loads((out / "summary.json").read_text())["K"] == {"toy": 2}
    loader.generated.clear()
    run_eval(methods, [str(prompts)], out, eval_config=eval_cfg, loader=loader, progress=False)
    assert loader.generated == []  # everything was already generated and checked


def test_eval_run_sweeps_a_setting_and_plots_it(tmp_path):
    base = {"memory": {"unit_tokens": 24}, "retrieval": {"source": None}, "decoding": {"max_new_tokens": 40},
            "controller": {"verify_trigger": "interval"}}
    method = tmp_path / "checked.yaml"
    method.write_text(yaml.safe_dump(base))
    eval_cfg = tmp_path / "eval.yaml"
    eval_cfg.write_text(yaml.safe_dump({"retrieval": {"source": None}}))
    prompts = tmp_path / "toy.jsonl"
    prompts.write_text("".join(json.dumps({"id": i, "prompt": "Tell me a bio of Marie Curie."}) + "\n" for i in range(3)))
    loader = ScriptedLoader(LookupBackend())
    result = run_eval([str(method)], [str(prompts)], tmp_path / "eval", eval_config=eval_cfg, loader=loader,
                      progress=False, sweeps={"controller.verify_interval": [2, 16],
                                              "memory.retrieval_units+retrieval.top_k": [3]},
                      sweep_method=str(method), sweep_n=2)
    assert [(r["param"], r["value"], r["n"]) for r in result["sweeps"]] == [
        ("controller.verify_interval", 2, 2), ("controller.verify_interval", 16, 2),
        ("memory.retrieval_units+retrieval.top_k", 3, 2)]
    tied = json.loads((tmp_path / "eval" / "sweeps" / "memory.retrieval_units+retrieval.top_k=3" /
                       "checked.jsonl.config.json").read_text())
    assert tied["memory"]["retrieval_units"] == 3 and tied["retrieval"]["top_k"] == 3
    assert all(r["f1"] == pytest.approx(0.5) for r in result["sweeps"])
    assert (tmp_path / "eval" / "sweeps" / "controller.verify_interval=16" / "checked.jsonl").exists()
    assert any(name.startswith("sweep_") and name.endswith(".png") for name in result["report"])


def test_every_listed_method_has_a_shipped_configuration():
    from ewe.eval.harness import METHODS, config_path

    for method in METHODS:
        EWEConfig.from_yaml(config_path(method))
    with pytest.raises(FileNotFoundError, match="no configuration"):
        config_path("no-such-method")


def test_eval_score_never_loads_the_generator(tmp_path, monkeypatch):
    """Scoring checks text that exists: the Runtime loads the tokenizer (passage sizes) and the
    datastore, never the model (issue 16)."""
    import ewe.model_loading
    from ewe.eval.harness import score_files
    from ewe.retrieval import Datastore
    from tiny import tiny_tokenizer

    tok_dir = tmp_path / "tok"
    tiny_tokenizer().save_pretrained(tok_dir)
    store = Datastore.build(Path(__file__).parent / "data" / "corpus.jsonl", tmp_path / "ds", tokenizer=tiny_tokenizer(),
                            chunk_tokens=40)
    cfg = tmp_path / "eval.yaml"
    cfg.write_text(yaml.safe_dump({"model": {"name": str(tok_dir)}, "retrieval": {"source": str(store.path)},
                                   "checker": {"backend": "alignment", "extractor": "rules", "evidence_k": 2}}))

    def no_model(*a, **kw):
        raise AssertionError("ewe eval score loaded the generator")

    monkeypatch.setattr(ewe.model_loading, "load_model", no_model)
    results = tmp_path / "m.jsonl"
    results.write_text(json.dumps({"id": "a", "prompt": "Tell me about penicillin.",
                                   "text": "Penicillin was discovered by Alexander Fleming."}) + "\n")
    out = score_files([results], tmp_path / "scored", eval_config=cfg, use_articles=False, progress=False)
    [summary] = out["summaries"]
    assert summary["n"] == 1 and summary["claims_per_response"] >= 1


# -- ewe eval compare: paired differences ----------------------------------------------------------


def _details(path, rows):
    path.write_text("".join(json.dumps({"id": i, "n_claims": c, "n_supported": s, "dedup": "core"}) + "\n" for i, c, s in rows),
                    encoding="utf-8")
    return path


def test_compare_gives_the_paired_difference_and_an_interval_around_it(tmp_path, capsys):
    from ewe.eval.compare import paired_difference
    from ewe.eval.metric import score

    a = _details(tmp_path / "a.details.jsonl", [(f"p{i}", 6, 3 + i % 3) for i in range(30)] + [("only-a", 6, 6)])
    b = _details(tmp_path / "b.details.jsonl", [(f"p{i}", 6, 2 + i % 2) for i in range(30)])
    d = paired_difference(a, b, K=6, resamples=2000)
    expect = sum(score(6, 3 + i % 3, 6).f1 - score(6, 2 + i % 2, 6).f1 for i in range(30)) / 30
    assert d["n"] == 30 and d["only_in_a"] == 1 and d["only_in_b"] == 0
    assert abs(d["difference"] - expect) < 1e-12 and d["low"] < d["difference"] < d["high"] and d["low"] > 0
    same = paired_difference(a, a)
    assert same["difference"] == same["low"] == same["high"] == 0.0 and same["K"] == 6  # the median claims

    assert cli.main(["eval", "compare", str(a), str(b), "--K", "6"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("a - b: F1@6 ") and "over 30 prompts (95% paired bootstrap interval" in out
    assert "left out: 1 responses only in A, 0 only in B" in out
    prec = paired_difference(a, b, K=6, resamples=2000, metric="precision")
    assert abs(prec["difference"] - sum((3 + i % 3) / 6 - (2 + i % 2) / 6 for i in range(30)) / 30) < 1e-12
    assert cli.main(["eval", "compare", str(a), str(b), "--metric", "precision"]) == 0
    assert capsys.readouterr().out.startswith("a - b: precision ")
    with pytest.raises(ValueError, match="metric 'f2'"):
        paired_difference(a, b, metric="f2")


def test_compare_refuses_files_that_cannot_be_paired(tmp_path):
    a = _details(tmp_path / "a.details.jsonl", [("p1", 6, 3)])
    b = _details(tmp_path / "b.details.jsonl", [("q1", 6, 3)])
    with pytest.raises(SystemExit, match="share no response id: they were not scored on the same prompts"):
        cli.main(["eval", "compare", str(a), str(b), "--K", "6"])
    results = tmp_path / "run.jsonl"
    results.write_text(json.dumps({"id": "p1", "text": "an answer"}) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"run\.jsonl:1: not a scored response .*details\.jsonl file"):
        cli.main(["eval", "compare", str(results), str(a), "--K", "6"])
    with pytest.raises(SystemExit, match="no such details file"):
        cli.main(["eval", "compare", str(tmp_path / "none.jsonl"), str(a), "--K", "6"])


def test_summaries_give_the_article_and_are_scored_against_it_only(tmp_path):
    """The summaries set (PrefixNLI's task): held-out articles, the article given as the prompt's
    passage, and each claim checked against that article and nothing the datastore knows."""
    from ewe.data import wiki
    from ewe.judge.data import is_held_out

    rows = prompt_set("summaries", n=4, seed=3)
    assert len(rows) == 4 and rows == prompt_set("summaries", n=4, seed=3)
    for r in rows:
        assert is_held_out(r["topic"]) and r["passages"] == [wiki.passage(r["topic"])]
        assert r["score_against"] == "source" and "Summarize" in r["prompt"]
    seen = []

    class Recording(LookupBackend):
        def check_claims(self, claims, evidence_per_claim):
            seen.extend(e.title for ev in evidence_per_claim for e in ev)
            return super().check_claims(claims, evidence_per_claim)

    results = tmp_path / "m.jsonl"
    results.write_text(json.dumps({"id": "s1", "prompt": rows[0]["prompt"], "topic": rows[0]["topic"],
                                   "score_against": "source", "text": wiki.summaries()[rows[0]["topic"]]["extract"]
                                   .split(". ")[0] + "."}) + "\n")
    Scorer(checking_runtime(Recording())).check_file(results, tmp_path / "d.jsonl", "m", "summaries", progress=False)
    assert seen and set(seen) == {rows[0]["topic"]}  # the static "Marie Curie" passage is never read
    results.write_text(json.dumps({"id": "s2", "prompt": "p", "topic": "No such article", "score_against": "source",
                                   "text": "Marie Curie was a physicist."}) + "\n")
    with pytest.raises(ValueError, match="names no article"):
        Scorer(checking_runtime(Recording())).check_file(results, tmp_path / "e.jsonl", "m", "summaries",
                                                         progress=False)


def test_the_eval_loader_opens_the_datastore_only_when_a_prompt_retrieves(monkeypatch):
    """Prompts that all bring their passages (the summaries set) never open or build the datastore;
    one a method opened while it ran is shared with the methods after it."""
    from ewe.eval.harness import Loader
    from ewe.retrieval import Datastore

    def refuse(*a, **k):
        raise AssertionError("the datastore was opened")

    monkeypatch.setattr(Datastore, "build", refuse)
    monkeypatch.setattr(Datastore, "load", refuse)
    loader = Loader()
    first = loader.load(EWEConfig.from_yaml(Path(__file__).parents[1] / "configs" / "ra-1.yaml",
                                            **{"decoding.max_new_tokens": 3}))
    assert not first.runtime.datastore_loaded
    first.generate("Tell me a bio of Marie Curie.", ["Marie Curie was a physicist."])
    assert not first.runtime.datastore_loaded
    opened = object()
    first.runtime._datastore = opened  # as if a retrieving prompt had opened it
    second = loader.load(EWEConfig.from_yaml(Path(__file__).parents[1] / "configs" / "ra.yaml"))
    assert second.runtime.datastore is opened and second.runtime.model is first.runtime.model


def test_credited_elsewhere_counts_another_subjects_fact_not_the_topics_own_phrases():
    """The table's 'claims credited from another subject' column: Kafka's books given to Klimt
    count; "Explicit stereotypes are ..." from the article on Stereotype does not, though a
    capitalized common word opens it; a claim about a third person from Bohr's passage counts."""
    from ewe.eval.metric import credited_elsewhere

    def verdict(claim, title, passage):
        return Verdict(Claim(claim), SUPPORTED, 0.9, [Evidence(f"{title}: {passage}", title=title)])

    kafka = verdict("Gustav Klimt's best-known works include The Metamorphosis (1915).", "Franz Kafka",
                    "His best-known works include the novella The Metamorphosis (1915).")
    assert credited_elsewhere(kafka, "Tell me a bio of Gustav Klimt.")
    topic = "What can you tell me about Stereotype?"
    own = verdict("Explicit stereotypes are based on conscious information.", "Stereotype",
                  "They can be explicit stereotypes, which are conscious, or implicit ones.")
    assert not credited_elsewhere(own, topic)
    pupil = verdict("Heisenberg was a student of Niels Bohr.", "Niels Bohr", "Niels Bohr was a Danish physicist.")
    assert credited_elsewhere(pupil, "Tell me a bio of Max Born.")
