"""Eq. 1 through flash-attention 4 (ewe/ops/flash.py) against the literal reference.

On CPU: the composition (two segment states, the log(k + 1) shift, the merge, the layouts and
each row's used memory keys) runs with `torch_state`, a PyTorch segment kernel with
flash-attention's contract, and must equal eq. 1. On a GPU with flash-attn-4 installed:
flash-attention's segments must equal `torch_state`'s, and the whole path eq. 1, also inside a
CUDA graph and through `auto`.
"""
import pytest
import torch

from attention_cases import assert_close, random_case
from ewe.ops import LayerMemory, dispatch, flash, memory_attention_reference
from ewe.ops.flash import memory_attention_states, torch_state
from ewe.ops.masks import prefix_mask



def flash_case(seed, dtype=torch.float32, decode=False, device="cpu", head_dims=(8, 16, 24)):
    """A random eq. 1 call with some memory (an empty one never reaches a kernel: ewe_attention_forward runs SDPA)."""
    return random_case(seed, dtype, decode, device, groups=(1, 2, 4), head_dims=head_dims, max_ctx=40, max_units=6,
                       some_memory=True)


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("decode", [False, True])
def test_composition_matches_reference(seed, decode):
    query, key, value, memory, scale = flash_case(seed, decode=decode)
    expected = memory_attention_reference(query, key, value, memory, None, scale)
    assert_close(memory_attention_states(query, key, value, memory, scale, torch_state), expected, torch.float32)


@pytest.mark.parametrize("seed", range(10))
def test_composition_matches_reference_bf16(seed):
    query, key, value, memory, scale = flash_case(seed, dtype=torch.bfloat16)
    actual = memory_attention_states(query, key, value, memory, scale, torch_state)
    assert actual.dtype == torch.bfloat16 and actual.shape == (query.shape[0], query.shape[2], query.shape[1], query.shape[3])
    assert_close(actual, memory_attention_reference(query, key, value, memory, None, scale), torch.bfloat16)


def test_composition_reads_only_each_rows_used_memory_keys():
    """A padded row's unused memory keys may hold anything finite: they must not count."""
    query, key, value, memory, scale = flash_case(3, decode=True)
    lengths = flash.memory_lengths(memory)
    assert lengths.tolist() == [b[-1][1] if b else 0 for b in memory.unit_bounds]
    noisy_key, noisy_value = memory.key.clone(), memory.value.clone()
    for row, n in enumerate(lengths.tolist()):
        noisy_key[row, :, n:] = 1e4
        noisy_value[row, :, n:] = -1e4
    noisy = LayerMemory(noisy_key, noisy_value, memory.bias, memory.unit_bounds, memory.log_ctx_weight)
    expected = memory_attention_reference(query, key, value, memory, None, scale)
    assert_close(memory_attention_states(query, key, value, noisy, scale, torch_state), expected, torch.float32)


def _naive_state(q, k, v, scale, causal, seqused_k):
    """flash-attention's contract, one row and one head at a time."""
    B, Q, Hq, D = q.shape
    group = Hq // k.shape[2]
    out, lse = torch.zeros(B, Q, Hq, D), torch.full((B, Hq, Q), float("-inf"))
    for b in range(B):
        n = k.shape[1] if seqused_k is None else int(seqused_k[b])
        for h in range(Hq):
            for i in range(Q):
                last = n - Q + i if causal else n - 1
                if last < 0:
                    continue
                s = (k[b, : last + 1, h // group] @ q[b, i, h]) * scale
                lse[b, h, i] = torch.logsumexp(s, 0)
                out[b, i, h] = torch.softmax(s, 0) @ v[b, : last + 1, h // group]
    return out, lse


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("used", [None, [5, 0, 9]])
def test_torch_state_keeps_flash_attentions_contract(causal, used):
    """Bottom-right causal alignment over each row's used keys, lse -inf and output 0 for a row with none."""
    gen = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 4, 6, 8, generator=gen), torch.randn(3, 9, 2, 8, generator=gen), torch.randn(3, 9, 2, 8,
                                                                                                        generator=gen)
    seqused = None if used is None else torch.tensor(used, dtype=torch.int32)
    if causal and used is not None:
        seqused[1] = 4  # causal needs at least Q used keys in each row to give every query one
    out, lse = torch_state(q, k, v, 0.3, causal, seqused)
    want_out, want_lse = _naive_state(q, k, v, 0.3, causal, seqused)
    torch.testing.assert_close(out, want_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lse, want_lse, atol=1e-5, rtol=1e-5)


def test_flash_is_never_chosen_where_it_cannot_run():
    query, key, value, memory, scale = flash_case(1)
    assert not flash.supports(query, key, value, memory, None)  # CPU
    mask = torch.ones(1, 1, query.shape[2], key.shape[2], dtype=torch.bool)
    assert not flash.supports(query, key, value, memory, mask)
    with pytest.raises(ValueError, match="ctx_mask must be None"):
        flash.memory_attention_flash(query, key, value, memory, mask, scale)


@pytest.mark.parametrize("field", ["temperature", "lse_scale"])
def test_flash_refuses_apes_read_out_which_it_does_not_compute(field):
    """Forced `attention_impl: flash` with APE's temperature or lse scale is an error, not plain eq. 1."""
    import dataclasses

    query, key, value, memory, scale = flash_case(2)
    ape = dataclasses.replace(memory, **{field: 0.5})
    assert not flash.supports(query, key, value, ape, None)
    with pytest.raises(ValueError, match="eq. 1 only, not APE's read-out"):
        memory_attention_states(query, key, value, ape, scale, torch_state)


def test_auto_prefers_flash_for_prefill_and_for_decode_of_many_rows_only():
    """Without split-KV on Hopper, a decode of few rows would leave most of the GPU idle."""
    key = torch.empty(1, 8, 10, 4)
    assert flash.preferred(torch.empty(1, 32, 2, 4), key)  # prefill
    assert not flash.preferred(torch.empty(1, 32, 1, 4), key)  # decode, one row: 8 blocks
    blocks_rows = flash.MIN_DECODE_BLOCKS // 8
    assert flash.preferred(torch.empty(blocks_rows, 32, 1, 4), key.expand(blocks_rows, -1, -1, -1))


@pytest.mark.skipif(flash.available(), reason="flash-attention 4 is installed here")
def test_forcing_flash_where_it_is_missing_is_a_clear_error():
    with pytest.raises(RuntimeError, match="impl='flash': flash-attention 4 is not available .*flash-attn-4"):
        dispatch.select("flash")


def test_auto_on_cpu_never_counts_flash():
    query, key, value, memory, scale = flash_case(2)
    before = dispatch.used["flash"]
    fn = dispatch.select("auto")
    dispatch.run(fn, query, key, value, memory, None, scale)
    assert dispatch.used["flash"] == before


@pytest.fixture
def flash_on_cpu(monkeypatch):
    """flash-attention's entry point stood in by `torch_state` (its contract), so that the path from a
    model to flash-attention (the kwargs, the lengths beside a mask, dispatch) runs here."""
    def kernel(q, k, v, seqused_k=None, softmax_scale=None, causal=False, return_lse=True):
        assert return_lse and seqused_k is None or seqused_k.dtype == torch.int32
        return torch_state(q, k, v, softmax_scale, causal, seqused_k)

    monkeypatch.setitem(flash._state, "fn", kernel)
    monkeypatch.setitem(flash._state, "error", None)


@pytest.mark.parametrize("seed", range(8))
def test_a_prefix_mask_given_as_lengths_matches_the_reference(seed, flash_on_cpu):
    """Rows of lengths of their own (the slot cache's decode): the mask is not read, the lengths are."""
    query, key, value, memory, scale = flash_case(seed, decode=True)
    B, L = query.shape[0], key.shape[2]
    lengths = torch.randint(1, L + 1, (B,), generator=torch.Generator().manual_seed(seed), dtype=torch.int32)
    mask = prefix_mask(lengths, L)
    assert mask.shape == (B, 1, 1, L) and mask.sum(-1).flatten().tolist() == lengths.tolist()
    key = key.masked_fill(~mask.transpose(-1, -2), 1e4)  # what a row does not attend to may hold anything
    expected = memory_attention_reference(query, key, value, memory, mask, scale)
    assert_close(flash.memory_attention_flash(query, key, value, memory, mask, scale, lengths), expected,
                 torch.float32)
    with pytest.raises(ValueError, match="ctx_lengths must be int32 of shape"):
        flash.memory_attention_flash(query, key, value, memory, mask, scale, lengths.long())


def test_a_continuous_batch_decodes_on_flash_as_each_row_alone(flash_on_cpu):
    """The slot cache's rows, of different lengths and out of slot order, through flash-attention's entry point
    (stood in): each row's logits are those it has decoded alone on the default kernels."""
    from test_slots import _join, _setup, _step

    from ewe.engine.slots import SlotSession

    ewe, ids, template, states = _setup()
    slots = SlotSession(template, 3)
    slots.attention_impl = "flash"
    rows = [_join(slots, template, ids[i], states[i])[0] for i in range(3)]
    assert len({slots.lengths[s] for s in slots.order}) > 1  # a mask, and lengths beside it
    before = dispatch.used["flash"]
    for t in range(3):
        _step(slots, rows, [7 + t, 11 + 2 * t, 13])
    assert dispatch.used["flash"] > before
    slots.select_rows([0, 2])  # a row leaves and another joins its slot: the rows are no longer in slot order
    rows = [rows[0], rows[2]] + [_join(slots, template, ids[3], states[3])[0]]
    assert slots.order != sorted(slots.order)
    for t in range(3):
        _step(slots, rows, [5 + t, 6, 8 + t])


def test_a_static_cache_fixed_shape_step_decodes_on_flash_as_the_dynamic_cache(flash_on_cpu):
    """The graph step reads the whole preallocated buffer under a mask; without left padding the mask is each
    row's first index + 1 positions and flash-attention takes those lengths. With left padding it is no prefix:
    forcing flash there is a clear error (auto runs the extension or the fused path)."""
    from test_static_cache import M, PASSAGES, greedy, prompt_ids, sessions
    from tiny import left_padded, tiny_model, tiny_tokenizer

    from ewe.memory import UnitEncoder
    from ewe.ops import MemoryState
    from ewe.modeling import patch_model

    model = tiny_model(layers=2)
    patch_model(model)
    units = UnitEncoder(model, tiny_tokenizer(), M).encode(PASSAGES)
    state = MemoryState.from_rows([units])
    dynamic, _ = sessions(model, state, None)
    _, static = sessions(model, state, "eager", impl="flash")
    want, want_logits = greedy(dynamic, prompt_ids(), 12)
    before = dispatch.used["flash"]
    got, got_logits = greedy(static, prompt_ids(), 12)
    assert static._steps and dispatch.used["flash"] - before >= 12 * 2  # every step, every layer
    assert torch.equal(got, want)
    torch.testing.assert_close(got_logits, want_logits, atol=1e-4, rtol=1e-4)

    ids, valid = left_padded([prompt_ids("Tell me a bio of Marie Curie, the physicist."), prompt_ids("Paris?")],
                             tiny_tokenizer().pad_token_id)
    _, padded = sessions(model, MemoryState.from_rows([units[:2], units[2:]]), "eager", impl="flash")
    with pytest.raises(ValueError, match="ctx_mask must be None .* or come with ctx_lengths"):
        greedy(padded, ids, 2, valid)


# ---- on a GPU with flash-attn-4 ------------------------------------------------------------------
needs_flash = pytest.mark.skipif(not flash.available(), reason=f"flash-attention 4: {flash.load_error()}")
HALF = [torch.bfloat16, torch.float16]


# Each (dtype, head dim, causal, seqused) flash-attention compiles anew (seconds each): a few cases cover them.
SEGMENT_CASES = [(torch.bfloat16, False, (1, 1, 32, 8, 128, 700)), (torch.bfloat16, False, (4, 1, 32, 8, 128, 2048)),
                 (torch.bfloat16, True, (3, 128, 32, 8, 128, 1024)), (torch.bfloat16, True, (2, 37, 9, 3, 64, 300)),
                 (torch.float16, True, (2, 16, 32, 8, 128, 512))]


@needs_flash
@pytest.mark.parametrize("dtype, causal, shape", SEGMENT_CASES)
def test_flash_segments_match_torch_state(dtype, causal, shape):
    B, Q, Hq, Hkv, D, N = shape
    gen = torch.Generator().manual_seed(sum(shape))
    q = torch.randn(B, Q, Hq, D, generator=gen).to("cuda", dtype)
    k, v = (torch.randn(B, Hkv, N, D, generator=gen).to("cuda", dtype).transpose(1, 2) for _ in range(2))
    for used in (None, torch.randint(Q, N + 1, (B,), generator=gen, dtype=torch.int32).cuda()):
        out, lse = flash.flash_state(q, k, v, D**-0.5, causal, used)
        want_out, want_lse = torch_state(q, k, v, D**-0.5, causal, used)
        assert out.shape == want_out.shape and lse.shape == want_lse.shape and lse.dtype == torch.float32
        assert_close(out, want_out, dtype)
        torch.testing.assert_close(lse, want_lse, atol=2e-2, rtol=2e-3)


@needs_flash
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("decode", [False, True])
@pytest.mark.parametrize("dtype", HALF)
def test_flash_matches_reference(seed, decode, dtype):
    query, key, value, memory, scale = flash_case(seed, dtype, decode, "cuda", head_dims=(64, 128))
    assert flash.supports(query, key, value, memory, None)
    expected = memory_attention_reference(query, key, value, memory, None, scale)
    assert_close(flash.memory_attention_flash(query, key, value, memory, None, scale), expected, dtype)


@needs_flash
def test_auto_runs_flash_for_prefill_and_many_rows_and_elsewhere_under_a_mask_or_few_rows():
    query, key, value, memory, scale = flash_case(5, torch.bfloat16, False, "cuda", head_dims=(128,))
    Q, L = query.shape[2], key.shape[2]
    if Q == 1:
        query = query.expand(-1, -1, 2, -1).contiguous()
        Q = 2
    before = dispatch.used["flash"]
    out = dispatch.run(dispatch.select("auto"), query, key, value, memory, None, scale)
    assert dispatch.used["flash"] == before + 1  # prefill
    causal = torch.arange(L, device="cuda").view(1, L) <= torch.arange(L - Q, L, device="cuda").view(Q, 1)
    masked = dispatch.run(dispatch.select("auto"), query, key, value, memory, causal.view(1, 1, Q, L), scale)
    assert dispatch.used["flash"] == before + 1  # a masked context runs elsewhere, with the same result
    assert_close(out, masked, torch.bfloat16)
    one = query[:1, :, -1:]  # decode of one row: fewer blocks than flash.MIN_DECODE_BLOCKS
    assert not flash.preferred(one, key[:1])
    dispatch.run(dispatch.select("auto"), one, key[:1], value[:1], memory.select_rows([0]), None, scale)
    assert dispatch.used["flash"] == before + 1


@needs_flash
def test_flash_replays_in_a_cuda_graph():
    """Each row's used memory keys are counted on the device, so a captured step follows a memory rewritten in place."""
    query, key, value, memory, scale = flash_case(7, torch.bfloat16, True, "cuda", head_dims=(128,))
    flash.memory_attention_flash(query, key, value, memory, None, scale)  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = flash.memory_attention_flash(query, key, value, memory, None, scale)
    row = next(r for r, b in enumerate(memory.unit_bounds) if b)
    memory.bias[row, ..., 1:] = float("-inf")  # the row now holds one memory token, as one unit
    memory.log_ctx_weight[row] = torch.log(torch.tensor(2.0))
    memory.key.mul_(0.5)
    graph.replay()
    torch.cuda.synchronize()
    bounds = [[(0, 1)] if r == row else b for r, b in enumerate(memory.unit_bounds)]
    now = LayerMemory(memory.key, memory.value, memory.bias, bounds, memory.log_ctx_weight)
    assert_close(out, memory_attention_reference(query, key, value, now, None, scale), torch.bfloat16)


@needs_flash
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("dtype", HALF)
def test_flash_takes_a_prefix_mask_as_lengths_and_auto_runs_it_for_many_rows(seed, dtype):
    """The continuous batch's decode: rows of lengths of their own, enough rows for auto to choose flash."""
    query, key, value, memory, scale = flash_case(seed, dtype, True, "cuda", head_dims=(128,))
    rows = max(1, -(-flash.MIN_DECODE_BLOCKS // key.shape[1]))  # rows x KV heads >= MIN_DECODE_BLOCKS
    pick = [r % query.shape[0] for r in range(rows)]
    query, key, value, memory = query[pick], key[pick], value[pick], memory.select_rows(pick)
    L = key.shape[2]
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, L + 1, (rows,), generator=gen, dtype=torch.int32).cuda()
    mask = prefix_mask(lengths, L)
    expected = memory_attention_reference(query, key, value, memory, mask, scale)
    assert flash.supports(query, key, value, memory, mask, lengths) and flash.preferred(query, key)
    before = dispatch.used["flash"]
    out = dispatch.run(dispatch.select("auto"), query, key, value, memory, mask, scale, ctx_lengths=lengths)
    assert dispatch.used["flash"] == before + 1
    assert_close(out, expected, dtype)


@needs_flash
def test_flash_replays_context_lengths_written_in_place():
    """The static cache's graph step: the lengths are computed on the device from the write index each replay."""
    query, key, value, memory, scale = flash_case(9, torch.bfloat16, True, "cuda", head_dims=(128,))
    B, L = query.shape[0], key.shape[2]
    index = torch.full((1,), L // 2, dtype=torch.long, device="cuda")

    def step():
        lengths = (index + 1).to(torch.int32).repeat(B)
        mask = (torch.arange(L, device="cuda") <= index)[None, None, None, :].expand(B, 1, 1, L)
        return flash.memory_attention_flash(query, key, value, memory, mask, scale, lengths)

    step()  # compile outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = step()
    for at in (L - 1, 0, L // 3):
        index.fill_(at)
        graph.replay()
        torch.cuda.synchronize()
        mask = (torch.arange(L, device="cuda") <= at)[None, None, None, :].expand(B, 1, 1, L)
        assert_close(out, memory_attention_reference(query, key, value, memory, mask, scale), torch.bfloat16)
