"""Working memory: unit encoding, reuse, FIFO pools, footprint."""
import pytest
import torch
from transformers import DynamicCache

from ewe.memory import MemoryPool, MemoryUnit, UnitEncoder, WorkingMemory, unit_id
from ewe.ops import MemoryState
from tiny import tiny_model, tiny_tokenizer

PASSAGES = [
    "Marie Curie was a Polish physicist.",
    "The Eiffel Tower is in Paris.",
    "Albert Einstein was a German-born theoretical physicist best known for relativity.",
    "The quick brown fox.",
]


@pytest.fixture(scope="module")
def model():
    return tiny_model()


def make_encoder(model, unit_tokens=24, start_token=False, cache_units=256):
    return UnitEncoder(model, tiny_tokenizer(), unit_tokens, start_token, cache_units)


def test_batched_encoding_equals_each_unit_alone(model):
    """Units are encoded in one padded batch, yet each equals its encoding on its own at positions 0..m-1."""
    enc = make_encoder(model)
    units = enc.encode(PASSAGES)
    assert enc.stats.batches == 1 and enc.stats.encoded == len(PASSAGES)
    for unit, text in zip(units, PASSAGES):
        ids = torch.tensor([unit.token_ids])
        cache = DynamicCache(config=model.config)
        with torch.no_grad():
            model.base_model(input_ids=ids, position_ids=torch.arange(ids.shape[1])[None], past_key_values=cache)
        keys = torch.stack([layer.keys[0] for layer in cache.layers])
        assert unit.keys.shape == keys.shape  # padding dropped: m = real token count
        torch.testing.assert_close(unit.keys, keys, atol=1e-5, rtol=1e-5)


def test_identical_passages_are_encoded_once(model):
    enc = make_encoder(model)
    first = enc.encode([PASSAGES[0], PASSAGES[1], PASSAGES[0]])
    assert enc.stats.encoded == 2 and first[0] is first[2]
    again = enc.encode([PASSAGES[1], PASSAGES[2]])
    assert enc.stats.encoded == 3 and enc.stats.reused == 1 and again[0] is first[1]


def test_memory_does_not_reencode_present_or_known_units(model):
    memory = WorkingMemory(make_encoder(model), retrieval_units=2, feedback_units=1)
    memory.add(PASSAGES[:2])
    v = memory.version
    report = memory.add([PASSAGES[0]])
    assert report["present"] == [unit_id(PASSAGES[0])] and memory.version == v
    assert memory.encoder.stats.encoded == 2


def test_start_token_setting(model):
    tok = tiny_tokenizer()
    with_bos = make_encoder(model, start_token=True).encode([PASSAGES[0]])[0]
    without = make_encoder(model, start_token=False).encode([PASSAGES[0]])[0]
    assert with_bos.token_ids[0] == tok.bos_token_id and with_bos.token_ids[1:] == without.token_ids


def test_long_passage_truncated_with_warning(model):
    enc = make_encoder(model, unit_tokens=8)
    with pytest.warns(UserWarning, match="truncated to unit_tokens=8"):
        unit = enc.encode([PASSAGES[2]])[0]
    assert unit.truncated and unit.num_tokens == 8


def test_empty_passage_rejected(model):
    with pytest.raises(ValueError, match="empty"):
        make_encoder(model).encode(["  "])


def test_pools_fifo_and_capacity(model):
    memory = WorkingMemory(make_encoder(model), retrieval_units=2, feedback_units=1)
    memory.add(PASSAGES[:2], pool="retrieval")
    report = memory.add([PASSAGES[2]], pool="retrieval")
    assert report["evicted"] == [unit_id(PASSAGES[0])]
    assert [u.text for u in memory.pools["retrieval"]] == PASSAGES[1:3]
    memory.add([PASSAGES[3]], pool="feedback")
    memory.add([PASSAGES[0]], pool="feedback")
    assert [u.text for u in memory.pools["feedback"]] == [PASSAGES[0]]
    assert len(memory) == 3 and memory.capacity == 3
    with pytest.raises(ValueError, match="pool='other'"):
        memory.add(["x"], pool="other")


def test_pool_edge_cases():
    pool = MemoryPool("p", 0)
    unit = MemoryUnit("a", "t", [1], torch.zeros(1, 1, 1, 2), torch.zeros(1, 1, 1, 2))
    assert pool.add(unit) == [] and len(pool) == 0
    with pytest.raises(ValueError):
        MemoryPool("p", -1)


def test_remove_clear_and_footprint(model):
    memory = WorkingMemory(make_encoder(model), retrieval_units=3, feedback_units=2)
    memory.add(PASSAGES[:3])
    memory.add([PASSAGES[3]], pool="feedback")
    fp = memory.footprint()
    assert fp["units"] == 4 and fp["bytes"] == sum(u.keys.nbytes + u.values.nbytes for u in memory.units)
    assert fp["bytes_per_pool"]["feedback"] == memory.pools["feedback"].nbytes > 0
    assert memory.remove(unit_id(PASSAGES[1])) and not memory.remove("nope")
    assert len(memory) == 3
    memory.clear("feedback")
    assert len(memory.pools["feedback"]) == 0 and len(memory) == 2
    memory.clear()
    assert len(memory) == 0 and memory.footprint()["bytes"] == 0 and memory.state().is_empty


def test_state_layout_and_padding(model):
    enc = make_encoder(model)
    a, b, c = enc.encode(PASSAGES[:3])
    state = MemoryState.from_rows([[a, b], [c], []])
    n = a.num_tokens + b.num_tokens
    layer0, layer1 = state.layer(0), state.layer(1)
    assert len(state.layers) == a.keys.shape[0] and max(n, c.num_tokens) == layer0.key.shape[2]
    assert state.unit_bounds == layer1.unit_bounds == [[(0, a.num_tokens), (a.num_tokens, n)], [(0, c.num_tokens)], []]
    torch.testing.assert_close(layer1.key[0, :, a.num_tokens : n], b.keys[1])
    width = layer0.key.shape[2]
    assert torch.isneginf(layer0.bias[2]).all() and (layer0.bias[0, ..., :n] == 0).all()
    assert (layer0.bias[1, ..., c.num_tokens :] == float("-inf")).all() or c.num_tokens == width
    torch.testing.assert_close(layer1.log_ctx_weight.flatten(), torch.log(torch.tensor([3.0, 2.0, 1.0])))
    picked = state.select_rows([1, 0])
    assert picked.unit_bounds == [state.unit_bounds[1], state.unit_bounds[0]] and not picked.is_empty
    torch.testing.assert_close(picked.layer(1).key, layer1.key[[1, 0]])
    torch.testing.assert_close(picked.layer(0).log_ctx_weight.flatten(), torch.log(torch.tensor([2.0, 3.0])))
    assert MemoryState.from_rows([[], []]).is_empty and state.select_rows([2]).is_empty


def test_state_is_cached_until_memory_changes(model):
    memory = WorkingMemory(make_encoder(model), retrieval_units=2, feedback_units=0)
    memory.add(PASSAGES[:1])
    s1 = memory.state()
    assert memory.state() is s1
    memory.add(PASSAGES[1:2])
    assert memory.state() is not s1 and memory.state().unit_bounds[0][1][0] > 0
