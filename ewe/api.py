"""The Python API: `EWE` wires a model, its working memory and the decoding engine.

    from ewe import EWE
    ewe = EWE.from_config()                       # the embedded SmolLM2-135M-Instruct
    out = ewe.generate("Tell me a bio of Marie Curie.", passages=[wiki_text])
    print(out.text)
"""
from __future__ import annotations

import time
from typing import Sequence

import torch

from . import tokens
from .errors import InputError, InputTypeError
from .config import ConfigError, DecodingConfig, EWEConfig
from .engine import DecodingSession, Sampler, TokenLoop
from .memory import MemoryState, UnitEncoder, WorkingMemory
from .modeling import patch_model
from .models import load_model
from .result import GenerationResult


class EWE:
    """A causal LM whose attention reads a working memory (EWE, eq. 1)."""

    def __init__(self, model, tokenizer, config: EWEConfig | None = None, datastore=None, fact_checker=None):
        self.config = config or EWEConfig()
        self.model = model
        self.tokenizer = tokenizer
        self._datastore = datastore
        self._fact_checker = fact_checker
        patch_model(model)
        mem, ret = self.config.memory, self.config.retrieval
        if ret.source is not None and ret.placement == "memory" and ret.top_k > mem.retrieval_units:
            raise ConfigError(
                f"retrieval.top_k={ret.top_k} passages do not fit memory.retrieval_units={mem.retrieval_units}"
            )
        self.encoder = UnitEncoder(model, tokenizer, mem.unit_tokens, mem.unit_start_token, mem.encoder_cache_units)
        self.max_positions = int(getattr(model.config, "max_position_embeddings", 2048))
        eos = model.generation_config.eos_token_id if model.generation_config else None
        eos = eos if isinstance(eos, list) else [eos]
        self.stop_ids = {i for i in eos + [tokenizer.eos_token_id] if i is not None}

    @classmethod
    def from_config(cls, config: EWEConfig | dict | str | None = None, **overrides) -> "EWE":
        """Load the model named in `config` (an EWEConfig, a dict, or a YAML path), with dotted overrides."""
        if isinstance(config, str):
            cfg = EWEConfig.from_yaml(config, **overrides)
        elif isinstance(config, EWEConfig):
            cfg = EWEConfig.build(config.model_dump(), **overrides)
        else:
            cfg = EWEConfig.build(config, **overrides)
        model, tokenizer, report = load_model(cfg.model.name, cfg.model.dtype, cfg.model.device)
        ewe = cls(model, tokenizer, cfg)
        ewe.load_report = report
        return ewe

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

    def retrieve(self, queries: list[str], k: int | None = None) -> list[list]:
        """The top `k` (default retrieval.top_k) passages (Hits) for each query, with the configured
        threshold and de-duplication."""
        ret = self.config.retrieval
        if self.datastore is None:
            return [[] for _ in queries]
        return self.datastore.search(queries, k=k or ret.top_k, threshold=ret.threshold,
                                     dedup_sources=ret.dedup_sources)

    @staticmethod
    def prompt_with_passages(prompt: str, passages: list[str]) -> str:
        """The "+RA" baseline's prompt: the passages as numbered text before the request."""
        if not passages:
            return prompt
        listed = "\n".join(f"[{i}] {p}" for i, p in enumerate(passages, 1))
        return f"Relevant passages:\n{listed}\n\n{prompt}"

    def fact_checker(self, need_evidence: bool = True):
        """The configured FactChecker (checker section), with this datastore as its evidence.

        need_evidence: raise if there is no datastore to find evidence in (every check would
        fail); False when the caller gives the evidence itself (`check(..., evidence=...)`).
        """
        if self._fact_checker is None:
            from .retrieval.evidence import DatastoreEvidence
            from .verify.factory import build_fact_checker

            evidence = DatastoreEvidence(self.datastore) if self.datastore is not None else None
            self._fact_checker = build_fact_checker(self.config.checker, evidence, self.as_llm(),
                                                    device=self.config.model.device)
        if need_evidence and getattr(self._fact_checker, "evidence", True) is None:
            raise ConfigError("fact-checking needs evidence, but retrieval.source is null: set it to 'embedded' or a "
                              "datastore folder (or give the evidence: EWE.check(..., evidence=[...]), "
                              "ewe check --evidence)")
        return self._fact_checker

    def check(self, sentence: str, prompt: str | None = None, context: str | None = None, evidence=None):
        """Fact-check one sentence (claims, evidence, verdicts) with the configured checker."""
        if not isinstance(sentence, str) or not sentence.strip():
            raise InputError("sentence is empty")
        checker = self.fact_checker(need_evidence=evidence is None)
        return checker.check_sentence(sentence, context=context, prompt=prompt, evidence=evidence)

    def as_llm(self, max_new_tokens: int = 256):
        """This model as a text-in, text-out function (greedy, no memory, no pauses)."""
        dec = self._decoding(max_new_tokens=max_new_tokens, temperature=0.0)

        def llm(prompt: str) -> str:
            return self._generate_batch([prompt], [[]], dec)[0].text

        return llm

    def new_memory(self) -> WorkingMemory:
        """An empty working memory with this configuration's pools, sharing the unit encoder."""
        return WorkingMemory(self.encoder, self.config.memory.retrieval_units, self.config.memory.feedback_units)

    # -- input checks: all before any model work ---------------------------------------

    def _decoding(self, **overrides) -> DecodingConfig:
        data = self.config.decoding.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        return EWEConfig.build({"decoding": data}).decoding

    def prompt_ids(self, prompt: str, system_prompt: str | None = None) -> list[int]:
        """The prompt through the chat template; its text can never become a control token."""
        return tokens.prompt_ids(self.tokenizer, prompt, system_prompt)

    def _check_prompts(self, prompts, passages):
        single = isinstance(prompts, str)
        if not single and not isinstance(prompts, (list, tuple)):
            raise InputTypeError(f"prompt must be a string or a list of strings, got {type(prompts).__name__}")
        prompts = [prompts] if single else list(prompts)
        if not prompts:
            raise InputError("prompt: an empty list of prompts")
        for i, p in enumerate(prompts):
            name = "prompt" if single else f"prompt[{i}]"
            if not isinstance(p, str):
                raise InputTypeError(f"{name} must be a string, got {type(p).__name__}")
            if not p.strip():
                raise InputError(f"{name} is empty")
        if passages is None:
            return single, prompts, None
        if not isinstance(passages, (list, tuple)):
            got = "a single string" if isinstance(passages, (str, bytes)) else type(passages).__name__
            raise InputTypeError("passages must be a list of passage strings (one passage: [text]), "
                                 f"or one such list per prompt; got {got}")
        if single or (passages and all(isinstance(x, str) for x in passages)):
            rows = [list(passages)] * len(prompts) if single or len(prompts) == 1 else None
            if rows is None:
                raise InputError(
                    f"passages: give one list of passages per prompt ({len(prompts)} prompts), not one flat list"
                )
        else:
            for i, r in enumerate(passages):
                if r is not None and not isinstance(r, (list, tuple)):
                    raise InputTypeError(f"passages[{i}] must be a list of passage strings, got {type(r).__name__}")
            rows = [list(r or []) for r in passages]
            if len(rows) != len(prompts):
                raise InputError(f"passages: {len(rows)} lists for {len(prompts)} prompts")
        cap = self.config.memory.retrieval_units
        for i, row in enumerate(rows):
            if len(row) > cap:
                raise InputError(
                    f"passages[{i}]: {len(row)} passages but memory.retrieval_units={cap} units; "
                    "raise memory.retrieval_units or pass fewer"
                )
            for j, text in enumerate(row):
                if not isinstance(text, str) or not text.strip():
                    raise InputError(f"passages[{i}][{j}] is empty or not a string")
        return single, prompts, rows

    def _check_lengths(self, prompts, ids, offset, max_new_tokens):
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

    # -- generation --------------------------------------------------------------------

    def generate(
        self,
        prompt: str | Sequence[str],
        passages: Sequence[str] | Sequence[Sequence[str]] | None = None,
        *,
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> GenerationResult | list[GenerationResult]:
        """Answer `prompt` (chat template applied) with `passages` in working memory.

        Args:
            prompt: one prompt, or a list of prompts decoded as one batch.
            passages: for one prompt, a list of passage texts; for a batch, one list per
                prompt (or one flat list shared when the batch has a single prompt). Each
                passage becomes one unit of at most memory.unit_tokens tokens (longer ones
                are truncated with a warning). None retrieves retrieval.top_k passages for
                each prompt from the datastore (none when retrieval.source is null); []
                decodes without memory, exactly as the unpatched model does. With
                retrieval.placement "prompt" the passages are prepended as text instead.
                With method "cove" the baseline never reads passages: given passages
                are the evidence for every verification answer (in place of retrieval,
                placed by cove.passages_placement); None retrieves cove.top_k per
                question when cove.retrieval is on, else none. With methods "streaming-vr"
                and "full-vr" passages are listed before the prompt; None retrieves them
                when vr.open_book is on, else none. With method "a2r" passages are the
                documents the answer cites; None retrieves retrieval.top_k of them.
            max_new_tokens, temperature, top_p, seed: override the configuration's decoding
                settings; temperature 0 is greedy.

        Returns:
            A GenerationResult (a list of them for a list of prompts): the text, the token
            ids, each token's log-probability under the model, why decoding stopped, the
            memory's units and timings.

        Raises:
            ValueError / TypeError / ConfigError naming the argument, before any model work.
        """
        single, prompts, rows = self._check_prompts(prompt, passages)
        dec = self._decoding(max_new_tokens=max_new_tokens, temperature=temperature, top_p=top_p, seed=seed)
        if self.config.method == "cove":
            from .methods.cove import CoVe

            ids = [self.prompt_ids(p, dec.system_prompt) for p in prompts]
            self._check_lengths(prompts, ids, 0, dec.max_new_tokens)  # the baseline's prompt, before model work
            cove = CoVe(self)
            results = [cove.run(p, dec, None if rows is None else rows[i]) for i, p in enumerate(prompts)]
        elif self.config.method in ("a2r", "streaming-vr", "full-vr"):
            if self.config.method == "a2r":
                from .methods.a2r import A2R as Method
            else:
                from .methods.verify_refine import VerifyRefine as Method
            method = Method(self)
            results = [method.run(p, dec, None if rows is None else rows[i]) for i, p in enumerate(prompts)]
        elif self.config.controller.active:
            from .controller import Controller

            controller = Controller(self)
            results = [controller.run(p, dec, None if rows is None else rows[i]) for i, p in enumerate(prompts)]
        else:
            results = self._generate_batch(prompts, rows, dec)
        return results[0] if single else results

    def _generate_batch(self, prompts: list[str], rows, dec: DecodingConfig) -> list[GenerationResult]:
        """Plain memory-augmented decoding of a batch: no pauses."""
        t0 = time.perf_counter()
        retrieved = [[] for _ in prompts]
        if rows is None:
            retrieved = self.retrieve(prompts)
            rows = [[h.text for h in hits] for hits in retrieved]
        texts = prompts
        if self.config.retrieval.placement == "prompt":
            texts = [self.prompt_with_passages(p, r) for p, r in zip(prompts, rows)]
            rows = [[] for _ in prompts]
        ids = [self.prompt_ids(t, dec.system_prompt) for t in texts]
        offset = self.config.memory.unit_tokens if any(rows) else 0
        self._check_lengths(prompts, ids, offset, dec.max_new_tokens)

        memories = []
        for row in rows:
            memory = self.new_memory()
            if row:
                memory.add(row, pool="retrieval")
            memories.append(memory)
        state = MemoryState.from_rows([m.units for m in memories]) if any(rows) else None
        t1 = time.perf_counter()

        input_ids, valid = self._left_pad(ids)
        session = DecodingSession(self.model, state, offset, self.config.model.attention_impl)
        loop = TokenLoop(session, Sampler(dec.temperature, dec.top_p, dec.seed), self.stop_ids, dec.max_new_tokens)
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
                    retrieved=[{"id": h.id, "title": h.title, "score": round(float(h.score), 4)} for h in hits],
                    stats={
                        "prompt_tokens": len(row_ids),
                        "new_tokens": len(cont.token_ids),
                        "memory_units": len(memory),
                        "memory_bytes": memory.footprint()["bytes"],
                        "retrieve_encode_s": round(t1 - t0, 4),
                        "prefill_s": round(t2 - t1, 4),
                        "decode_s": round(t3 - t2, 4),
                        "total_s": round(t3 - t0, 4),
                    },
                )
            )
        return results

    def _left_pad(self, ids: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(len(r) for r in ids)
        pad = self.tokenizer.pad_token_id if self.tokenizer.pad_token_id is not None else 0
        input_ids = torch.full((len(ids), width), pad, dtype=torch.long)
        valid = torch.zeros((len(ids), width), dtype=torch.long)
        for i, r in enumerate(ids):
            input_ids[i, width - len(r) :] = torch.tensor(r)
            valid[i, width - len(r) :] = 1
        return input_ids, valid


__all__ = ["EWE", "GenerationResult", "ConfigError"]
