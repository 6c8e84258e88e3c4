"""The memory adapter (`ewe train memory`, model.memory_adapter) on a tiny random Llama: the training
data keeps evaluation titles out, training resumes to the same weights, the merged adapter encodes
units as the training forward does, and with no unit in memory the model is the base model."""
import json

import pytest
import torch
from safetensors.torch import load_file

from ewe import EWE
from ewe.data import wiki
from ewe.memory.adapter import AdapterError, MemoryAdapter
from ewe.data.splits import split_of
from ewe.training.memory_data import build_examples
from ewe.training.memory_reader import Batch, MemoryTrainConfig, Student, covered_chars, memory_of, train_memory_adapter
from tiny import tiny_model, tiny_tokenizer

M = 96


def small_config(**kw) -> MemoryTrainConfig:
    base = dict(model="tiny", examples=4, held_out=2, batch_size=2, rank=4, alpha=8.0, unit_tokens=M,
                max_answer_tokens=12, threads=1, checkpoint_every=1, save_dtype="float32", units=[1, 2])
    base.update(kw)
    return MemoryTrainConfig(**base)


def save_base(folder, seed=0):
    model = tiny_model(seed)
    model.save_pretrained(folder)
    tiny_tokenizer().save_pretrained(folder)
    return folder


def train(out, base_folder, cfg, **kw):
    from transformers import AutoModelForCausalLM

    from ewe.modeling import patch_model

    model = AutoModelForCausalLM.from_pretrained(base_folder, dtype=torch.float32)
    patch_model(model)
    return train_memory_adapter(out, cfg, progress=False, model=model, tokenizer=tiny_tokenizer(),
                                base_folder=base_folder, **kw)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    root = tmp_path_factory.mktemp("adapter")
    base = save_base(root / "base")
    manifest = train(root / "adapter", base, small_config())
    return base, root / "adapter", manifest


def test_examples_are_built_from_the_train_split_only():
    chars = covered_chars(tiny_tokenizer(), small_config())
    rows = build_examples(60, 3, "train", chars, units=(1, 2, 3), no_answer=0.2)
    assert rows == build_examples(60, 3, "train", chars, units=(1, 2, 3), no_answer=0.2)  # seeded
    title_of = {wiki.passage(t): t for t in wiki.summaries()}
    for r in rows:
        assert split_of(r.title) == "train"
        assert all(split_of(title_of[p]) == "train" for p in r.passages)  # the distractors too
        own = wiki.passage(r.title)
        if r.source is None:  # memory of distractors only: the answer's passage is not there
            assert own not in r.passages
        else:
            assert r.passages[r.source] == own
            # the answer lies in the part of the passage one unit holds
            assert own.index(r.answer) + len(r.answer) <= chars(own)
    assert any(r.source is None for r in rows) and any(len(r.passages) > 1 for r in rows)
    held = build_examples(10, 0, "dev", chars)
    assert all(split_of(r.title) == "dev" for r in held)
    with pytest.raises(ValueError, match="test split"):
        build_examples(10, 0, "test", chars)


def test_training_resumes_to_the_same_weights(tmp_path):
    base = save_base(tmp_path / "base")
    whole = train(tmp_path / "whole", base, small_config())

    class Stop(Exception):
        pass

    def stop_after_first(step):
        if step == 1:
            raise Stop

    with pytest.raises(Stop):
        train(tmp_path / "resumed", base, small_config(), on_step=stop_after_first)
    assert json.loads((tmp_path / "resumed" / "checkpoint.json").read_text())["step"] == 1
    resumed = train(tmp_path / "resumed", base, small_config())
    a = load_file(str(tmp_path / "whole" / "adapter_model.safetensors"))
    b = load_file(str(tmp_path / "resumed" / "adapter_model.safetensors"))
    assert a.keys() == b.keys() and len(a) > 0
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert whole["held_out_after"] == resumed["held_out_after"]
    # training moved the adapter (peft starts B at zero, so an untrained LoRA is a no-op)
    assert any(v.abs().sum() > 0 for k, v in a.items() if "lora_B" in k)


def test_manifest_names_the_base_and_the_layout(trained):
    base, folder, manifest = trained
    assert manifest["scope"] == "units" and manifest["unit_tokens"] == M and manifest["start_token"] is True
    assert len(manifest["base"]["weights_sha256"]) == 64
    assert manifest["steps"] == 2 and manifest["held_out_before"]["all"]["n"] == 2
    assert MemoryAdapter.open(folder).scope == "units"


def ewe_on(base, adapter, **over):
    cfg = {"model": {"name": str(base), "memory_adapter": str(adapter) if adapter else "none"},
           "memory": {"unit_tokens": M}, "retrieval": {"source": None}, **over}
    return EWE.from_config(cfg)


PASSAGES = ["Marie Curie was a Polish and naturalised-French physicist and chemist.",
            "The Eiffel Tower is in Paris."]


def test_with_no_unit_in_memory_the_adapted_model_is_the_base_model(trained):
    base, folder, _ = trained
    plain, adapted = ewe_on(base, None), ewe_on(base, folder)
    assert adapted.runtime.memory_adapter is not None and plain.runtime.memory_adapter is None
    for p, q in zip(plain.runtime.model.parameters(), adapted.runtime.model.parameters()):
        assert torch.equal(p, q)  # decoding runs the base weights
    a = plain.generate("Tell me a bio of Marie Curie.", passages=[], max_new_tokens=12)
    b = adapted.generate("Tell me a bio of Marie Curie.", passages=[], max_new_tokens=12)
    assert a.token_ids == b.token_ids
    # with units in memory the adapted encoder is what differs
    x = plain.generate("Tell me a bio of Marie Curie.", passages=PASSAGES, max_new_tokens=12)
    y = adapted.generate("Tell me a bio of Marie Curie.", passages=PASSAGES, max_new_tokens=12)
    assert plain.runtime.unit_model is plain.runtime.model
    assert adapted.runtime.unit_model is not adapted.runtime.model
    assert x.logprobs != y.logprobs


def test_the_merged_adapter_encodes_units_as_training_did(trained):
    """Fast path (LoRA merged into a copy's weights) against the training forward (peft's LoRA
    layers on the base weights)."""
    from transformers import AutoModelForCausalLM

    base, folder, _ = trained
    cfg = small_config()
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32).eval()
    student = Student(model, tiny_tokenizer(), cfg)
    student.load_adapter_state(load_file(str(folder / "adapter_model.safetensors")))
    batch = Batch(build_examples(1, 5, "train", covered_chars(tiny_tokenizer(), cfg), units=(2,))[0], tiny_tokenizer(), cfg)
    with torch.no_grad():
        want = memory_of(student.lm, batch.units, cfg, tiny_tokenizer().pad_token_id)
        merged = ewe_on(base, folder).runtime.unit_model
        have = memory_of(merged, batch.units, cfg, tiny_tokenizer().pad_token_id)
        with student.peft.disable_adapter():
            plain = memory_of(student.lm, batch.units, cfg, tiny_tokenizer().pad_token_id)
    for w, h, p in zip(want.layers, have.layers, plain.layers):
        torch.testing.assert_close(h.key, w.key, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(h.value, w.value, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(want.layers[-1].value, plain.layers[-1].value)


def test_an_adapter_is_refused_for_another_base_or_unit_layout(trained, tmp_path):
    base, folder, _ = trained
    other = save_base(tmp_path / "other", seed=1)
    with pytest.raises(AdapterError, match="another base model"):
        _ = ewe_on(other, folder).runtime.model
    with pytest.raises(AdapterError, match="M=96"):
        _ = EWE.from_config({"model": {"name": str(base), "memory_adapter": str(folder)},
                             "memory": {"unit_tokens": 32}, "retrieval": {"source": None}}).runtime.model
    with pytest.raises(AdapterError, match="manifest.json is missing"):
        _ = ewe_on(base, tmp_path).runtime.model


def test_auto_means_no_adapter_for_a_model_other_than_the_embedded_one(trained):
    base, _, _ = trained
    e = EWE.from_config({"model": {"name": str(base)}, "memory": {"unit_tokens": M}, "retrieval": {"source": None}})
    assert e.runtime.memory_adapter is None


def test_bad_training_settings_are_named():
    with pytest.raises(ValueError, match="batch_size=0"):
        small_config(batch_size=0).validate()
    with pytest.raises(ValueError, match="scope="):
        small_config(scope="everywhere").validate()
