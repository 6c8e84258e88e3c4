"""The static KV cache and the fixed-shape (graph) decode step, held to the ordinary eager path.

On CPU the graph step runs uncaptured (graph="eager"): the same function a CUDA graph replays,
over the whole preallocated cache under a mask and the memory in fixed-size slots. On a GPU the
captured replay is held to the same tokens.
"""
import pytest
import torch

from ewe.engine import DecodingSession
from ewe.engine.static_cache import PreallocatedCache
from ewe.memory import UnitEncoder
from ewe.ops import MemoryState
from ewe.modeling import patch_model
from tiny import left_padded, tiny_model, tiny_tokenizer

M = 24
PASSAGES = ["Marie Curie was a Polish physicist.", "The Eiffel Tower is in Paris.", "Albert Einstein was German."]


def prompt_ids(text="Tell me a bio of Marie Curie."):
    tok = tiny_tokenizer()
    return torch.tensor([tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True,
                                                 tokenize=True)["input_ids"]])


@pytest.fixture(scope="module")
def model():
    m = tiny_model(layers=3)
    patch_model(m)
    return m


@pytest.fixture(scope="module")
def units(model):
    return UnitEncoder(model, tiny_tokenizer(), M).encode(PASSAGES)


def greedy(session, ids, steps, valid=None, script=None):
    """Prefill and decode `steps` greedy tokens; `script[i]` (a function of the session) runs before step i.
    Returns the tokens [B, steps] and every step's logits."""
    logits = [session.prefill(ids, valid)]
    tokens = []
    for i in range(steps):
        if script and i in script:
            out = script[i](session)
            if isinstance(out, list):  # rows kept (select_rows): so are their logits
                session.select_rows(out)
                logits[-1] = logits[-1][out]
            elif out is not None:
                logits[-1] = out
        nxt = logits[-1].argmax(-1)
        tokens.append(nxt)
        logits.append(session.step(nxt))
    if len({t.shape[0] for t in tokens}) > 1:
        return tokens, logits
    return torch.stack(tokens, dim=1), torch.stack(logits)


def sessions(model, state, graph, reserve=64, impl="fused"):
    dynamic = DecodingSession(model, state, M if state is not None else 0, impl)
    static = DecodingSession(model, state, M if state is not None else 0, impl, kv_cache="static", reserve=reserve,
                             graph=graph)
    return dynamic, static


@pytest.mark.parametrize("graph", [None, "eager"], ids=["views", "fixed-shape"])
@pytest.mark.parametrize("with_memory", [False, True], ids=["k0", "k3"])
@pytest.mark.parametrize("impl", ["fused", "auto"])
def test_static_cache_decodes_the_dynamic_cache_tokens(model, units, graph, with_memory, impl):
    state = MemoryState.from_rows([units]) if with_memory else None
    dynamic, static = sessions(model, state, graph, impl=impl)
    want, want_logits = greedy(dynamic, prompt_ids(), 24)
    got, got_logits = greedy(static, prompt_ids(), 24)
    assert torch.equal(got, want)
    tol = 0.0 if graph is None else 1e-4  # views: the same computation; fixed shape: masked padding added
    torch.testing.assert_close(got_logits, want_logits, atol=tol, rtol=tol)
    assert isinstance(static.cache, PreallocatedCache) and static.cache.get_seq_length() == static.length
    if graph == "eager":
        assert static._steps, "the fixed-shape step never ran"


@pytest.mark.parametrize("graph", [None, "eager"], ids=["views", "fixed-shape"])
def test_backtrack_refresh_and_growth_between_steps(model, units, graph):
    """Pauses act between steps: a truncate (backtrack), a memory refresh to more units, a crop,
    and a cache outgrowing its reserve all leave the static path on the dynamic path's tokens."""
    one, three = MemoryState.from_rows([units[:1]]), MemoryState.from_rows([units])
    keep = prompt_ids().shape[1] + 4
    script = {
        6: lambda s: s.truncate(keep),
        9: lambda s: s.set_memory(three),
        14: lambda s: s.truncate(s.length - 2),
    }
    dynamic, static = sessions(model, one, graph, reserve=5)  # 5 spare positions: the cache must grow
    want, _ = greedy(dynamic, prompt_ids(), 30, script=script)
    got, _ = greedy(static, prompt_ids(), 30, script=script)
    assert torch.equal(got, want)
    assert static.cache.capacity > prompt_ids().shape[1] + 5


@pytest.mark.parametrize("graph", [None, "eager"], ids=["views", "fixed-shape"])
def test_left_padded_batch_and_rows_leaving(model, units, graph):
    """Two rows of different lengths and memories; then one row leaves the batch (select_rows)."""
    tok = tiny_tokenizer()
    a, b = prompt_ids("Tell me a bio of Marie Curie, the physicist."), prompt_ids("Paris?")
    ids, valid = left_padded([a, b], tok.pad_token_id)
    state = MemoryState.from_rows([[units[0], units[1]], [units[2]]])
    script = {7: lambda s: [1]}
    dynamic, static = sessions(model, state, graph)
    want, _ = greedy(dynamic, ids, 12, valid, script)
    got, _ = greedy(static, ids, 12, valid, script)
    assert len(got) == len(want) == 12 and all(torch.equal(g, w) for g, w in zip(got, want))


def test_branch_of_a_static_session_is_static_and_leaves_the_source(model, units):
    state = MemoryState.from_rows([units])
    _, static = sessions(model, state, "eager")
    greedy(static, prompt_ids(), 8)
    before = static.tokens.clone()
    branch, logits = static.branch(static.length - 3, 2, MemoryState.from_rows([units] * 2))
    assert isinstance(branch.cache, PreallocatedCache) and branch.graph == "eager"
    fresh = DecodingSession(model, state, M, "fused").prefill(before[:, : static.length - 3])
    torch.testing.assert_close(logits, fresh.expand(2, -1), atol=1e-4, rtol=1e-4)
    branch.step(logits.argmax(-1))
    assert torch.equal(static.tokens, before) and static.cache.get_seq_length() == before.shape[1]


def test_compiled_step_writes_the_dynamic_cache_tokens(model, units):
    """decoding.compile: the fixed-shape step under torch.compile (CPU), refresh and backtrack included."""
    state = MemoryState.from_rows([units])
    keep = prompt_ids().shape[1] + 4
    script = {5: lambda s: s.truncate(keep), 8: lambda s: s.set_memory(MemoryState.from_rows([units[:2]]))}
    dynamic = DecodingSession(model, state, M, "fused")
    compiled = DecodingSession(model, state, M, "fused", kv_cache="static", reserve=16, graph="eager", compile=True)
    want, _ = greedy(dynamic, prompt_ids(), 12, script=script)
    got, _ = greedy(compiled, prompt_ids(), 12, script=script)
    assert torch.equal(got, want)
    assert compiled.cache.capacity % 256 == 0  # capacities rounded, so sessions share compiled shapes


def test_bad_settings_are_refused(model):
    with pytest.raises(ValueError, match="kv_cache='static'"):
        DecodingSession(model, None, 0, graph="cuda")
    with pytest.raises(ValueError, match="kv_cache='paged'"):
        DecodingSession(model, None, 0, kv_cache="paged")
    with pytest.raises(ValueError, match="needs graph='eager'"):
        DecodingSession(model, None, 0, kv_cache="static", compile=True)
    from ewe.config import ConfigError, EWEConfig

    with pytest.raises(ConfigError, match="decoding.kv_cache 'static' too"):
        EWEConfig.build({"decoding": {"compile": True}})


def test_generate_with_a_static_cache_writes_the_same_answer(model):
    """Through the runtime: decoding.kv_cache static gives the dynamic cache's tokens (CPU: views)."""
    from ewe.config import EWEConfig
    from ewe.runtime import Runtime

    tok = tiny_tokenizer()
    texts = {}
    for kv in ("dynamic", "static"):
        config = EWEConfig.build({"decoding": {"kv_cache": kv, "max_new_tokens": 16}})
        rt = Runtime(config, model, tok)
        session = rt.session()
        assert session.kv_cache == kv and session.graph is None
        texts[kv] = rt.generate_plain(["Tell me a bio of Marie Curie."], [[]], rt.config.decoding)[0].token_ids
    assert texts["static"] == texts["dynamic"] and len(texts["static"]) > 0


cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")


@cuda
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["fp32", "bf16"])
@pytest.mark.parametrize("with_memory", [False, True], ids=["k0", "k3"])
def test_cuda_graph_replays_the_fixed_shape_step(dtype, with_memory):
    """The captured graph writes the tokens of the same step run eagerly, and (fp32) of the dynamic cache."""
    m = tiny_model(layers=3).to("cuda", dtype)
    patch_model(m)
    units = UnitEncoder(m, tiny_tokenizer(), M).encode(PASSAGES)
    state = MemoryState.from_rows([units]) if with_memory else None
    ids = prompt_ids().cuda()
    keep = ids.shape[1] + 4
    script = {6: lambda s: s.truncate(keep), 9: lambda s: s.set_memory(state)}
    runs = {}
    for graph in (None, "eager", "cuda"):
        kv = "dynamic" if graph is None else "static"
        session = DecodingSession(m, state, M if state is not None else 0, None, kv_cache=kv, reserve=8, graph=graph)
        runs[graph], _ = greedy(session, ids, 24, script=script)
        if graph == "cuda":
            assert session._steps and all(s.graph is not None for s in session._steps.values())
    assert torch.equal(runs["cuda"], runs["eager"])
    if dtype == torch.float32:
        assert torch.equal(runs["cuda"], runs[None])
