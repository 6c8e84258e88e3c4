"""The Runtime: what every method runs on. It holds the configuration and the loaded parts
(the patched model, its tokenizer, the unit encoder, the datastore and the fact-checker),
each loaded only when first used, so a command that never generates (`ewe eval score`)
never loads the generator. Methods receive a Runtime, never the `EWE` facade.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path

import torch

from . import tokens
from .config import ConfigError, DecodingConfig, EWEConfig
from .engine import DecodingSession, Sampler, TokenLoop
from .engine.watch import answer_watchers
from .errors import InputError
from .memory import UnitEncoder, WorkingMemory
from .ops import MemoryState
from .result import GenerationResult
from .retrieval.in_prompt import PASSAGE_FORMATS
from .stats import PlainStats

logger = logging.getLogger(__name__)

# positions a static KV cache holds beyond prompt + max_new_tokens: a rewrite's or a check's few extra tokens
STATIC_CACHE_SLACK = 64


class Runtime:
    """The configuration and its loaded parts; see the module docstring."""

    def __init__(self, config: EWEConfig, model=None, tokenizer=None, datastore=None, fact_checker=None,
                 memory_adapter=None):
        self.config = config
        self._tokenizer, self._datastore, self._fact_checker = tokenizer, datastore, fact_checker
        self._model = self._encoder = self.load_report = None
        self._adapter = False  # not resolved yet (None: no adapter)
        self._parts: dict = {}
        mem, ret = config.memory, config.retrieval
        if ret.source is not None and ret.placement == "memory" and ret.top_k > mem.retrieval_units:
            raise ConfigError(
                f"retrieval.top_k={ret.top_k} passages do not fit memory.retrieval_units={mem.retrieval_units}"
            )
        if model is not None:
            # a model handed in is used as it is: with the adapter handed beside it by whoever loaded it
            # (runtime.memory_adapter of the Runtime that did), else none
            if memory_adapter is not None and not memory_adapter.fits_layout(mem.unit_tokens, mem.unit_start_token):
                raise ConfigError(f"the memory adapter handed in was trained with M={memory_adapter.manifest.get('unit_tokens')}, "
                                  f"not memory.unit_tokens={mem.unit_tokens} (start token {mem.unit_start_token})")
            self._adapter = memory_adapter
            self._set_model(model)

    # -- the loaded parts, each on first use ----------------------------------------------

    def _set_model(self, model) -> None:
        from .modeling import patch_model

        patch_model(model)
        self._model = model

    @property
    def loaded(self) -> bool:
        """Whether the generator is loaded (a test shows scoring never loads it)."""
        return self._model is not None

    @property
    def model(self):
        """The generator with EWE's attention registered, loaded on first use."""
        if self._model is None:
            from .model_loading import apply_weights, load_model

            m = self.config.model
            model, tokenizer, self.load_report = load_model(m.name, m.dtype, m.device)
            self._tokenizer = self._tokenizer or tokenizer
            adapter = self.memory_adapter
            if adapter is not None and adapter.scope == "all":
                model = adapter.merged_into(model, copy_model=False)
            elif adapter is not None and m.weights is not None:  # the units' encoder (else made on first
                # use): a merged copy, made before the weights are swapped
                adapter.prepare_unit_model(model, lambda copy: apply_weights(copy, m.weights))
            self._set_model(apply_weights(model, m.weights))
        return self._model

    @property
    def memory_adapter(self):
        """The memory adapter model.memory_adapter names (checked against the model), or None."""
        if self._adapter is False:
            from .memory.adapter import resolve_adapter
            from .model_loading import resolve

            m, mem = self.config.model, self.config.memory
            adapter = resolve_adapter(m.memory_adapter, m.name)
            if adapter is not None and m.memory_adapter == "auto" and not adapter.fits_layout(mem.unit_tokens,
                                                                                          mem.unit_start_token):
                logger.warning("model.memory_adapter auto: the shipped adapter was trained with M=%s, start token %s, "
                               "not this configuration's M=%s, start token %s: memory units are read by the base "
                               "model", adapter.manifest.get("unit_tokens"), adapter.manifest.get("start_token"),
                               mem.unit_tokens, mem.unit_start_token)
                adapter = None
            if adapter is not None:
                adapter.check(Path(resolve(m.name)), mem.unit_tokens, mem.unit_start_token)
            self._adapter = adapter
        return self._adapter

    @property
    def unit_model(self):
        """The model that encodes memory units: the generator, or its adapted copy (a "units" adapter)."""
        model = self.model
        adapter = self.memory_adapter
        if adapter is None or adapter.scope == "all":
            return model
        return adapter.unit_model(model)

    @property
    def tokenizer(self):
        """The generator's tokenizer (loaded without the model when only it is needed)."""
        if self._tokenizer is None:
            from .model_loading import load_tokenizer

            self._tokenizer = load_tokenizer(self.config.model.name)
        return self._tokenizer

    @property
    def encoder(self) -> UnitEncoder:
        """Encodes passages into memory units (one KV cache each), with its LRU of encoded units."""
        if self._encoder is None:
            mem = self.config.memory
            self._encoder = UnitEncoder(self.unit_model, self.tokenizer, mem.unit_tokens, mem.unit_start_token,
                                        mem.encoder_cache_units)
        return self._encoder

    @property
    def max_positions(self) -> int:
        return int(getattr(self.model.config, "max_position_embeddings", 2048))

    @property
    def stop_ids(self) -> set[int]:
        """The generation config's end-of-sequence ids and the tokenizer's."""
        gen = self.model.generation_config
        eos = gen.eos_token_id if gen else None
        eos = eos if isinstance(eos, list) else [eos]
        return {i for i in eos + [self.tokenizer.eos_token_id] if i is not None}

    def part(self, key: str, make):
        """A method's own loaded part (PrefixNLI's judge), made by `make()` on first use and kept with
        the other parts: a method object lives for one call, the Runtime for the session."""
        if key not in self._parts:
            self._parts[key] = make()
        return self._parts[key]

    @property
    def datastore_loaded(self) -> bool:
        return self._datastore is not None

    @property
    def datastore(self):
        """The retrieval datastore named by retrieval.source, loaded (or built) on first use; None if unset."""
        source = self.config.retrieval.source
        if self._datastore is None and source is not None:
            from .retrieval import Datastore, default_datastore

            if source == "embedded":
                # one datastore for every config: a unit holds the passage plus its start token
                self._datastore = default_datastore(self.tokenizer, chunk_tokens=self.config.memory.unit_tokens - 1)
            else:
                self._datastore = Datastore.load(source)
        return self._datastore

    def fact_checker(self, need_evidence: bool = True):
        """The configured FactChecker (checker section), with this datastore as its evidence.

        need_evidence: raise if there is no datastore to find evidence in (every check would
        fail); False when the caller gives the evidence itself.
        """
        from .verify.datastore_evidence import DatastoreEvidence

        if self._fact_checker is None:
            from .checker_factory import build_fact_checker

            # the datastore opens on the first search, not here: checks that bring their own
            # evidence (ewe check --input with "evidence" on every case) never build it
            has_datastore = self._datastore is not None or self.config.retrieval.source is not None
            evidence = DatastoreEvidence(None, opener=lambda: self.datastore) if has_datastore else None
            self._fact_checker = build_fact_checker(self.config.checker, evidence, self.as_llm(),
                                                    device=self.config.model.device)
        evidence = getattr(self._fact_checker, "evidence", True)
        if need_evidence and evidence is None:
            raise ConfigError("fact-checking needs evidence, but retrieval.source is null: set it to 'embedded' or a "
                              "datastore folder (or give the evidence: EWE.check(..., evidence=[...]), "
                              "ewe check --evidence)")
        if need_evidence and isinstance(evidence, DatastoreEvidence):
            _ = evidence.datastore  # open it now: a missing or broken one is an error here, not a failed verdict
        return self._fact_checker

    def use_fact_checker(self, checker) -> None:
        """Check with `checker` from now on (a checker built elsewhere, or a test's)."""
        self._fact_checker = checker

    # -- what methods do with them ------------------------------------------------------------

    def retrieve(self, queries: list[str], k: int | None = None) -> list[list]:
        """The top `k` (default retrieval.top_k) passages (Hits) for each query, with the configured
        threshold and de-duplication."""
        ret = self.config.retrieval
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise InputError(f"k={k!r}: the number of passages to retrieve must be a whole number, at least 1")
        if self.datastore is None:
            return [[] for _ in queries]
        return self.datastore.search(queries, k=ret.top_k if k is None else k, threshold=ret.threshold,
                                     dedup_sources=ret.dedup_sources)

    def prompt_with_passages(self, prompt: str, passages: list[str]) -> str:
        """`prompt` with `passages` written in as text, in the configured retrieval.prompt_format."""
        if not passages:
            return prompt
        return PASSAGE_FORMATS[self.config.retrieval.prompt_format](prompt, list(passages))

    def new_memory(self) -> WorkingMemory:
        """An empty working memory with this configuration's pools, sharing the unit encoder."""
        mem = self.config.memory
        return WorkingMemory(self.encoder, mem.retrieval_units, mem.feedback_units, mem.temperature, mem.lse_scale,
                             mem.subject_units)

    def prompt_ids(self, prompt: str, system_prompt: str | None = None) -> list[int]:
        """The prompt through the chat template; its text can never become a control token."""
        return tokens.prompt_ids(self.tokenizer, prompt, system_prompt)

    def prepare(self, prompts: list[str], system_prompt: str | None, max_new_tokens: int,
                text_passages: list[list[str]] | None = None, offset: int = 0,
                generated: list[int] | None = None) -> list[list[int]]:
        """The one preparation of a request, for every method and every rewrite: each prompt with
        its `text_passages` written in (retrieval.prompt_format), through the chat template with
        `system_prompt`, then the `generated` tokens of an answer being continued. Refused with an
        InputError naming the prompt, before any model work, when it and `max_new_tokens` do not
        fit the context after `offset` memory positions (the units its memory may hold)."""
        rows = text_passages if text_passages is not None else [[] for _ in prompts]
        if len(rows) != len(prompts):
            raise ValueError(f"{len(rows)} passage lists for {len(prompts)} prompts")
        ids = [self.prompt_ids(self.prompt_with_passages(p, r), system_prompt) + list(generated or [])
               for p, r in zip(prompts, rows)]
        self.check_lengths(prompts, ids, offset, max_new_tokens)
        return ids

    def session(self, memory_state: MemoryState | None = None, offset: int = 0) -> DecodingSession:
        """A decoding session over the patched model (context positions after `offset` memory ones)."""
        dec = self.config.decoding
        on_cuda = next(self.model.parameters()).is_cuda
        graph = None
        if dec.kv_cache == "static" and dec.cuda_graphs and on_cuda:
            graph = "cuda"
        if dec.compile:
            if on_cuda:
                raise ConfigError("decoding.compile is built and measured for CPU decoding; on a GPU, "
                                  "decoding.cuda_graphs replays each step instead")
            graph = "eager"
        return DecodingSession(self.model, memory_state, offset, self.config.model.attention_impl, dec.kv_cache,
                               dec.max_new_tokens + STATIC_CACHE_SLACK, graph, compile=dec.compile)

    def decoding(self, **overrides) -> DecodingConfig:
        """The decoding section with `overrides` (None values keep the configured ones), validated."""
        data = self.config.decoding.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return EWEConfig.build({"decoding": data}).decoding

    def greedy(self, dec: DecodingConfig, max_new_tokens: int) -> DecodingConfig:
        """The settings of a greedy stage of `max_new_tokens` (dec's system prompt kept)."""
        return self.decoding(max_new_tokens=max_new_tokens, temperature=0.0, top_p=1.0,
                             system_prompt=dec.system_prompt)

    def check_lengths(self, prompts: list[str], ids: list[list[int]], offset: int, max_new_tokens: int) -> None:
        """Every prompt and its answer fit the context (after `offset` memory positions), else an
        InputError naming the prompt, before any model work."""
        limit = self.max_positions - offset
        where = f"max_position_embeddings={self.max_positions}" + (
            f" minus memory.unit_tokens={offset}" if offset else ""
        )
        for i, (p, row) in enumerate(zip(prompts, ids)):
            name = "prompt" if len(prompts) == 1 else f"prompt[{i}]"
            if len(row) >= limit:
                raise InputError(f"{name} is {len(row)} tokens; the context holds at most {limit} ({where})")
            if len(row) + max_new_tokens > limit:
                raise InputError(
                    f"{name} ({len(row)} tokens) + max_new_tokens={max_new_tokens} = {len(row) + max_new_tokens} "
                    f"exceeds the context limit {limit} ({where})"
                )

    def complete(self, text: str, dec: DecodingConfig, what: str, passages: list[str] | None = None,
                 offset: int = 0) -> GenerationResult:
        """One plain model call: `text` answered with `dec`'s settings (with `passages` in memory),
        its token budget cut to the room the context has left; a prompt that leaves no room is
        an error naming `what` it was for."""
        ids = self.prompt_ids(text, dec.system_prompt)
        room = self.max_positions - offset - len(ids)
        if room < 1:
            raise ValueError(f"the {what} prompt is {len(ids)} tokens; the context holds at most "
                             f"{self.max_positions - offset} (max_position_embeddings"
                             f"{f' minus {offset} memory positions' if offset else ''})")
        if dec.max_new_tokens > room:
            dec = dec.model_copy(update={"max_new_tokens": room})
        [out] = self.generate_plain([text], [list(passages or [])], dec)
        return out

    def as_llm(self, max_new_tokens: int = 256):
        """This model as a text-in, text-out function (greedy, no memory, no pauses); the model
        is loaded on the first call."""
        dec = self.decoding(max_new_tokens=max_new_tokens, temperature=0.0)

        def llm(prompt: str) -> str:
            return self.generate_plain([prompt], [[]], dec)[0].text

        return llm

    def generate_plain(self, prompts: list[str], rows: list[list[str]] | None, dec: DecodingConfig,
                       hooks_for=None, answer: bool = False) -> list[GenerationResult]:
        """Memory-augmented decoding of a batch, no pauses: `rows` are each prompt's passages
        (None retrieves them). hooks_for(rows): the token loop's hooks, made once the passages
        are known (a guided-decoding method judges the answer against them). answer: this is
        the method's answer (not a stage of it): a streaming request watches it (engine/watch.py)."""
        t0 = time.perf_counter()
        retrieved = [[] for _ in prompts]
        if rows is None:
            retrieved = self.retrieve(prompts)
            rows = [[h.text for h in hits] for hits in retrieved]
        hooks = hooks_for(rows) if hooks_for is not None else []
        if answer:
            hooks = hooks + [w for row in range(len(prompts)) for w in answer_watchers(row=row)]
        text_rows = [[] for _ in prompts]
        if self.config.retrieval.in_prompt:
            text_rows, rows = rows, [[] for _ in prompts]
        offset = self.config.memory.context_offset(any(rows))
        ids = self.prepare(prompts, dec.system_prompt, dec.max_new_tokens, text_rows, offset)

        memories = []
        for row in rows:
            memory = self.new_memory()
            if row:
                memory.add(row, pool="retrieval")
            memories.append(memory)
        mem = self.config.memory
        state = (MemoryState.from_rows([m.units for m in memories], mem.temperature, mem.lse_scale)
                 if any(rows) else None)
        t1 = time.perf_counter()

        input_ids, valid = self.left_pad(ids)
        session = self.session(state, offset)
        loop = TokenLoop(session, Sampler(dec.temperature, dec.top_p, dec.seed), self.stop_ids, dec.max_new_tokens,
                         hooks=hooks)
        conts = loop.run(input_ids, valid)
        t2 = t1 + loop.prefill_s
        t3 = time.perf_counter()

        results = []
        for p, row_ids, memory, cont, hits in zip(prompts, ids, memories, conts, retrieved):
            results.append(
                GenerationResult(
                    prompt=p,
                    text=self.tokenizer.decode(cont.token_ids, skip_special_tokens=True),
                    token_ids=cont.token_ids,
                    logprobs=cont.logprobs,
                    finish_reason=cont.finish_reason,
                    memory=memory.describe(),
                    retrieved=[h.to_dict() for h in hits],
                    stats=PlainStats(
                        prompt_tokens=len(row_ids),
                        new_tokens=len(cont.token_ids),
                        memory_units=len(memory),
                        memory_bytes=memory.footprint()["bytes"],
                        retrieve_encode_s=round(t1 - t0, 4),
                        prefill_s=round(t2 - t1, 4),
                        decode_s=round(t3 - t2, 4),
                        total_s=round(t3 - t0, 4),
                    ),
                )
            )
        return results

    def left_pad(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(r) for r in ids)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
        valid = torch.zeros((len(ids), width), dtype=torch.long)
        for i, r in enumerate(ids):
            input_ids[i, width - len(r) :] = torch.tensor(r)
            valid[i, width - len(r) :] = 1
        return input_ids, valid
