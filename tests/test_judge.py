"""The trained judge: its data, its network, its training and its place as a checker backend.

Mechanism tests use a tiny random BERT (same tokenizer as MiniLM) and run in seconds; the
tests marked slow load the shipped judge.
"""
import json
from pathlib import Path

import pytest
import torch

from ewe.judge import data as D
from ewe.judge.checker import JudgeChecker, windows
from ewe.judge.model import LABELS, JudgeModel, JudgeSpec, load_tokenizer
from ewe.judge.train import TrainConfig, train
from ewe.verify import FactChecker
from ewe.verify.types import NOT_ENOUGH_EVIDENCE, NOT_CHECKABLE, SUPPORTED, UNSUPPORTED, Claim, Evidence

ARTICLES = {
    "Ada Lovelace": ("English mathematician (1815–1852)", "People",
                     "Augusta Ada King, Countess of Lovelace was an English mathematician and writer. She is chiefly "
                     "known for her work on Charles Babbage's proposed mechanical general-purpose computer, the "
                     "Analytical Engine. She was the first to recognise that the machine had applications beyond pure "
                     "calculation. Lovelace died of uterine cancer in London in 1852."),
    "Alan Turing": ("English computer scientist (1912–1954)", "People",
                    "Alan Mathison Turing was an English mathematician, computer scientist and logician. He was "
                    "highly influential in the development of theoretical computer science. During the Second World "
                    "War, Turing worked for the Government Code and Cypher School at Bletchley Park in Buckinghamshire. "
                    "He led Hut 8, the section responsible for German naval cryptanalysis."),
    "Grace Hopper": ("American computer scientist (1906–1992)", "People",
                     "Grace Brewster Hopper was an American computer scientist and United States Navy rear admiral. "
                     "She was one of the first programmers of the Harvard Mark I computer in 1944. She invented one of "
                     "the first linkers and popularized the idea of machine-independent programming languages."),
    "Danube": ("River in Central and Eastern Europe", "Geography",
               "The Danube is the second-longest river in Europe, after the Volga in Russia. It flows through much "
               "of Central and Southeastern Europe, from the Black Forest into the Black Sea. The river was once a "
               "long-standing frontier of the Roman Empire. It passes through Vienna, Bratislava, Budapest and "
               "Belgrade, four capital cities."),
    "Lake Baikal": ("Rift lake in Siberia, Russia", "Geography",
                    "Lake Baikal is a rift lake in Russia. It is situated in southern Siberia, between Irkutsk Oblast to "
                    "the northwest and the Republic of Buryatia to the southeast. With 23,615.39 km3 of fresh water, it "
                    "is the largest freshwater lake by volume in the world. It is the world's deepest lake, with a "
                    "maximum depth of 1,642 m."),
}


def summaries():
    return {t: {"title": t, "description": d, "topic": top, "extract": x} for t, (d, top, x) in ARTICLES.items()}


@pytest.fixture(scope="module")
def examples():
    return D.build(summaries(), seed=0)


def test_held_out_split_is_by_article_and_stable(examples):
    assert D.is_held_out("Marie Curie") == D.is_held_out("Marie Curie")
    share = sum(D.is_held_out(f"title {i}") for i in range(5000)) / 5000
    assert 0.17 < share < 0.23
    for ex in examples:
        assert ex.split == ("test" if D.is_held_out(ex.title) else "train")


def test_examples_have_every_label_and_contrast(examples):
    assert {e.label for e in examples} == set(LABELS)
    for e in examples:
        assert D.is_proposition(e.claim) or e.kind in ("number", "name", "antonym", "negation", "role", "moved",
                                                        "foreign", "added-place", "added-date", "added-qualifier")
        if e.kind == "removed-sentence":
            assert e.source and e.source not in e.evidence  # the one sentence stating it is gone
        if e.label == UNSUPPORTED:
            # every alteration has a supported original against the same evidence, except the role swap
            assert e.kind == "role" or any(o.label == SUPPORTED and o.evidence == e.evidence and o.source == e.source
                                           for o in examples)
    b = D.Builder(D.load_articles(summaries()), seed=0)
    ada = next(a for a in b.by_topic["People"] if a.title == "Ada Lovelace")
    stated = {c for c, kind, _ in b.supported(ada) if kind in ("life", "description")}
    assert {"Ada Lovelace was born in 1815.", "Ada Lovelace died in 1852.",
            "Ada Lovelace was an English mathematician."} <= stated


def test_alterations_change_what_they_say():
    b = D.Builder(D.load_articles(summaries()), seed=1)
    art = next(a for a in b.by_topic["People"] if a.title == "Grace Hopper")
    claim = "Grace Hopper was one of the first programmers of the Harvard Mark I computer in 1944."
    seen = set()
    for _ in range(40):
        alt = b.unsupported(art, claim)
        assert alt is not None and alt[0] != claim
        text, kind, edit = alt
        assert text[:edit] == claim[:edit]  # the edit offset is where the claim stops following the passage
        seen.add(kind)
    assert {"number", "name"} <= seen


def test_prefix_labels_follow_the_edit(examples):
    rows = D.prefixes(examples, seed=0, per_claim=3)
    by_id = {e.id: e for e in examples}
    assert rows
    for r in rows:
        ex = by_id[r["id"].rsplit("-p", 1)[0]]
        assert ex.claim.startswith(r["prefix"])
        cut = len(r["prefix"])
        if ex.label != SUPPORTED and (ex.edit_start is None or ex.kind in D.WHOLE_CLAIM_KINDS):
            # wrong as a whole, no edit recorded: only the whole claim has a known label
            assert r["prefix"].rstrip(" .") == ex.claim.rstrip(" .") and r["label"] == "not_entailed"
            continue
        entailed = ex.label == SUPPORTED or cut <= ex.edit_start
        assert r["label"] == ("entailed" if entailed else "not_entailed")
    assert {r["label"] for r in rows} == {"entailed", "not_entailed"}


def test_write_and_read_round_trip(tmp_path, examples):
    manifest = D.write(examples, tmp_path, seed=0, prefix_rows=D.prefixes(examples))
    back = D.read(tmp_path / "train.jsonl") + D.read(tmp_path / "test.jsonl")
    assert sorted(r["id"] for r in back) == sorted(e.id for e in examples)
    assert manifest["files"]["train.jsonl"]["rows"] + manifest["files"]["test.jsonl"]["rows"] == len(examples)
    titles = {s: {r["title"] for r in D.read(tmp_path / f"{s}.jsonl")} for s in ("train", "test")}
    assert not titles["train"] & titles["test"]


# --- the network ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_base(tmp_path_factory):
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=512)
    path = tmp_path_factory.mktemp("tiny-bert")
    BertModel(cfg, add_pooling_layer=False).save_pretrained(path)
    return path


def _batch(texts, n):
    enc = load_tokenizer()(texts, truncation=True, max_length=n, padding=True, return_tensors="pt")
    return enc["input_ids"], enc["attention_mask"]


@pytest.mark.parametrize("split", [0, 2])
def test_padding_does_not_change_a_rows_logits(tiny_base, split):
    model = JudgeModel(JudgeSpec(split=split, trained_layers=1), tiny_base).eval()
    claims = ["Lake Baikal is deep.", "The Danube flows from the Black Forest into the Black Sea in Europe."]
    passages = ["Lake Baikal: It is the deepest lake, with a depth of 1,642 m.", "Danube: a river."]
    ci, cm = _batch(claims, 64)
    pi, pm = _batch(passages, 96)
    with torch.no_grad():
        both = model(ci, cm, pi, pm)
        for i in range(2):
            ci1, cm1 = _batch(claims[i:i + 1], 64)
            pi1, pm1 = _batch(passages[i:i + 1], 96)
            assert torch.allclose(model(ci1, cm1, pi1, pm1)[0], both[i], atol=1e-5)


def test_late_interaction_reuses_lower_states(tiny_base):
    model = JudgeModel(JudgeSpec(split=2, trained_layers=1), tiny_base).eval()
    ci, cm = _batch(["A claim about a lake."], 64)
    pi, pm = _batch(["A passage about a lake."], 96)
    with torch.no_grad():
        direct = model(ci, cm, pi, pm)
        cached = model.upper(model.lower(ci, cm, 0), cm, model.lower(pi, pm, 1), pm)
    assert torch.equal(direct, cached)
    assert {n for n, p in model.named_parameters() if p.requires_grad} == \
        {n for n, _ in model.named_parameters() if n.startswith(("bert.encoder.layer.2.", "head."))}


def test_trained_state_round_trip(tiny_base):
    a = JudgeModel(JudgeSpec(split=1, trained_layers=2), tiny_base)
    b = JudgeModel(JudgeSpec(split=1, trained_layers=2), tiny_base)
    with torch.no_grad():
        for p in a.trainable_parameters():
            p.add_(torch.randn_like(p))
    b.load_trained_state(a.trained_state())
    assert all(torch.equal(a.trained_state()[k], v) for k, v in b.trained_state().items())
    assert set(a.trained_state()) == {k for k in a.trained_state() if k.startswith(("head.", "layer.1.", "layer.2."))}


def test_bad_split_is_an_error(tiny_base):
    with pytest.raises(ValueError, match="split=3"):
        JudgeModel(JudgeSpec(split=3), tiny_base)
    with pytest.raises(ValueError, match="trained_layers=3"):
        JudgeModel(JudgeSpec(split=1, trained_layers=3), tiny_base)


# --- training -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory, examples):
    path = tmp_path_factory.mktemp("judge-data")
    rows = list(examples)
    for e in rows[: len(rows) // 3]:
        e.split = "test"  # enough held-out rows for a tiny run, whatever the hash says
    D.write(rows, path, seed=0)
    return path


def _cfg(**kw):
    return TrainConfig(spec=JudgeSpec(split=2, trained_layers=1), epochs=2, batch_size=8, checkpoint_every=3,
                       threads=1, **kw)


def test_training_is_deterministic(tmp_path, tiny_base, data_dir):
    m1 = train(data_dir, tmp_path / "a", _cfg(), progress=False, base_path=tiny_base)
    m2 = train(data_dir, tmp_path / "b", _cfg(), progress=False, base_path=tiny_base)
    assert (tmp_path / "a" / "judge.safetensors").read_bytes() == (tmp_path / "b" / "judge.safetensors").read_bytes()
    assert m1["weights_sha256"] == m2["weights_sha256"] and m1["held_out"] == m2["held_out"]
    m3 = train(data_dir, tmp_path / "c", _cfg(seed=1), progress=False, base_path=tiny_base)
    assert m3["weights_sha256"] != m1["weights_sha256"]


def test_training_resumes_to_the_same_weights(tmp_path, tiny_base, data_dir):
    whole = train(data_dir, tmp_path / "whole", _cfg(), progress=False, base_path=tiny_base)

    class Stop(Exception):
        pass

    def stop_at(step):
        if step == 6:  # a checkpoint step (every 3)
            raise Stop

    with pytest.raises(Stop):
        train(data_dir, tmp_path / "cut", _cfg(), progress=False, base_path=tiny_base, on_step=stop_at)
    assert json.loads((tmp_path / "cut" / "checkpoint.json").read_text())["step"] == 6
    resumed = train(data_dir, tmp_path / "cut", _cfg(), progress=False, base_path=tiny_base)
    assert resumed["weights_sha256"] == whole["weights_sha256"]


def test_continued_training_starts_from_the_given_judge(tmp_path, tiny_base, data_dir):
    from safetensors.torch import load_file

    train(data_dir, tmp_path / "first", _cfg(), progress=False, base_path=tiny_base)
    # with learning rates ~0, continuing changes nothing: the start was the first judge, not the base
    still = train(data_dir, tmp_path / "still", _cfg(init=str(tmp_path / "first"), lr=1e-12, head_lr=1e-12),
                  progress=False, base_path=tiny_base)
    a, b = load_file(str(tmp_path / "first" / "judge.safetensors")), load_file(str(tmp_path / "still" / "judge.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert still["settings"]["init_weights_sha256"]
    other = TrainConfig(spec=JudgeSpec(split=1, trained_layers=1), epochs=1, threads=1, init=str(tmp_path / "first"))
    with pytest.raises(ValueError, match="spec"):
        train(data_dir, tmp_path / "bad", other, progress=False, base_path=tiny_base)


def test_missing_data_names_the_command(tmp_path, tiny_base):
    with pytest.raises(FileNotFoundError, match="ewe judge data"):
        train(tmp_path, tmp_path / "out", _cfg(), progress=False, base_path=tiny_base)


# --- the checker ----------------------------------------------------------------------------


def test_windows_fit_and_keep_the_title_line():
    tok = load_tokenizer()
    passage = "Lake Baikal (Rift lake in Siberia, Russia): " + " ".join(
        f"Sentence number {i} says something about the lake and its water." for i in range(20))
    ws = windows(passage, tok, 48)
    assert len(ws) > 1
    for w in ws:
        assert w.startswith("Lake Baikal (Rift lake in Siberia, Russia): ")
        assert len(tok.tokenize(w)) <= 46
    assert windows("Short: one sentence.", tok, 48) == ["Short: one sentence."]


class _FakeJudge:
    """P(supported, unsupported, nee) by a rule on the claim text, one row per window."""

    spec = JudgeSpec()

    @staticmethod
    def tokenizer(text):  # a token per word
        return {"input_ids": text.split()}

    def windows(self, passage):
        return [passage]

    def probabilities(self, claims, passages):
        table = {"yes": [0.9, 0.05, 0.05], "no": [0.1, 0.8, 0.1], "maybe": [0.3, 0.2, 0.5]}
        return torch.tensor([table[c.split()[0]] if p.startswith("right") else [0.05, 0.05, 0.9]
                             for c, p in zip(claims, passages)])


def test_checker_aggregates_over_passages():
    ck = JudgeChecker(_FakeJudge())
    claims = [Claim("yes it is."), Claim("no it is."), Claim("maybe it is."), Claim("yes again.")]
    ev = [Evidence("unrelated passage"), Evidence("right passage")]
    vs = ck.check_claims(claims, [ev, ev, ev, [Evidence("unrelated")]])
    assert [v.label for v in vs] == [SUPPORTED, UNSUPPORTED, NOT_ENOUGH_EVIDENCE, NOT_ENOUGH_EVIDENCE]
    assert vs[0].evidence[0].text == "right passage" and vs[1].evidence[0].text == "right passage"
    assert vs[0].score == pytest.approx(0.9) and vs[3].score == pytest.approx(0.05)
    assert ck.check_claims([Claim("yes.")], [[]])[0].label == NOT_ENOUGH_EVIDENCE


def test_a_claim_longer_than_the_judge_reads_is_never_supported():
    """Its end is cut off before the judge sees it (a false clause there would pass)."""
    ck = JudgeChecker(_FakeJudge())
    limit = JudgeSpec().max_claim_tokens
    ev = [Evidence("right passage")]
    at_limit, over = Claim("yes " + "w " * (limit - 1)), Claim("yes " + "w " * limit)
    fits, cut = ck.check_claims([at_limit, over], [ev, ev])
    assert fits.label == SUPPORTED and cut.label == NOT_ENOUGH_EVIDENCE
    assert "last 1 tokens are past what the judge reads" in cut.rationale
    refuted = ck.check_claims([Claim("no " + "w " * limit)], [ev])[0]
    assert refuted.label == UNSUPPORTED  # what it did read contradicts the evidence: still refuted


# --- the shipped judge ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def shipped():
    from ewe.judge.checker import shipped_judge

    return FactChecker(JudgeChecker(shipped_judge()))


CURIE_CASES = [  # the issue's table: what a user tried, and the right answer
    ("Marie Curie was a famous chef.", False),
    ("Marie Curie was the first man to win a Nobel Prize.", False),
    ("Reportedly, Marie Curie was born in 1867.", True),
    ("Marie Curie died in 1934.", True),  # the evidence says "(1867–1934)"
]


@pytest.mark.slow
@pytest.mark.parametrize("sentence,supported", CURIE_CASES)
def test_the_issue_table_is_decided_right(shipped, sentence, supported):
    from ewe.data.wiki import passage

    check = shipped.check_sentence(sentence, prompt="Tell me a bio of Marie Curie.", evidence=[passage("Marie Curie")])
    assert check.checkable and check.factual == supported, check.to_dict()


@pytest.mark.slow
def test_the_shipped_judge_loads_and_judges(shipped):
    from ewe.data.wiki import passage

    check = shipped.check_sentence("Marie Curie won the 1911 Nobel Prize in Chemistry.", evidence=[passage("Marie Curie")])
    (v,) = check.verdicts
    assert v.error is None and v.backend == "judge:minilm-cross" and 0.0 <= v.score <= 1.0
    assert v.details["per_passage"] and abs(sum(v.details["per_passage"][0]) - 1.0) < 0.01


@pytest.mark.slow
@pytest.mark.parametrize("sentence", ["Marie Curie was a brilliant.", "玛丽·居里是一位著名的厨师。",
                                      "Who was Marie Curie?", ""])
def test_no_claim_is_not_checkable(shipped, sentence):
    from ewe.data.wiki import passage

    check = shipped.check_sentence(sentence, evidence=[passage("Marie Curie")])
    assert not check.checkable and check.verdict == NOT_CHECKABLE and not check.factual and not check.needs_rewrite


# --- `ewe check --input` --------------------------------------------------------------------


class _FakeEWE:
    def __init__(self):
        self.calls = []

    def check(self, sentence, prompt=None, context=None, evidence=None):
        from ewe.verify.types import SentenceCheck, Verdict

        self.calls.append((sentence, prompt, context, evidence))
        claim = Claim(sentence)
        label = SUPPORTED if "true" in sentence else UNSUPPORTED
        return SentenceCheck(sentence, [claim], [Verdict(claim, label, 0.9 if label == SUPPORTED else 0.1,
                                                         [Evidence(e) for e in evidence or []], "fake")])


def test_check_batch_writes_a_verdict_per_case_and_resumes(tmp_path, monkeypatch):
    from ewe import cli

    fake = _FakeEWE()
    monkeypatch.setattr(cli, "_load_ewe", lambda args: fake)
    cases = tmp_path / "cases.jsonl"
    cases.write_text("\n".join(json.dumps(c) for c in [
        {"id": "a", "claim": "This is true.", "evidence": ["p1"], "prompt": "q"},
        {"claim": "This is false.", "evidence": ["p2", "p3"], "context": "before"},
    ]) + "\n")
    out = tmp_path / "verdicts.jsonl"
    assert cli.main(["check", "--input", str(cases), "--output", str(out)]) == 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(r["id"], r["verdict"], r["score"]) for r in rows] == [("a", SUPPORTED, 0.9), ("2", UNSUPPORTED, 0.1)]
    assert rows[0]["prompt"] == "q" and rows[1]["claims"][0]["label"] == UNSUPPORTED
    assert fake.calls[1] == ("This is false.", None, "before", ["p2", "p3"])
    assert cli.main(["check", "--input", str(cases), "--output", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2 and len(fake.calls) == 2  # nothing checked twice


@pytest.mark.parametrize("line,why", [
    ('{"evidence": ["p"]}', 'non-empty string field "claim"'),
    ('{"claim": "x", "evidence": "p"}', '"evidence" must be a non-empty list'),
    ('{"claim": "x", "evidence": []}', '"evidence" must be a non-empty list'),
    ('{"claim": "x", "prompt": 3}', '"prompt" must be a string'),
    ('{"claim": "x", "evidence": [{"title": "T"}]}', '"evidence" passage 0.text must be a non-empty string, got NoneType'),
    ('{"claim": "x", "evidence": ["p", {"text": "t", "link": "u"}]}', '"evidence" passage 1 has unknown field'),
    ("not json", "not JSON"),
])
def test_check_batch_rejects_bad_cases_by_line(tmp_path, line, why):
    from ewe.checks import read_cases
    from ewe.runner import RunError

    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"claim": "fine."}\n' + line + "\n")
    with pytest.raises(RunError, match=f"cases.jsonl:2: .*{why}" if why != "not JSON" else "cases.jsonl:2: not JSON"):
        read_cases(cases)


def test_check_batch_reads_passages_with_titles(tmp_path):
    from ewe.checks import read_cases

    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"claim": "x", "evidence": ["plain text", {"title": "Marie Curie", "text": "She was born."}]}\n')
    [case] = read_cases(cases)
    assert case["evidence"][1] == {"title": "Marie Curie", "text": "She was born."}


def test_check_batch_refuses_writing_into_its_input(tmp_path, capsys):
    from ewe import cli

    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"claim": "fine."}\n')
    with pytest.raises(SystemExit, match="is the --input file"):
        cli.main(["check", "--input", str(cases), "--output", str(cases)])
    assert cases.read_text() == '{"claim": "fine."}\n'


def test_the_hand_labelled_set_is_well_formed():
    """tests/data/judge/generated.jsonl: sentences the embedded model wrote, labelled by reading
    the article (LABELLING.md); `ewe judge eval` measures judges on it."""
    from ewe.data import wiki
    from ewe.data.generated_sentences import split_of

    rows = D.read(Path(__file__).parent / "data" / "judge" / "generated.jsonl")
    assert len(rows) >= 200 and len({r["id"] for r in rows}) == len(rows)
    assert {r["label"] for r in rows} == {SUPPORTED, UNSUPPORTED, NOT_ENOUGH_EVIDENCE, NOT_CHECKABLE}
    assert {"bare", "ra", "ewe"} <= {r["method"] for r in rows} and {r["dataset"] for r in rows} == {"bio", "objects"}
    assert {r.get("annotator", "A") for r in rows} == {"A"}  # second readings are kept apart (second_reading.jsonl)
    for r in rows:
        assert r["topic"] in wiki.summaries() and D.is_held_out(r["topic"])  # the judge never trained on it
        assert r["sentence"].strip() and r["note"].strip()
        assert r["split"] == split_of(r["topic"])  # the threshold is chosen on validation, reported on test


@pytest.mark.slow
def test_length_buckets_give_the_probabilities_of_one_batch():
    """Pairs are sorted by length into small batches (less padding): the same numbers, in input order."""
    import torch

    from ewe.judge.checker import shipped_judge
    from ewe.data.wiki import passage

    judge = shipped_judge()
    wins = [w for t in ("Marie Curie", "Isaac Newton", "Charles Darwin") for w in judge.windows(passage(t))]
    claims = [f"Claim {i}: Marie Curie was born in {1860 + i}." for i in range(len(wins))]
    saved = judge.bucket
    try:
        judge.bucket = 1000
        whole = judge.probabilities(claims, wins)
        judge.bucket = 2
        bucketed = judge.probabilities(claims, wins)
    finally:
        judge.bucket = saved
    assert len(wins) > 2
    torch.testing.assert_close(bucketed, whole, atol=0.02, rtol=0)  # bf16 autocast: padding moves the last bits


# --- model-written claims, the operating point (issue 37) --------------------------------------


class _Embedder:
    """Bag-of-words vectors: cosine is word overlap, enough to hold the labeller's rule."""

    def encode(self, texts, normalize_embeddings=True, convert_to_numpy=True):
        import numpy as np

        vocab = sorted({w for t in texts for w in t.lower().split()})
        out = np.array([[float(w in t.lower().split()) for w in vocab] for t in texts]) + 1e-9
        return out / np.linalg.norm(out, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def turing():
    return next(a for a in D.load_articles(summaries()) if a.title == "Alan Turing")


@pytest.mark.parametrize("text,kept,why", [
    ("Alan Turing was an English mathematician, logician and computer scientist.", True, ""),
    ("Alan Turing was an English mathematician born in 1912.", False, "number not in the source"),
    ("Alan Turing was an English mathematician who studied at Cambridge.", False, "name not in the passage"),
    ("Alan Turing was not an English mathematician, computer scientist and logician.", False, "negation"),
    ("Alan Turing was a celebrated, beloved, visionary genius and brilliant inventor.", False, "content words new"),
    ("He was a mathematician and a logician and a computer scientist from England.", False, "does not name"),
    ("Mathematics.", False, "not a statement"),
])
def test_a_restatement_is_kept_only_when_consistent_with_its_source(turing, text, kept, why):
    from ewe.judge.paraphrases import Labeller, Request

    source = "Alan Turing was an English mathematician, computer scientist and logician."
    req = Request(turing.title, 0, source, 0)
    row = Labeller(min_cosine=0.5, embedder=_Embedder()).label([(text, req, turing)])[0]
    assert row["kept"] is kept and why in row["reason"]
    assert row["split"] == ("test" if D.is_held_out(turing.title) else "train")


def test_a_restatement_far_from_its_source_is_dropped(turing):
    from ewe.judge.paraphrases import Labeller, Request

    req = Request(turing.title, 0, "Alan Turing was an English mathematician, computer scientist and logician.", 0)
    row = Labeller(min_cosine=0.9, embedder=_Embedder()).label(
        [("Alan Turing, an English logician, was also a mathematician.", req, turing)])[0]
    assert not row["kept"] and row["reason"].startswith("cosine")


def test_the_first_sentence_of_an_output_loses_its_lead_in():
    from ewe.judge.paraphrases import first_sentence

    assert first_sentence('Sure! "Alan Turing was English." He also ran.') == "Alan Turing was English."
    assert first_sentence("- Turing led Hut 8. More.") == "Turing led Hut 8."
    assert first_sentence("") == ""


def test_model_written_claims_join_the_data_with_contrasts_in_the_same_words():
    text = "Alan Turing headed Hut 8, which was responsible for German naval cryptanalysis during the war."
    rows = [{"id": "Alan Turing\t3\t0", "title": "Alan Turing", "sentence_index": 3, "paraphrase": text, "kept": True},
            {"id": "Alan Turing\t2\t1", "title": "Alan Turing", "sentence_index": 2, "paraphrase": "junk", "kept": False}]
    plain = D.build(summaries(), seed=0)
    assert len(D.build(summaries(), seed=0, paraphrases=rows)) == len(plain)  # no reader's label: nothing added
    both = D.build(summaries(), seed=0, paraphrases=rows, auto_labels=True)
    assert [e.to_dict() for e in both[:len(plain)]] == [e.to_dict() for e in plain]  # the rest unchanged
    added = both[len(plain):]
    assert added[0].label == SUPPORTED and added[0].claim == text and added[0].kind == "model-paraphrase"
    assert all(e.kind.startswith("model-") for e in added) and "junk" not in {e.claim for e in added}
    assert len(added) == 2  # balanced: one contrast for the one supported restatement
    for e in added[1:]:
        assert e.label != SUPPORTED
        if e.label == UNSUPPORTED:
            assert e.claim != text and e.claim[:e.edit_start] == text[:e.edit_start]  # one edit of the same words
        if e.kind == "model-removed-sentence":
            assert e.claim == text and "Hut 8" not in e.evidence


def test_a_readers_label_decides_a_model_written_claim():
    wrong = "Alan Turing was a French mathematician who led Hut 9."
    rows = [{"id": "k1", "title": "Alan Turing", "sentence_index": 0, "paraphrase": wrong, "kept": True,
             "label": UNSUPPORTED},
            {"id": "k2", "title": "Alan Turing", "sentence_index": 0, "paraphrase": "Turing was clever.", "kept": False,
             "label": NOT_CHECKABLE}]
    right = "Alan Turing was an English computer scientist and mathematician."
    rows.append({"id": "k3", "title": "Alan Turing", "sentence_index": 0, "paraphrase": right, "label": SUPPORTED})
    added = D.build(summaries(), seed=0, paraphrases=rows)[len(D.build(summaries(), seed=0)):]
    assert [(e.claim, e.label, e.kind) for e in added if e.label == SUPPORTED] == [(right, SUPPORTED, "model-paraphrase")]
    assert len(added) == 2  # one negative kept for one supported, from the reader's or the contrasts
    everything = D.build(summaries(), seed=0, paraphrases=rows[:1])[len(D.build(summaries(), seed=0)):]
    assert everything == []  # no supported restatement: no model-written negative either


def test_training_draws_keep_every_model_written_row():
    from ewe.judge.train import _subset

    rows = [{"id": i, "kind": "model-paraphrase" if i % 10 == 0 else "clause"} for i in range(200)]
    got = _subset(rows, 50, seed=0)
    assert len(got) == 50 and {r["id"] for r in got} >= {i for i in range(0, 200, 10)}
    plain = [{"id": i, "kind": "clause"} for i in range(200)]
    import random

    assert _subset(plain, 50, seed=0) == random.Random(0).sample(plain, 50)  # the shipped judge's draw is unchanged


def _items(pos_scores, neg_scores):
    return [{"gold": True, "score": s} for s in pos_scores] + [{"gold": False, "score": s} for s in neg_scores]


def test_figures_at_a_threshold():
    from ewe.judge.evaluate import at_threshold

    items = _items([0.9, 0.3, None], [0.05, 0.6])
    p = at_threshold(items, 0.2)
    assert p["supported_kept"] == round(2 / 3, 4) and p["others_rejected"] == 0.5  # a sentence with no claim never passes
    assert p["balanced_accuracy"] == round((2 / 3 + 0.5) / 2, 4)


def test_the_operating_point_weighs_false_acceptances_against_false_rejections():
    from ewe.judge.evaluate import operating_point

    items = _items([0.9, 0.04, 0.04, 0.04], [0.01, 0.03, 0.6, 0.7])
    # at 0.02: kept 1, rejected 1/4; at 0.5: kept 1/4, rejected 1/2 (rates, not counts)
    assert operating_point(items, 1.0, thresholds=(0.02, 0.5))["threshold"] == 0.02  # 0.75 < 1.25
    assert operating_point(items, 4.0, thresholds=(0.02, 0.5))["threshold"] == 0.5  # 3.0 > 2.75
    assert operating_point(_items([0.9], [0.1]), 1.0, thresholds=(0.2, 0.5))["threshold"] == 0.5  # ties: the higher


def test_each_rewrite_rule_counts_what_it_sends_back():
    from ewe.judge.evaluate import rewrite_rules

    items = _items([0.9, 0.1, 0.1], [0.05, 0.05, 0.6, None])
    for i, contradicted in zip(items, [False, True, False, True, False, False, False]):
        i["contradicted"] = contradicted
    r = rewrite_rules(items, 0.5)
    # not_supported: every true sentence under the threshold, every other one under it (no claim: never passes)
    assert r["not_supported"] == {"true_rewritten": round(2 / 3, 4), "others_rewritten": 0.75}
    # contradicted: only the ones with a contradicted claim, whatever their score
    assert r["contradicted"] == {"true_rewritten": round(1 / 3, 4), "others_rewritten": 0.25}


def test_a_repeated_sentence_counts_once_per_article():
    from ewe.judge.evaluate import distinct

    def item(topic, sentence):
        return {"row": {"topic": topic, "sentence": sentence}, "gold": True, "score": 0.9}

    items = [item("Ada", "She wrote notes."), item("Ada", "She  wrote notes."), item("Bob", "She wrote notes."),
             item("Ada", "She wrote code.")]
    assert distinct(items) == [items[0], items[2], items[3]]


def test_bfloat16_autocast_only_where_the_cpu_has_it(monkeypatch):
    from ewe.judge import model

    monkeypatch.setenv(model.BF16_ENV, "1")
    assert model.bf16_active("cpu")
    monkeypatch.setenv(model.BF16_ENV, "0")
    assert not model.bf16_active("cpu") and not model.bf16_active("cuda")
    monkeypatch.setenv(model.BF16_ENV, "auto")
    assert model.bf16_active("cpu") == model._cpu_has_bf16() and model.bf16_active("cuda")
    monkeypatch.setenv(model.BF16_ENV, "maybe")
    with pytest.raises(ValueError, match="EWE_JUDGE_BF16"):
        model.bf16_active("cpu")


def test_the_checker_reads_the_recorded_operating_point(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"operating_point": {"threshold": 0.07}}))
    assert JudgeChecker(str(tmp_path)).threshold == 0.07
    assert JudgeChecker(str(tmp_path), threshold=0.3).threshold == 0.3
    (tmp_path / "manifest.json").write_text("{}")
    assert JudgeChecker(str(tmp_path)).threshold == 0.5


def test_generated_sentences_are_split_by_article(tmp_path):
    from ewe.data.generated_sentences import sentences, split_of

    run = tmp_path / "ra.jsonl"
    run.write_text(json.dumps({"id": "bio-1", "topic": "Ada Lovelace", "dataset": "bio", "prompt": "Tell me a bio.",
                               "text": "Ada was English. She wrote notes."}) + "\n")
    rows = sentences(run)
    assert [r["id"] for r in rows] == ["ra-bio-1-s0", "ra-bio-1-s1"] and rows[1]["context"] == "Ada was English. "
    assert {r["split"] for r in rows} == {split_of("Ada Lovelace")} and split_of("x") in ("validation", "test")


def test_claims_of_generated_answers_are_what_the_checker_judges(tmp_path):
    from ewe.data.generated_sentences import claims
    from ewe.judge.data import is_held_out

    run = tmp_path / "bare.jsonl"
    run.write_text(json.dumps({"id": "bio-1", "topic": "Ada Lovelace", "dataset": "bio", "prompt": "Tell me a bio of Ada Lovelace.",
                               "text": "Ada Lovelace was English. She wrote notes and died in 1852."}) + "\n")
    rows = claims(run)
    assert [r["claim"] for r in rows] == ["Ada Lovelace was English.", "Ada Lovelace wrote notes.", "Ada Lovelace died in 1852."]
    assert [r["id"] for r in rows] == ["bare-bio-1-s0-c0", "bare-bio-1-s1-c0", "bare-bio-1-s1-c1"]
    assert {r["split"] for r in rows} == {"test" if is_held_out("Ada Lovelace") else "train"}


def test_the_hand_labelled_model_written_claims_are_well_formed():
    """ewe/judge/labelled/model_written.jsonl: restatements the embedded model wrote
    (`ewe judge paraphrase`), each labelled by a reader against the article; training data for
    the judge (`ewe judge data --paraphrases`), so none may come from the hand-labelled test set's articles."""
    from ewe.data import wiki
    from ewe.judge.data import read

    rows = read(Path(D.__file__).parent / "labelled" / "model_written.jsonl")
    assert len(rows) >= 300 and len({r["id"] for r in rows}) == len(rows)
    assert {r["label"] for r in rows} == {SUPPORTED, UNSUPPORTED, NOT_ENOUGH_EVIDENCE, NOT_CHECKABLE}
    evaluated = {r["topic"] for r in D.read(Path(__file__).parent / "data" / "judge" / "generated.jsonl")}
    for r in rows:
        assert r["title"] in wiki.summaries() and r["paraphrase"].strip() and r["note"].strip()
        assert r["split"] == ("test" if D.is_held_out(r["title"]) else "train") and r["title"] not in evaluated


def test_the_hand_labelled_claims_from_answers_are_well_formed():
    """ewe/judge/labelled/answers.jsonl: the checker's claims from the embedded model's own bare
    and RA answers (`python -m ewe.data.generated_sentences --claims`), each labelled by a reader;
    training data, so its articles are the judge's train articles, none of the hand-labelled
    evaluation set's and none of a prompt set the README reports on."""
    from ewe.data import wiki
    from ewe.data.prompt_sets import prompt_set
    from ewe.judge.data import read

    rows = read(Path(D.__file__).parent / "labelled" / "answers.jsonl")
    assert len(rows) >= 300 and len({r["id"] for r in rows}) == len(rows)
    assert {r["label"] for r in rows} == {SUPPORTED, UNSUPPORTED, NOT_ENOUGH_EVIDENCE, NOT_CHECKABLE}
    evaluated = {r["topic"] for r in D.read(Path(__file__).parent / "data" / "judge" / "generated.jsonl")}
    reported = {p["topic"] for name in ("bio", "objects") for p in prompt_set(name, 300, seed=0)}
    for r in rows:
        assert r["topic"] in wiki.summaries() and r["claim"].strip() and r["note"].strip()
        assert r["split"] == "train" and not D.is_held_out(r["topic"])
        assert r["topic"] not in evaluated and r["topic"] not in reported


def test_the_second_reading_agrees_as_labelling_md_says():
    from ewe.judge.evaluate import agreement

    here = Path(__file__).parent / "data" / "judge"
    got = agreement(D.read(here / "generated.jsonl"), D.read(here / "second_reading.jsonl"))
    assert got["n"] == 120 and got["raw"] >= 0.9 and got["supported_vs_rest"] >= 0.95
    text = (here / "LABELLING.md").read_text(encoding="utf-8")
    assert f"{got['raw']:.3f} on the four labels" in text and f"kappa {got['kappa']:.3f}" in text
