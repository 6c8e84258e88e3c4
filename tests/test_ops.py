"""The fused memory attention against the literal eq. 1 reference, on random shapes."""
import math

import pytest
import torch
import torch.nn.functional as F

from attention_cases import assert_close, make_memory, random_case
from ewe.ops import LayerMemory, memory_attention_fused, memory_attention_reference, merge_states, attention_state


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("decode", [False, True])
def test_fused_matches_reference_fp32(seed, decode):
    query, key, value, memory, scale = random_case(seed, decode=decode)
    expected = memory_attention_reference(query, key, value, memory, None, scale)
    assert_close(memory_attention_fused(query, key, value, memory, None, scale), expected, torch.float32)


@pytest.mark.parametrize("seed", range(20))
def test_fused_matches_reference_bf16(seed):
    query, key, value, memory, scale = random_case(seed, dtype=torch.bfloat16)
    expected = memory_attention_reference(query, key, value, memory, None, scale)  # float32 inside
    actual = memory_attention_fused(query, key, value, memory, None, scale)
    assert actual.dtype == torch.bfloat16
    assert_close(actual, expected, torch.bfloat16)


@pytest.mark.parametrize("seed", range(10))
def test_padding_masks_from_transformers(seed):
    """Left-padded batches arrive as a boolean [B, 1, Q, L] mask; both paths must honour it."""
    query, key, value, memory, scale = random_case(seed)
    B, _, Q, _ = query.shape
    L = key.shape[2]
    pad = torch.randint(0, max(1, L - Q), (B,), generator=torch.Generator().manual_seed(seed))
    kv_idx = torch.arange(L).view(1, 1, 1, L)
    q_idx = torch.arange(L - Q, L).view(1, 1, Q, 1)
    mask = (kv_idx <= q_idx) & (kv_idx >= pad.view(B, 1, 1, 1))
    expected = memory_attention_reference(query, key, value, memory, mask, scale)
    assert_close(memory_attention_fused(query, key, value, memory, mask, scale), expected, torch.float32)
    float_mask = torch.zeros(mask.shape).masked_fill(~mask, torch.finfo(torch.float32).min)
    assert_close(memory_attention_fused(query, key, value, memory, float_mask, scale), expected, torch.float32)
    # and the mask really matters: changing a padded key leaves the output unchanged
    if int(pad.max()) > 0:
        b = int(pad.argmax())
        key2 = key.clone()
        key2[b, :, 0] += 100.0
        assert_close(memory_attention_fused(query, key2, value, memory, mask, scale), expected, torch.float32)


def test_reference_is_eq1_by_its_closed_form():
    """Eq. 1 equals one softmax over memory and context with log(k+1) on context logits."""
    query, key, value, memory, scale = random_case(123)
    B, Hq, Q, D = query.shape
    L = key.shape[2]
    group = Hq // key.shape[1]
    out = memory_attention_reference(query, key, value, memory, None, scale)
    for b in range(B):
        k = memory.num_units[b]
        n = memory.unit_bounds[b][-1][1] if k else 0
        keys = torch.cat([memory.key[b, :, :n], key[b]], dim=1).repeat_interleave(group, 0)
        vals = torch.cat([memory.value[b, :, :n], value[b]], dim=1).repeat_interleave(group, 0)
        causal = torch.arange(L).view(1, L) <= torch.arange(L - Q, L).view(Q, 1)
        bias = torch.cat([torch.zeros(Q, n), torch.where(causal, math.log(k + 1), float("-inf"))], dim=1)
        probs = torch.softmax(query[b] @ keys.transpose(-1, -2) * scale + bias, dim=-1)
        torch.testing.assert_close(out[b].transpose(0, 1), probs @ vals, atol=2e-5, rtol=1e-4)


def test_no_units_is_plain_attention():
    query, key, value, _, scale = random_case(7)
    B, Hq, Q, D = query.shape
    empty = make_memory(B, key.shape[1], D, [[] for _ in range(B)], torch.float32, torch.Generator())
    expected = F.scaled_dot_product_attention(
        query, key, value, is_causal=False, scale=scale, enable_gqa=True,
        attn_mask=torch.arange(key.shape[2]).view(1, -1) <= torch.arange(key.shape[2] - Q, key.shape[2]).view(-1, 1),
    ).transpose(1, 2)
    for fn in (memory_attention_reference, memory_attention_fused):
        assert_close(fn(query, key, value, empty, None, scale), expected, torch.float32)


def test_memory_changes_the_output():
    """A guard against a path that ignores memory: with units present, output differs from plain attention."""
    query, key, value, memory, scale = random_case(3)
    while sum(memory.num_units) == 0:
        query, key, value, memory, scale = random_case(int(torch.randint(0, 10**6, (1,))))
    empty = make_memory(query.shape[0], key.shape[1], query.shape[-1], [[] for _ in range(query.shape[0])], torch.float32, torch.Generator())
    with_mem = memory_attention_fused(query, key, value, memory, None, scale)
    without = memory_attention_fused(query, key, value, empty, None, scale)
    assert (with_mem - without).abs().max() > 1e-3


def test_merge_is_associative_and_handles_empty_segments():
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(1, 2, 3, 8, generator=gen)
    ks = [torch.randn(1, 2, n, 8, generator=gen) for n in (4, 5, 6)]
    vs = [torch.randn(1, 2, n, 8, generator=gen) for n in (4, 5, 6)]
    states = [attention_state(q, k, v, None, 0.3) for k, v in zip(ks, vs)]
    left = merge_states(*merge_states(*states[0], *states[1]), *states[2])
    right = merge_states(*states[0], *merge_states(*states[1], *states[2]))
    whole = attention_state(q, torch.cat(ks, 2), torch.cat(vs, 2), None, 0.3)
    for a, b in ((left, whole), (right, whole)):
        torch.testing.assert_close(a[0], b[0], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(a[1], b[1], atol=1e-5, rtol=1e-5)
    masked = attention_state(q, ks[0], vs[0], torch.full((1, 1, 1, 4), float("-inf")), 0.3)
    assert torch.isneginf(masked[1]).all() and masked[0].abs().max() == 0
    merged = merge_states(*masked, *states[1])
    torch.testing.assert_close(merged[0], states[1][0])


def test_bench_stream_fraction_is_paired_per_repeat():
    from ewe.bench.attention import paired_fraction

    # each repeat's pair gives one ratio (here 0.5, 0.5, 2.0: the third repeat's calls ran while
    # the machine was 4x as fast as during its stream read); the result is their median
    assert paired_fraction(100, [2.0, 1.0, 0.25], 400, [4.0, 2.0, 2.0]) == 0.5
    assert paired_fraction(100, [1.0, 1.0, 4.0], 100, [1.0, 2.0, 1.0]) == 1.0  # median of 1, 2, 0.25
    with pytest.raises(ValueError):
        paired_fraction(1, [1.0], 1, [1.0, 2.0])


def with_readout(memory: LayerMemory, temperature: float, lse_scale: float) -> LayerMemory:
    return LayerMemory(memory.key, memory.value, memory.bias, memory.unit_bounds, memory.log_ctx_weight,
                       temperature, lse_scale)


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("readout", [(0.9, 0.9), (0.5, 1.0), (1.0, 0.8), (2.0, 1.5)])
def test_fused_ape_readout_matches_its_reference(seed, readout):
    """APE's temperature and scale (memory.temperature / memory.lse_scale) on the fused path, held
    to the plain per-row reference, with padded rows and rows without units."""
    query, key, value, memory, scale = random_case(seed, decode=seed % 2 == 0)
    ape = with_readout(memory, *readout)
    assert not ape.is_eq1
    expected = memory_attention_reference(query, key, value, ape, None, scale)
    assert_close(memory_attention_fused(query, key, value, ape, None, scale), expected, torch.float32)
    if sum(memory.num_units):  # the read-out changes the result wherever a row holds units
        assert (expected - memory_attention_reference(query, key, value, memory, None, scale)).abs().max() > 1e-4


def test_ape_readout_at_one_is_eq1():
    query, key, value, memory, scale = random_case(11)
    same = with_readout(memory, 1.0, 1.0)
    assert same.is_eq1
    torch.testing.assert_close(memory_attention_reference(query, key, value, same, None, scale),
                               memory_attention_reference(query, key, value, memory, None, scale))


def test_ape_readout_reaches_the_attention_from_the_config(tiny):
    """memory.temperature / memory.lse_scale set in the config are what the layers read."""
    from ewe import EWE, EWEConfig

    cfg = EWEConfig.build(tiny.config.model_dump(), **{"memory.temperature": 0.9, "memory.lse_scale": 0.95})
    ewe = EWE(tiny.model, tiny.tokenizer, cfg)
    memory = ewe.runtime.new_memory()
    memory.add(["A passage about something."])
    layer = memory.state().layer(0)
    assert (layer.temperature, layer.lse_scale) == (0.9, 0.95)
