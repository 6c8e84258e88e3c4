"""`ewe bench e2e` on CPU: the tiny layout end to end through the CLI (every run, equal counts, the
loop's refreshes, checks and backtracks, no id beyond the tokenizer's), its failure when the loop did
no work, and Llama-3.1-8B's configuration built on the meta device (no weights)."""
from __future__ import annotations

import json

import pytest
import torch
from tiny import tiny_tokenizer

from ewe import cli
from ewe.bench import e2e

TOKENS = 24


@pytest.fixture(scope="module")
def tokenizer_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("tok")
    tiny_tokenizer().save_pretrained(path)
    return str(path)


def run(tokenizer_dir, tmp_path, *extra):
    out = tmp_path / "e2e.json"
    code = cli.main(["bench", "e2e", "--layout", "tiny", "--device", "cpu", "--dtype", "float32", "--tokenizer",
                     tokenizer_dir, "--tokens", str(TOKENS), "--units", "2", "--repeats", "1", "--json", str(out),
                     *extra])
    return code, (json.loads(out.read_text()) if out.exists() else None)


def test_tiny_layout_end_to_end(tokenizer_dir, tmp_path, capsys):
    code, r = run(tokenizer_dir, tmp_path, "--kv-caches", "dynamic", "static")
    out = capsys.readouterr().out
    assert code == 0 and r["problems"] == []
    assert set(r["runs"]) == {"hf_generate", "ewe_k0", "ewe_k2", "ewe_k0_static", "ewe_k2_static"}
    for x in r["runs"].values():
        assert x["tokens"] == [TOKENS] and x["tok_s"] > 0 and x["of_limit"] > 0
    assert r["runs"]["ewe_k0"]["same_tokens_as"] == {"hf_generate": True}
    assert r["runs"]["ewe_k2_static"]["same_tokens_as"] == {"ewe_k2": True}
    assert set(r["loop"]) == {"ewe_loop_k2", "ewe_loop_k2_static"}
    for x in r["loop"].values():
        c = x["counts"]
        assert c["refreshes"] > 0 and c["checks"] > 0 and c["rejected"] > 0 and c["backtracks"] > 0
        assert c["candidates_decoded"] > 0 and x["new_tokens"] == TOKENS and x["decode_tok_s"] > 0
    # the head computes the layout's vocabulary, twice the tokenizer's; no id beyond it is ever written
    assert r["model"]["vocab"] > r["tokenizer"]["ids"] == len(tiny_tokenizer())
    assert r["max_token_id"] < r["tokenizer"]["ids"]
    assert r["streaming_limit_tok_s"] > 0 and r["copy_gbps"] > 0
    assert r["model"]["bytes_read_per_step"] < r["model"]["parameter_bytes"]  # untied: one embedding row read
    assert "masked (-inf)" in out and "ewe_loop_k2_static" in out


def test_a_loop_that_never_backtracks_fails_the_command(tokenizer_dir, tmp_path, capsys):
    """A checker that never rejects: no backtrack, so no figure is taken as the loop's."""
    code, r = run(tokenizer_dir, tmp_path, "--kv-caches", "dynamic", "--reject-every", "100000")
    assert code == 1
    assert r["loop"]["ewe_loop_k2"]["counts"]["backtracks"] == 0
    assert "did no backtracks" in capsys.readouterr().err


def test_scripted_checker_rejects_every_nth_check():
    checker = e2e.ScriptedChecker(["Albert Einstein was a physicist."], every=3)
    verdicts = [checker.check_sentence(f"Sentence {i}.").needs_rewrite for i in range(1, 10)]
    assert verdicts == [False, False, True] * 3


def test_head_masks_ids_beyond_the_tokenizer_and_writes_sentences_only_when_on():
    model = torch.nn.Module()
    head = torch.nn.Linear(4, 10, bias=False)
    model.get_output_embeddings = lambda: head
    hook = e2e.ScriptedHead(model, vocab=6, end=1, start=2, every=3)
    with torch.no_grad():
        head.weight.copy_(torch.arange(10.0)[:, None].expand(10, 4))  # logit of id i: 4 i
        x = torch.ones(1, 1, 4)
        off = [int(head(x).argmax()) for _ in range(3)]
        hook.writing(True)
        on = [int(head(x).argmax()) for _ in range(3)]  # forwards 4, 5, 6: phases 1, 2, 0
    hook.remove()
    assert off == [5, 5, 5]  # the best id the tokenizer has
    assert on == [2, 5, 1]


def test_llama31_8b_configuration_is_exact():
    from transformers import AutoModelForCausalLM

    tok = tiny_tokenizer()
    c = e2e.layout_config("llama3.1-8b", tok)
    assert (c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.num_attention_heads, c.num_key_value_heads,
            c.head_dim, c.vocab_size, c.max_position_embeddings, c.rms_norm_eps) == \
        (4096, 14336, 32, 32, 8, 128, 128256, 131072, 1e-5)
    assert not c.tie_word_embeddings
    rope = getattr(c, "rope_parameters", None) or {**c.rope_scaling, "rope_theta": c.rope_theta}
    assert rope == {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                    "original_max_position_embeddings": 8192, "rope_theta": 500000.0}
    assert c.eos_token_id == tok.eos_token_id  # the tokenizer's ids, so generation stops where it says
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(c, dtype=torch.bfloat16)
    n = sum(p.numel() for p in model.parameters())
    assert n == 8_030_261_248
    total, per_step = e2e.weight_bytes(model)
    assert total == 2 * n and per_step == total - 2 * 128256 * 4096 + 2 * 4096


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message given where there is no GPU")
def test_cuda_without_a_gpu_is_a_clear_error(tokenizer_dir):
    with pytest.raises(SystemExit, match="no CUDA device"):
        cli.main(["bench", "e2e", "--layout", "tiny", "--device", "cuda", "--tokenizer", tokenizer_dir])
