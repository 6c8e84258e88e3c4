"""Random working memories for attention tests, shared by the PyTorch and extension suites."""
import torch

from ewe.ops import LayerMemory


def make_memory(batch, hkv, d, unit_lengths, dtype, gen, device="cpu"):
    """Random memory whose rows hold the given unit lengths; shorter rows right-padded (-inf bias)."""
    totals = [sum(lens) for lens in unit_lengths]
    n = max(totals + [0])
    key = torch.randn(batch, hkv, n, d, generator=gen).to(device, dtype)
    value = torch.randn(batch, hkv, n, d, generator=gen).to(device, dtype)
    bias = torch.zeros(batch, 1, 1, n)
    bounds = []
    for b, lens in enumerate(unit_lengths):
        bias[b, ..., totals[b]:] = float("-inf")
        starts = [sum(lens[:i]) for i in range(len(lens))]
        bounds.append([(s, s + m) for s, m in zip(starts, lens)])
    weight = LayerMemory.context_weight([len(x) for x in unit_lengths], device)
    return LayerMemory(key, value, bias.to(device), bounds, weight)


# Per-dtype tolerances (absolute, relative) of an implementation against the float32 reference.
TOLERANCES = {torch.float32: (2e-5, 1e-4), torch.bfloat16: (3e-2, 3e-2), torch.float16: (5e-3, 5e-3)}


def assert_close(actual, expected, dtype):
    atol, rtol = TOLERANCES[dtype]
    torch.testing.assert_close(actual.float(), expected.float(), atol=atol, rtol=rtol)


def random_case(seed, dtype=torch.float32, decode=False, device="cpu", groups=(1, 2, 3), head_dims=(8, 16, 24),
                max_ctx=37, max_units=8, some_memory=False):
    """query, key, value, memory and scale of one random eq. 1 call (some_memory: at least one unit)."""
    gen = torch.Generator().manual_seed(seed)
    r = lambda lo, hi: int(torch.randint(lo, hi + 1, (1,), generator=gen))
    batch, hkv, group, d = r(1, 3), r(1, 3), groups[r(0, len(groups) - 1)], head_dims[r(0, len(head_dims) - 1)]
    ctx = r(1, max_ctx)
    q_len = 1 if decode else r(1, ctx)
    unit_lengths = [[r(1, 19) for _ in range(r(0, max_units))] for _ in range(batch)]
    if some_memory and not any(unit_lengths):
        unit_lengths[0] = [r(1, 19)]
    query = torch.randn(batch, hkv * group, q_len, d, generator=gen).to(device, dtype)
    key = torch.randn(batch, hkv, ctx, d, generator=gen).to(device, dtype)
    value = torch.randn(batch, hkv, ctx, d, generator=gen).to(device, dtype)
    memory = make_memory(batch, hkv, d, unit_lengths, dtype, gen, device)
    return query, key, value, memory, d**-0.5
