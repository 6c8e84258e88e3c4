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
