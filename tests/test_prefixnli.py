"""PrefixNLI (ewe/judge/prefix_*.py, ewe/methods/prefix_guide.py, ewe/methods/prefixnli.py) on the tiny
random model: the cached judge against the judge reading every text whole, the logits rule against
the paper's formula, lambda 0 against plain decoding, the hook against the transformers processor."""
from __future__ import annotations

import math

import pytest
import torch

from tiny import tiny_ewe, tiny_model, tiny_tokenizer

from ewe.config import EWEConfig
from ewe.judge.prefix_model import PrefixJudge, PrefixJudgeSpec
from ewe.judge.prefix_scorer import PrefixScorer
from ewe.methods.prefix_guide import GuideSettings, candidates, guide, logits_processor
from ewe.methods.prefixnli import PrefixNLI

PREMISE = "Marie Curie was a Polish physicist and chemist who conducted pioneering research on radioactivity."
PROMPT = "Tell me a bio of Marie Curie."
TOL = 1e-5


def random_judge(seed: int = 1, layers: int = 1) -> PrefixJudge:
    """A prefix judge on the tiny model with a random head (its scores spread over (0, 1))."""
    judge = PrefixJudge(tiny_model(seed), tiny_tokenizer(), PrefixJudgeSpec(base="tiny", trained_layers=layers))
    torch.manual_seed(seed)
    with torch.no_grad():
        judge.head.weight.normal_(0, 1.0)
    return judge.eval()


def ids(text: str) -> list[int]:
    return tiny_tokenizer()(text, add_special_tokens=False).input_ids


@pytest.fixture(scope="module")
def judge():
    return random_judge()


def test_training_path_equals_the_inference_path(judge):
    """The trainer's frozen-then-trained split gives the scores of one plain forward, padding included."""
    row = judge.header_ids(PREMISE) + ids("Marie Curie was born in 1867.")
    full = judge.score_full(row)
    x = torch.tensor([row + [0] * 4, row[:12] + [0] * (len(row) - 8)])
    with torch.no_grad():
        split = torch.sigmoid(judge.upper(judge.lower(x)))
    assert (split[0, :len(row)] - full).abs().max() < TOL
    assert (split[1, :12] - full[:12]).abs().max() < TOL


def test_cached_scores_equal_uncached_as_the_answer_grows_and_rewinds(judge):
    scorer = PrefixScorer(judge, PREMISE)
    answer = ids("Marie Curie was born in 1867. She was a physicist.")
    # grow token by token, then rewind to earlier points and regrow, then a different answer
    schedule = list(range(len(answer) + 1)) + [3, 2, 9, 0, 5, len(answer)]
    worst = 0.0
    for t in schedule:
        cands = [5, 17, 100, answer[t] if t < len(answer) else 9]
        worst = max(worst, float((scorer.score(answer[:t], cands) - scorer.score_uncached(answer[:t], cands)).abs().max()))
    other = ids("Albert Einstein was a German-born theoretical physicist.")
    for t in range(len(other)):
        worst = max(worst, float((scorer.score(other[:t], [7, 8]) - scorer.score_uncached(other[:t], [7, 8])).abs().max()))
    assert worst < TOL
    assert len(scorer) == len(scorer.header) + len(other) - 1  # the candidates never stay on the cache


def test_candidates_are_the_top_p_set():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
    assert candidates(logits, 0.9, 8)[0].tolist() == [0, 1, 2]  # 0.5 + 0.3 < 0.9: the third is needed
    assert candidates(logits, 0.5, 8)[0].tolist() == [0]
    assert candidates(logits, 0.9, 2)[0].tolist() == [0, 1]  # capped
    assert candidates(logits, 1.0, 8)[0].tolist() == [0, 1, 2, 3]


def test_guide_applies_the_papers_rule(judge):
    scorer = PrefixScorer(judge, PREMISE)
    logits = torch.randn(len(tiny_tokenizer()), generator=torch.Generator().manual_seed(3)) * 3
    prefix = ids("Marie Curie was")
    s = GuideSettings(tau=0.5, lam=5.0, top_p=0.95, max_candidates=6)
    out, event = guide(logits, scorer, prefix, s, skip=set())
    cand, _ = candidates(logits, s.top_p, s.max_candidates)
    entail = scorer.score_uncached(prefix, cand.tolist())
    for t, e in zip(cand.tolist(), entail.tolist()):
        want = logits[t] + (5.0 * math.log(e / (1 - e)) if e < 0.5 else 0.0)
        assert abs(float(out[t]) - float(want)) < 1e-3
    others = torch.ones_like(out, dtype=torch.bool)
    others[cand] = False
    assert torch.isinf(out[others]).all() and (out[others] < 0).all()
    assert event["top_before"] == int(cand[0]) and event["top_after"] == int(out.argmax())
    assert {c["token"] for c in event["candidates"]} == set(cand.tolist())


def prefixnli_ewe(judge, **options):
    cfg = EWEConfig.build({"method": "prefixnli", "memory": {"unit_tokens": 24},
                           "retrieval": {"source": None, "placement": "prompt"},
                           "decoding": {"max_new_tokens": 24, "temperature": 0.0},
                           "prefixnli": options})
    ewe = tiny_ewe(cfg)
    ewe.runtime._parts[PrefixNLI.judge_key(cfg.method_section)] = judge
    return ewe


def plain_ewe():
    return tiny_ewe(EWEConfig.build({"memory": {"unit_tokens": 24}, "retrieval": {"source": None, "placement": "prompt"},
                                     "decoding": {"max_new_tokens": 24, "temperature": 0.0}}))


def test_lambda_zero_is_plain_decoding_token_for_token(judge):
    plain = plain_ewe().generate([PROMPT, "Tell me about radioactivity."], [[PREMISE], [PREMISE]])
    guided = prefixnli_ewe(judge, **{"lambda": 0.0, "max_candidates": 4}).generate(
        [PROMPT, "Tell me about radioactivity."], [[PREMISE], [PREMISE]])
    for p, g in zip(plain, guided):
        assert g.token_ids == p.token_ids
        assert g.stats["judged_steps"] == len(g.token_ids) + int(g.finish_reason == "eos")
        assert g.stats["judge_forwards"] >= g.stats["judged_steps"] and g.trace == []


def test_with_the_passage_in_memory_lambda_zero_is_ewe_memory_decoding(judge):
    """PrefixNLI combined with EWE's memory: the generator reads the passage as a memory unit, the
    judge reads it as its premise; with lambda 0 the answer is the memory-only answer."""
    memory = {"memory": {"unit_tokens": 24}, "retrieval": {"source": None, "placement": "memory"},
              "decoding": {"max_new_tokens": 24, "temperature": 0.0}}
    plain = tiny_ewe(EWEConfig.build(memory)).generate(PROMPT, [PREMISE])
    cfg = EWEConfig.build({**memory, "method": "prefixnli", "prefixnli": {"lambda": 0.0}})
    ewe = tiny_ewe(cfg)
    ewe.runtime._parts[PrefixNLI.judge_key(cfg.method_section)] = judge
    guided = ewe.generate(PROMPT, [PREMISE])
    assert guided.token_ids == plain.token_ids and guided.stats["memory_units"] == 1
    assert guided.stats["judged_steps"] > 0


def test_a_penalty_steers_the_answer_and_is_traced(judge):
    plain = plain_ewe().generate(PROMPT, [PREMISE])
    guided = prefixnli_ewe(judge, **{"lambda": 50.0, "tau": 0.9, "max_candidates": 4, "top_p": 1.0}).generate(
        PROMPT, [PREMISE])
    assert guided.token_ids != plain.token_ids
    first = guided.trace[0]
    assert first["type"] == "prefix_guide" and first["top_after"] != first["top_before"]
    assert first["chosen"] == guided.token_ids[first["answer_position"]] == first["top_after"]
    assert guided.stats["interventions"] == len(guided.trace)


def test_no_passages_decodes_unguided(judge):
    plain = plain_ewe().generate(PROMPT, [])
    guided = prefixnli_ewe(judge, **{"lambda": 50.0, "tau": 0.9}).generate(PROMPT, [])
    assert guided.token_ids == plain.token_ids
    assert guided.trace[0]["type"] == "prefix_unguided" and guided.stats["judged_steps"] == 0


def test_cache_off_gives_the_same_answer(judge):
    opts = {"lambda": 50.0, "tau": 0.9, "max_candidates": 3}
    cached = prefixnli_ewe(judge, **opts).generate(PROMPT, [PREMISE])
    uncached = prefixnli_ewe(judge, **opts, cache=False).generate(PROMPT, [PREMISE])
    assert cached.token_ids == uncached.token_ids
    assert uncached.stats["judge_forwards"] > cached.stats["judge_forwards"]


def test_sentence_scope_judges_the_sentence_being_written(judge):
    from ewe.methods.prefix_guide import PrefixGuide

    hook = PrefixGuide(judge, [PREMISE], GuideSettings(scope="sentence"), skip=set())
    answer = ids("Marie Curie was born. She was a physicist")
    second = ids(" She was a physicist")
    assert hook.hypothesis(answer)[-len(second):] == second
    assert tiny_tokenizer().decode(hook.hypothesis(answer)).strip() == "She was a physicist"
    assert GuideSettings().scope == "answer"


def test_transformers_logits_processor_matches_the_hook(judge):
    """The same judge steering a plain `model.generate()` writes what ewe's loop writes."""
    opts = {"lambda": 50.0, "tau": 0.9, "max_candidates": 4, "top_p": 1.0}
    ewe = prefixnli_ewe(judge, **opts)
    ours = ewe.generate(PROMPT, [PREMISE])
    prompt = ewe.runtime.prompt_with_passages(PROMPT, [PREMISE])
    x = torch.tensor([ewe.runtime.prompt_ids(prompt)])
    settings = ewe.runtime.config.method_section
    proc = logits_processor(judge, [PREMISE], x.shape[1],
                            GuideSettings(tau=settings.tau, lam=settings.lambda_, top_p=settings.top_p,
                                          max_candidates=settings.max_candidates), skip=ewe.runtime.stop_ids)
    out = ewe.runtime.model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=24, do_sample=False,
                                     logits_processor=[proc], pad_token_id=tiny_tokenizer().pad_token_id)
    theirs = out[0, x.shape[1]:].tolist()
    n = len(ours.token_ids)
    assert theirs[:n] == ours.token_ids
    assert len(proc.events[0]) == len(ours.trace)


def test_settings_read_lambda_and_refuse_bad_values():
    cfg = EWEConfig.build({"method": "prefixnli", "prefixnli": {"lambda": 2.0, "tau": 0.3}})
    assert cfg.method_section.lambda_ == 2.0
    again = EWEConfig.build(cfg.to_dict() if hasattr(cfg, "to_dict") else cfg.model_dump(by_alias=True))
    assert again.method_section.lambda_ == 2.0
    for bad, key in (({"tau": 1.5}, "prefixnli.tau"), ({"lambda": -1}, "prefixnli.lambda"),
                     ({"scope": "word"}, "prefixnli.scope"), ({"colour": 1}, "prefixnli.colour")):
        with pytest.raises(Exception, match=key):
            EWEConfig.build({"method": "prefixnli", "prefixnli": bad})


def test_saved_judge_loads_with_its_weights(tmp_path, judge):
    judge.save(tmp_path / "j", {"note": "test"})
    again = PrefixJudge.load(str(tmp_path / "j"), model=tiny_model(1), tokenizer=tiny_tokenizer())
    row = judge.header_ids(PREMISE) + ids("Marie Curie was born.")
    assert (again.score_full(row) - judge.score_full(row)).abs().max() < TOL
    with pytest.raises(ValueError, match="neither a folder"):
        PrefixJudge.load("no-such-judge")


def test_training_rows_label_every_prefix_the_data_can_label(judge):
    from ewe.judge.prefix_train import IGNORE, make_row

    tok = tiny_tokenizer()
    claim = "Marie Curie was born in 1867."
    header = len(judge.header_ids(PREMISE))

    def labels(label, edit, kind="number", context=()):
        row = make_row(judge, {"evidence": PREMISE, "claim": claim, "label": label, "edit_start": edit, "kind": kind},
                       list(context))
        assert row.labels[:header] == [IGNORE] * header and len(row.ids) == len(row.labels) == len(row.word_end)
        return row, row.labels[header:]

    _, supported = labels("supported", None)
    assert supported == [1] * len(supported)
    row, altered = labels("unsupported", claim.index("1867"))
    ends = [end for _, end in tok(claim, return_offsets_mapping=True, add_special_tokens=False)["offset_mapping"]]
    assert altered == [int(e <= claim.index("1867")) for e in ends] and 0 in altered and 1 in altered
    assert row.word_end[header:][-1]  # the whole claim is read as a prefix too
    _, whole = labels("not_enough_evidence", 0, kind="foreign")
    assert set(whole[:-2]) == {IGNORE} and whole[-1] == 0  # only the whole claim is known to be wrong
    _, led = labels("unsupported", claim.index("1867"), context=["Marie Curie was a physicist."])
    lead = len(tok("Marie Curie was a physicist. ", add_special_tokens=False).input_ids)
    assert led[:lead - 1] == [1] * (lead - 1) and led[-len(altered):] == altered


def test_source_frames_move_the_edit_and_keep_the_labels(judge):
    """A claim put in a summary's lead-in keeps its label; an altered claim's prefixes turn
    not-entailed at the same word, now further along."""
    import random

    from ewe.judge.data import SOURCE_FRAMES, lead_in
    from ewe.judge.prefix_train import make_row, make_rows

    claim = "Marie Curie was born in 1867."
    framed, edit = lead_in(claim, claim.index("1867"), "The article says that {}")
    assert framed == "The article says that Marie Curie was born in 1867." and framed[edit:edit + 4] == "1867"
    assert lead_in("She was born.", None, "Reportedly, {}") == ("Reportedly, she was born.", None)

    ex = {"evidence": PREMISE, "claim": claim, "label": "unsupported", "edit_start": claim.index("1867"),
          "kind": "number"}
    header = len(judge.header_ids(PREMISE))
    [row] = make_rows(judge, [ex], random.Random(0), 0.0, frame_share=1.0)
    text = tiny_tokenizer().decode(row.ids[header:])
    frame = next(f for f in SOURCE_FRAMES if text.startswith(f.split("{}")[0]))
    expected = make_row(judge, {**ex, "claim": lead_in(claim, None, frame)[0],
                                "edit_start": lead_in(claim, ex["edit_start"], frame)[1]}, [])
    assert row.labels == expected.labels and 0 in row.labels and 1 in row.labels
    [plain] = make_rows(judge, [ex], random.Random(0), 0.0)
    assert plain.ids == make_row(judge, ex, []).ids  # no frames asked: the claim as it is


def test_training_keeps_every_example_in_the_generators_words():
    import random

    from ewe.judge.prefix_train import draw_training

    written = [{"id": f"w{i}", "kind": "model-paraphrase"} for i in range(5)]
    synthetic = [{"id": f"s{i}", "kind": "number"} for i in range(50)]
    drawn = draw_training(synthetic[:25] + written + synthetic[25:], 12, random.Random(0))
    assert len(drawn) == 12 and all(w in drawn for w in written)
    assert len(draw_training(written + synthetic, 100, random.Random(0))) == 55


@pytest.mark.slow
def test_the_shipped_prefix_judge_on_the_embedded_model():
    """configs/prefixnli.yaml as shipped: lambda 0 writes RA-1's answer token for token (the same
    passage in the prompt); with the paper's lambda the trace's interventions are the tokens written;
    the shipped judge's recorded held-out figure is the issue's bar or better."""
    from pathlib import Path

    from ewe import EWE
    from ewe.data.wiki import passage

    configs = Path(__file__).resolve().parents[1] / "configs"
    source = [passage("Marie Curie")]
    plain = EWE.from_config(str(configs / "ra-1.yaml"), **{"decoding.max_new_tokens": 20})
    expected = plain.generate(PROMPT, source)
    guided = EWE(plain.model, plain.tokenizer, EWEConfig.from_yaml(configs / "prefixnli.yaml", **{
        "decoding.max_new_tokens": 20, "prefixnli.lambda": 0.0}))
    zero = guided.generate(PROMPT, source)
    assert zero.token_ids == expected.token_ids and zero.stats["judged_steps"] >= len(zero.token_ids)
    judge = guided.runtime._parts[PrefixNLI.judge_key(guided.config.method_section)]
    assert judge.manifest["held_out"]["word"]["balanced_accuracy"] >= 0.80
    steered = EWE(plain.model, plain.tokenizer, EWEConfig.from_yaml(configs / "prefixnli.yaml", **{
        "decoding.max_new_tokens": 20, "prefixnli.tau": 0.9}))
    steered.runtime._parts.update(guided.runtime._parts)  # the judge loaded once
    out = steered.generate(PROMPT, source)
    for event in out.trace:
        assert out.token_ids[event["answer_position"]] == event["chosen"] != event["top_before"]
