"""The patched model end to end on a tiny random Llama: eq. 1 in every layer, caching, backtracking."""
import pytest
import torch

from ewe.engine import DecodingSession, Sampler, decode
from ewe.memory import UnitEncoder, WorkingMemory
from ewe.ops import MemoryState
from ewe.modeling import patch_model
from tiny import left_padded, tiny_model, tiny_tokenizer

M = 24
PASSAGES = ["Marie Curie was a Polish physicist.", "The Eiffel Tower is in Paris.", "Albert Einstein was German."]


def prompt_ids(text="Tell me a bio of Marie Curie."):
    tok = tiny_tokenizer()
    return torch.tensor([tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True)["input_ids"]])


@pytest.fixture(scope="module")
def model():
    m = tiny_model()
    patch_model(m)
    return m


@pytest.fixture(scope="module")
def state(model):
    memory = WorkingMemory(UnitEncoder(model, tiny_tokenizer(), M), retrieval_units=3, feedback_units=0)
    memory.add(PASSAGES)
    return memory.state()


def run(model, state, impl, ids, steps=6):
    """Prefill, then greedy-decode `steps` tokens; return every step's logits [steps+1, V]."""
    session = DecodingSession(model, state, M, impl)
    logits = [session.prefill(ids)]
    for _ in range(steps):
        logits.append(session.step(logits[-1].argmax(-1)))
    return torch.cat(logits), session


def test_fused_model_matches_reference_model(model, state):
    ref, _ = run(model, state, "reference", prompt_ids())
    fused, _ = run(model, state, "fused", prompt_ids())
    torch.testing.assert_close(fused, ref, atol=1e-4, rtol=1e-4)


def test_memory_changes_logits(model, state):
    with_mem, _ = run(model, state, "fused", prompt_ids())
    without, _ = run(model, None, "fused", prompt_ids())
    assert (with_mem[0] - without[0]).abs().max() > 1e-2


def test_incremental_decoding_equals_full_prefill(model, state):
    """The cache path (decode one token at a time) gives the logits of a fresh prefill of the same tokens."""
    _, session = run(model, state, "fused", prompt_ids(), steps=5)
    tokens = session.tokens.clone()
    last_step = session.step(torch.tensor([7]))
    fresh = DecodingSession(model, state, M, "fused").prefill(torch.cat([tokens, torch.tensor([[7]])], dim=1))
    torch.testing.assert_close(last_step, fresh, atol=1e-4, rtol=1e-4)


def test_truncate_then_decode_equals_fresh_run(model, state):
    _, session = run(model, state, "fused", prompt_ids(), steps=8)
    keep = prompt_ids().shape[1] + 3
    prefix = session.tokens[:, :keep].clone()
    after = session.truncate(keep)
    assert session.length == keep and session.cache.get_seq_length() == keep
    fresh_session = DecodingSession(model, state, M, "fused")
    fresh = fresh_session.prefill(prefix)
    torch.testing.assert_close(after, fresh, atol=1e-5, rtol=1e-5)
    # and decoding on from there stays identical
    a = session.step(torch.tensor([5]))
    b = fresh_session.step(torch.tensor([5]))
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="truncate length"):
        session.truncate(0)


def test_branch_rows_equal_a_fresh_prefill_each_and_leave_the_source_untouched(model, state):
    """Candidates branch from the cropped cache: each row decodes as a fresh run of the kept text would."""
    _, session = run(model, state, "fused", prompt_ids(), steps=8)
    before = (session.tokens.clone(), session.cache.get_seq_length())
    keep = prompt_ids().shape[1] + 3
    rows_state = MemoryState.from_rows([[*state_units(model)]] * 3)
    branch, logits = session.branch(keep, 3, rows_state)
    assert logits.shape[0] == 3 and branch.length == keep and branch.cache.get_seq_length() == keep
    fresh_session = DecodingSession(model, state, M, "fused")
    fresh = fresh_session.prefill(session.tokens[:, :keep])
    for row in range(3):
        torch.testing.assert_close(logits[row : row + 1], fresh, atol=1e-5, rtol=1e-5)
    nxt = torch.tensor([5, 9, 11])  # each row its own token
    stepped = branch.step(nxt)
    for row, tok in enumerate(nxt.tolist()):
        one = DecodingSession(model, state, M, "fused")
        one.prefill(session.tokens[:, :keep])
        torch.testing.assert_close(stepped[row : row + 1], one.step(torch.tensor([tok])), atol=1e-5, rtol=1e-5)
    assert torch.equal(session.tokens, before[0]) and session.cache.get_seq_length() == before[1]
    with pytest.raises(ValueError, match="branch length"):
        session.branch(0, 2)


def test_a_prompt_read_with_its_shared_beginning_from_the_cache_equals_reading_it_all(model, state, monkeypatch):
    """Candidates that re-read the prompt with passages in it take the beginning it shares with the
    answer's context from the answer's cache: the same logits and cache as reading it all anew."""
    _, session = run(model, state, "fused", prompt_ids(), steps=8)
    read = []  # tokens each forward pass reads
    forward = DecodingSession._forward
    monkeypatch.setattr(DecodingSession, "_forward", lambda self, ids, pos: read.append(ids.shape[1]) or
                        forward(self, ids, pos))
    context = session.tokens[0].tolist()
    before = (session.tokens.clone(), session.cache.get_seq_length())
    cases = {"diverges inside": context[:10] + [7, 8, 9] + context[10:14],
             "the context and more": context + [3, 4],
             "the same text": context,
             "nothing in common": [context[0] + 1] + context[1:6]}
    shared = {"diverges inside": 10, "the context and more": len(context), "the same text": len(context) - 1,
              "nothing in common": 0}
    for name, ids in cases.items():
        read.clear()
        reused, logits = session.read(ids, state, reuse=True)
        assert read == [len(ids) - shared[name]], name  # only what the context does not hold (at least one token)
        fresh, expected = session.read(ids, state)
        torch.testing.assert_close(logits, expected, atol=1e-5, rtol=1e-5, msg=name)
        assert reused.tokens[0].tolist() == ids and reused.cache.get_seq_length() == len(ids), name
        for a, b in zip(reused.cache.layers, fresh.cache.layers):
            torch.testing.assert_close(a.keys, b.keys, atol=1e-5, rtol=1e-5, msg=name)
        step = torch.tensor([5])
        torch.testing.assert_close(reused.step(step), fresh.step(step), atol=1e-5, rtol=1e-5, msg=name)
    assert torch.equal(session.tokens, before[0]) and session.cache.get_seq_length() == before[1]  # untouched


def state_units(model):
    memory = WorkingMemory(UnitEncoder(model, tiny_tokenizer(), M), retrieval_units=3, feedback_units=0)
    memory.add(PASSAGES)
    return memory.units


def test_memory_refresh_keeps_context_cache(model, state):
    """The paper's behaviour: new memory affects the tokens after the refresh, without re-encoding the context."""
    _, session = run(model, None, "fused", prompt_ids(), steps=3)
    session.position_offset = M
    calls, length = session.forward_calls, session.length
    assert session.set_memory(state) is None
    assert session.forward_calls == calls and session.length == length
    cache_k = session.cache.layers[0].keys.clone()
    with_new = session.step(torch.tensor([5]))
    torch.testing.assert_close(session.cache.layers[0].keys[:, :, :length], cache_k)
    # a session that never had the memory gives other logits for the same token
    _, plain = run(model, None, "fused", prompt_ids(), steps=3)
    plain.position_offset = M
    assert (plain.step(torch.tensor([5])) - with_new).abs().max() > 1e-3


def test_memory_refresh_with_reencode_equals_fresh_prefill(model, state):
    _, session = run(model, None, "fused", prompt_ids(), steps=3)
    session.position_offset = M
    tokens = session.tokens.clone()
    relogits = session.set_memory(state, reencode=True)
    fresh = DecodingSession(model, state, M, "fused").prefill(tokens)
    torch.testing.assert_close(relogits, fresh, atol=1e-5, rtol=1e-5)


def test_no_memory_is_token_identical_to_unpatched_generate():
    """k = 0: ewe's loop over the patched model generates exactly what HF generate does unpatched."""
    plain = tiny_model(seed=0)
    ids = prompt_ids("Tell me a bio of Albert Einstein.")
    expected = plain.generate(ids, max_new_tokens=20, do_sample=False, min_new_tokens=20)[0, ids.shape[1] :].tolist()
    patched = tiny_model(seed=0)
    patch_model(patched)
    session = DecodingSession(patched, None, 0)
    out = decode(session, ids, None, Sampler(), 20, stop_ids=set())[0]
    assert out.token_ids == expected
    assert len(set(expected)) > 3  # a sequence with some variety, not one token repeated


def test_batch_with_left_padding_matches_single_rows(model, state):
    """Rows of different lengths and memories, decoded as one batch, give each row's own logits."""
    tok = tiny_tokenizer()
    enc = UnitEncoder(model, tok, M)
    units = enc.encode(PASSAGES)
    rows = [[units[0], units[1]], [units[2]]]
    a, b = prompt_ids("Tell me a bio of Marie Curie, the physicist."), prompt_ids("Paris?")
    ids, valid = left_padded([a, b], tok.pad_token_id)
    batch = DecodingSession(model, MemoryState.from_rows(rows), M, "fused")
    logits = [batch.prefill(ids, valid)]
    logits.append(batch.step(torch.tensor([5, 9])))
    for r, x in enumerate((a, b)):
        single = DecodingSession(model, MemoryState.from_rows([rows[r]]), M, "fused")
        torch.testing.assert_close(logits[0][r], single.prefill(x)[0], atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(logits[1][r], single.step(torch.tensor([[5, 9][r]]))[0], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_bf16_model_runs_and_tracks_fp32(dtype, state):
    m32 = tiny_model(seed=0)
    patch_model(m32)
    m16 = tiny_model(seed=0, dtype=dtype)
    patch_model(m16)
    enc = UnitEncoder(m16, tiny_tokenizer(), M)
    memory = WorkingMemory(enc, 3, 0)
    memory.add(PASSAGES)
    l16, _ = run(m16, memory.state(), "fused", prompt_ids(), steps=2)
    l16_ref, _ = run(m16, memory.state(), "reference", prompt_ids(), steps=2)
    assert l16.dtype == dtype
    torch.testing.assert_close(l16.float(), l16_ref.float(), atol=0.15, rtol=0.05)


def test_sampler():
    logits = torch.tensor([[0.0, 5.0, 1.0], [3.0, 0.0, 0.0]])
    ids, lp, ent = Sampler()(logits)
    assert ids.tolist() == [1, 0]
    torch.testing.assert_close(lp, torch.log_softmax(logits, -1)[[0, 1], [1, 0]])
    assert (ent > 0).all()
    # top_p small keeps only the top token, whatever the temperature
    ids, _, _ = Sampler(temperature=5.0, top_p=0.01, seed=0)(logits)
    assert ids.tolist() == [1, 0]
    a = [Sampler(1.0, 1.0, seed=7)(logits.repeat(50, 1))[0].tolist() for _ in range(2)]
    assert a[0] == a[1] and len(set(a[0])) > 1


def test_entropy_of_banned_tokens_is_that_of_the_rest_not_nan():
    """A token the controller bans after a dropped sentence has logit -inf: 0 * log 0 counts as 0.
    A NaN there reached the sentence records (mean_entropy) and never compares equal to itself, so
    two identical runs of ewe-rewrite / ewe-text (now ewe.yaml) looked different to tests/golden.py."""
    logits = torch.tensor([[0.0, 5.0, 1.0, 2.0], [3.0, 0.0, 0.0, 1.0]])
    banned = logits.clone()
    banned[:, 3] = float("-inf")
    for sampler in (Sampler(), Sampler(0.8, 1.0, seed=2, greedy_rows=1)):
        _, _, ent = sampler(banned)
        _, _, expected = Sampler()(logits[:, :3])
        torch.testing.assert_close(ent, expected)
    _, _, plain = Sampler()(logits)
    assert torch.equal(plain, -(torch.log_softmax(logits, -1).exp() * torch.log_softmax(logits, -1)).sum(-1))


def _nucleus_by_full_sort(probs: torch.Tensor, top_p: float) -> torch.Tensor:
    """The nucleus as the top-p paper defines it: sort the whole vocabulary, keep the smallest
    prefix whose mass reaches top_p, renormalise."""
    sorted_p, order = probs.sort(dim=-1, descending=True)
    drop = sorted_p.cumsum(-1) - sorted_p >= top_p
    drop[..., 0] = False
    kept = torch.zeros_like(probs).scatter(-1, order, sorted_p.masked_fill(drop, 0.0))
    return kept / kept.sum(-1, keepdim=True)


@pytest.mark.parametrize("top_p", [0.01, 0.5, 0.9, 0.999])
def test_nucleus_prefilter_equals_the_full_sort(top_p):
    """The top-k shortcut gives the full sort's nucleus, whether it fits in the top k (peaked
    rows) or not (flat rows, which fall back to the sort), rows of both kinds in one batch."""
    g = torch.Generator().manual_seed(0)
    vocab = 5 * Sampler.PREFILTER
    logits = torch.randn(6, vocab, generator=g, dtype=torch.float64)
    logits[:3] *= 12.0  # peaked: the nucleus is a few tokens
    logits[3:] *= 0.05  # nearly flat: the top k hold ~20% of the mass
    for rows in (slice(0, 3), slice(3, 6), slice(0, 6)):
        probs = torch.softmax(logits[rows], dim=-1)
        got = Sampler(1.0, top_p)._nucleus(probs)
        torch.testing.assert_close(got, _nucleus_by_full_sort(probs, top_p), rtol=0, atol=1e-15)


def test_session_crop_keeps_a_prefix_without_running_the_model():
    from tiny import tiny_ewe

    ewe = tiny_ewe()  # a real (random) model: the logits depend on the cache

    ids = torch.tensor([tiny_tokenizer()("Marie Curie was a physicist. She was born in Paris.", add_special_tokens=False)["input_ids"]])
    s = DecodingSession(ewe.model)
    s.prefill(ids)
    calls = s.forward_calls
    s.crop(5)
    assert s.length == 5 and s.cache.get_seq_length() == 5 and s.forward_calls == calls
    logits = s.extend(ids[:, 5:])
    fresh = DecodingSession(ewe.model)
    assert torch.allclose(logits, fresh.prefill(ids), atol=1e-5)
    with pytest.raises(ValueError, match="crop length"):
        s.crop(s.length + 1)


def test_rows_leaving_a_batch_decode_what_the_rectangular_batch_decodes(model):
    """The loop drops a stopped row from the batch (cache, positions, left padding, its memory):
    every row writes the tokens, and gets the log-probs, that the reference, where stopped rows
    stay in the batch fed a stop token, gives it. Rows of different lengths and memories."""
    from ewe.engine import Hook, Stop, TokenLoop

    tok = tiny_tokenizer()
    units = UnitEncoder(model, tok, M).encode(PASSAGES)
    rows = [[units[0], units[1]], [units[2]], [], [units[1]]]
    prompts = [prompt_ids(t) for t in ("Tell me a bio of Marie Curie, the physicist.", "Paris?", "Hi.", "Who?")]
    width = max(p.shape[1] for p in prompts)
    ids = torch.full((len(prompts), width), tok.pad_token_id)
    valid = torch.zeros(len(prompts), width, dtype=torch.long)
    for r, x in enumerate(prompts):
        ids[r, width - x.shape[1]:] = x[0]
        valid[r, width - x.shape[1]:] = 1

    class StopAfter(Hook):  # row r stops after lengths[r] tokens, as a candidate stops at its sentence's end
        def on_token(self, loop, row, token, completed):
            return Stop("enough") if len(loop.records[row].tokens) >= (3, 9, 5, 12)[row] else None

    def generate(compact):
        session = DecodingSession(model, MemoryState.from_rows(rows), M, "fused")
        loop = TokenLoop(session, Sampler(0.8, seed=3, greedy_rows=1), set(), 12, hooks=[StopAfter()], compact=compact)
        return loop.run(ids, valid), session

    (compacted, session), (reference, _) = generate(True), generate(False)
    assert [len(c.token_ids) for c in compacted] == [3, 9, 5, 12]
    assert session.tokens.shape[0] == 1  # only the longest row was left at the end
    for c, r in zip(compacted, reference):
        assert c.token_ids == r.token_ids
        torch.testing.assert_close(torch.tensor(c.logprobs), torch.tensor(r.logprobs), atol=1e-4, rtol=1e-4)
