"""The frozen train / dev / test split (ewe/data/splits.py): prompt sets draw from one split, and no
test-split article is in anything a shipped learned part was trained on."""
import json
from collections import Counter
from pathlib import Path

import pytest

from ewe.data import wiki
from ewe.data.prompt_sets import load_prompts, prompt_set
from ewe.data.splits import SPLITS, check_split, is_held_out, split_of

ROOT = Path(__file__).resolve().parents[1]
ADAPTER = ROOT / "ewe" / "memory" / "adapters" / "smollm2-135m-instruct" / "manifest.json"
LABELLED = ROOT / "ewe" / "judge" / "labelled"


def test_the_split_is_a_fixed_hash_of_the_title_in_shares_of_80_10_10():
    counts = Counter(split_of(t) for t in wiki.summaries())
    total = sum(counts.values())
    assert set(counts) == set(SPLITS)
    assert 0.77 < counts["train"] / total < 0.83
    assert 0.08 < counts["dev"] / total < 0.12 and 0.08 < counts["test"] / total < 0.12
    # dev and test are exactly the articles the judges were always held out of
    assert all(is_held_out(t) == (split_of(t) != "train") for t in wiki.summaries())
    # frozen: a change of the hash would move every figure's prompts and every learned part's data
    assert {t: split_of(t) for t in ("Cyanobacteria", "Tsinghua University", "Bertolt Brecht", "Holy Grail")} == {
        "Cyanobacteria": "train", "Tsinghua University": "dev", "Bertolt Brecht": "test", "Holy Grail": "train"}
    with pytest.raises(ValueError, match="'valid' is not one of"):
        check_split("valid")


@pytest.mark.parametrize("name", ["bio", "objects", "summaries"])
@pytest.mark.parametrize("split", SPLITS)
def test_a_prompt_set_draws_from_its_split_only(name, split):
    rows = prompt_set(name, 40, seed=3, split=split)
    assert len(rows) == 40 and all(r["split"] == split for r in rows)
    assert all(split_of(r["topic"]) == split for r in rows)
    assert rows == prompt_set(name, 40, seed=3, split=split)


def test_the_default_set_is_the_test_split_and_any_is_the_set_drawn_before():
    assert prompt_set("bio", 10) == prompt_set("bio", 10, split="test")
    assert load_prompts("objects", 5, seed=1) == prompt_set("objects", 5, seed=1, split="test")
    before = prompt_set("bio", 100, split="any")
    assert {split_of(r["topic"]) for r in before} == set(SPLITS)  # the old sets mixed every split
    with pytest.raises(ValueError, match="split 'heldout' is not one of"):
        prompt_set("bio", 5, split="heldout")


def test_no_test_article_in_the_shipped_memory_adapters_training_data():
    """The manifest's data hash is the hash of the examples the current code builds from its settings,
    so the shipped weights were trained on them; every title those examples use is of the train split."""
    from ewe.model_loading import load_tokenizer
    from ewe.training.memory_reader import MemoryTrainConfig, examples_sha256, training_examples

    manifest = json.loads(ADAPTER.read_text())
    settings = {k: v for k, v in manifest["settings"].items() if k != "train_sha256"}
    cfg = MemoryTrainConfig(**{**settings, "units": tuple(settings["units"]), "targets": tuple(settings["targets"])})
    train, held = training_examples(load_tokenizer(cfg.model), cfg)
    assert examples_sha256(train) == manifest["data"]["train_sha256"], (
        "the shipped adapter was trained on other examples than ewe/training builds: retrain it (`ewe train memory`)")
    title_of = {wiki.passage(t): t for t in wiki.summaries()}
    used = Counter(split_of(title_of[p]) for r in train for p in r.passages) + Counter(split_of(r.title) for r in train)
    assert set(used) == {"train"}
    assert {split_of(r.title) for r in held} == {"dev"}


def test_no_test_article_in_the_judges_hand_labelled_training_rows():
    for name in ("answers.jsonl", "model_written.jsonl"):
        rows = [json.loads(line) for line in (LABELLED / name).read_text(encoding="utf-8").splitlines() if line.strip()]
        trained = [r for r in rows if r["split"] == "train"]
        assert trained and all(split_of(r.get("topic") or r["title"]) == "train" for r in trained), name
        # a row of a held-out article is marked so, and the judge's builder keeps it out of training
        assert all(r["split"] == "test" for r in rows if is_held_out(r.get("topic") or r["title"])), name


def test_the_judges_examples_train_only_on_train_articles():
    from ewe.judge.data import build

    subset = dict(sorted(wiki.summaries().items())[:300])
    examples = build(subset, seed=0, per_article=4)
    assert {e.split for e in examples} == {"train", "test"}
    assert all(split_of(e.title) == "train" for e in examples if e.split == "train")
    assert all(split_of(e.title) != "train" for e in examples if e.split == "test")
