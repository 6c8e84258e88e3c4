"""The Python API: `EWE` is the thin public facade over a Runtime and the method registry.

    from ewe import EWE
    ewe = EWE.from_config()                       # the embedded SmolLM2-135M-Instruct
    out = ewe.generate("Tell me a bio of Marie Curie.", passages=[wiki_text])
    print(out.text)

`EWE` validates what users give it, then hands the work to the configured method (built
with the Runtime, ewe/runtime.py, which loads each part on first use).
"""
from __future__ import annotations

import numbers
import os
from typing import Iterator, Sequence

from .checks import passage_problem
from .config import ConfigError, DecodingConfig, EWEConfig
from .errors import InputError, InputTypeError
from .memory import WorkingMemory
from .methods.registry import method_class
from .result import GenerationResult
from .runtime import Runtime
from .verify.types import Evidence


def _runtime_part(name: str, doc: str) -> property:
    """A read-only view of the Runtime's part `name` (the facade keeps no state of its own)."""
    return property(lambda self: getattr(self.runtime, name), doc=doc)


class EWE:
    """A causal LM whose attention reads a working memory (EWE, eq. 1)."""

    def __init__(self, model, tokenizer, config: EWEConfig | None = None, datastore=None, fact_checker=None,
                 memory_adapter=None):
        self.runtime = Runtime(config or EWEConfig(), model, tokenizer, datastore, fact_checker, memory_adapter)

    @classmethod
    def from_runtime(cls, runtime: Runtime, *, load_model: bool = True) -> "EWE":
        """The facade over an existing Runtime (its model is loaded now, unless `load_model` is
        False: then on first use)."""
        ewe = cls.__new__(cls)
        ewe.runtime = runtime
        if load_model:
            _ = runtime.model
        return ewe

    @classmethod
    def from_config(cls, config: EWEConfig | dict | str | None = None, *, load_model: bool = True,
                    **overrides) -> "EWE":
        """Load the model named in `config` (an EWEConfig, a dict, or a YAML path), with dotted overrides.

        load_model: False loads it on first use instead, for callers that may never generate
        (fact-checking with the judge and the rule-based claim extractor needs no generator).
        """
        if isinstance(config, (str, os.PathLike)):
            cfg = EWEConfig.from_yaml(config, **overrides)
        elif isinstance(config, EWEConfig):
            cfg = EWEConfig.build(config.model_dump(), **overrides)
        elif config is None or isinstance(config, dict):
            cfg = EWEConfig.build(config, **overrides)
        else:
            raise InputTypeError("config must be an EWEConfig, a dict, or the path of a YAML file, "
                                 f"got {type(config).__name__}")
        return cls.from_runtime(Runtime(cfg), load_model=load_model)

    # -- the runtime's parts, for users of the facade ---------------------------------------

    config = _runtime_part("config", "The validated configuration (EWEConfig).")
    model = _runtime_part("model", "The generator, with EWE's attention registered.")
    tokenizer = _runtime_part("tokenizer", "The generator's tokenizer.")
    encoder = _runtime_part("encoder", "Encodes passages into memory units.")
    stop_ids = _runtime_part("stop_ids", "Token ids that end an answer.")
    max_positions = _runtime_part("max_positions", "The context the model holds, in positions.")
    load_report = _runtime_part("load_report", "How the model was loaded (from_config): source, seconds, from cache.")
    datastore = _runtime_part("datastore", "The datastore (retrieval.source), loaded on first use; None if unset.")

    def retrieve(self, queries: list[str], k: int | None = None) -> list[list]:
        """The top `k` (default retrieval.top_k) passages (Hits) for each query."""
        return self.runtime.retrieve(queries, k)

    def prompt_with_passages(self, prompt: str, passages: list[str]) -> str:
        """`prompt` with `passages` as text, in the configured retrieval.prompt_format."""
        return self.runtime.prompt_with_passages(prompt, passages)

    def fact_checker(self, need_evidence: bool = True):
        """The configured FactChecker (checker section), with this datastore as its evidence."""
        return self.runtime.fact_checker(need_evidence)

    def critic(self, need_evidence: bool = True):
        """A Critic over the configured checker: `critic().critique(text)` finds the text's wrong
        claims, with reasons, references and (checker.backend ita) verification trees."""
        from .critique import Critic

        return Critic(self.fact_checker(need_evidence))

    def check(self, sentence: str, prompt: str | None = None, context: str | None = None, evidence=None):
        """Fact-check one sentence (claims, evidence, verdicts) with the configured checker."""
        if not isinstance(sentence, str) or not sentence.strip():
            raise InputError("sentence is empty")
        _refuse_non_text(sentence, "sentence")
        for name, value in (("prompt", prompt), ("context", context)):
            if value is not None:
                if not isinstance(value, str):
                    raise InputTypeError(f"{name} must be a string, got {type(value).__name__}")
                _refuse_non_text(value, name)
        if evidence is not None:
            if not isinstance(evidence, (list, tuple)):
                got = "a single string" if isinstance(evidence, (str, bytes)) else type(evidence).__name__
                raise InputTypeError(f"evidence must be a list of passages (one passage: [text]); got {got}")
            evidence = [_given_passage(p, f"evidence[{i}]") for i, p in enumerate(evidence)]
        checker = self.fact_checker(need_evidence=evidence is None)
        return checker.check_sentence(sentence, context=context, prompt=prompt, evidence=evidence)

    def as_llm(self, max_new_tokens: int = 256):
        """This model as a text-in, text-out function (greedy, no memory, no pauses)."""
        return self.runtime.as_llm(max_new_tokens)

    def new_memory(self) -> WorkingMemory:
        """An empty working memory with this configuration's pools, sharing the unit encoder."""
        return self.runtime.new_memory()

    def prompt_ids(self, prompt: str, system_prompt: str | None = None) -> list[int]:
        """The prompt through the chat template; its text can never become a control token."""
        return self.runtime.prompt_ids(prompt, system_prompt)

    # -- input checks: all before any model work ---------------------------------------

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
            _refuse_non_text(p, name)
        if passages is None:
            return single, prompts, None
        if not isinstance(passages, (list, tuple)):
            got = "a single string" if isinstance(passages, (str, bytes)) else type(passages).__name__
            raise InputTypeError("passages must be a list of passage strings (one passage: [text]), "
                                 f"or one such list per prompt; got {got}")
        if single or (passages and all(isinstance(x, (str, dict)) for x in passages)):
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
                if isinstance(text, dict):  # {"title", "text"}: written "Title: text", as retrieved passages are
                    given = _given_passage(text, f"passages[{i}][{j}]")
                    row[j] = f"{given.title}: {given.text}" if given.title else given.text
                    continue
                if not isinstance(text, str) or not text.strip():
                    what = "is empty" if isinstance(text, str) else f"must be a string, got {type(text).__name__}"
                    raise InputError(f"passages[{i}][{j}] {what}")
                _refuse_non_text(text, f"passages[{i}][{j}]")
        return single, prompts, rows

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
                retrieval.placement "prompt" (or "prompt+memory") the passages are written
                into the prompt as text instead (retrieval.prompt_format); with
                "prompt+memory" the controller's later passages and feedback still go
                into memory units.
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
        results = method_class(self.config.method)(self.runtime).run_batch(prompts, dec, rows)
        return results[0] if single else results

    def stream(
        self,
        prompt: str,
        passages: Sequence[str] | None = None,
        *,
        max_new_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        seed: int | None = None,
    ) -> Iterator:
        """Answer one `prompt` as `generate` does, yielding events while it is written:
        `TextDelta` (text appended), `Retraction` (the text from character `at` on is withdrawn
        because the controller removed it: its reason and the evidence it put into memory),
        and last `Finished` (the GenerationResult). Applying the events in order
        (`ewe.serving.apply_events`) gives the final text. The answer is decoded in a worker
        thread; stopping early (closing the iterator) cancels it at its next step.

            for event in ewe.stream("Tell me a bio of Marie Curie."):
                if event.type == "text": print(event.text, end="")
                elif event.type == "retraction": print(f"\n[withdrawn: {event.reason}]")

        Raises ValueError / TypeError naming the argument before any model work (as generate)."""
        from .serving.stream import stream_in_thread

        prompt, passages, dec = self.check_request(prompt, passages, max_new_tokens=max_new_tokens,
                                                   temperature=temperature, top_p=top_p, seed=seed)
        return stream_in_thread(self.runtime, prompt, dec, passages)

    def check_request(self, prompt: str, passages: Sequence[str] | None = None, *, system_prompt: str | None = None,
                      **decoding) -> tuple[str, list[str] | None, DecodingConfig]:
        """One prompt's request checked as `generate` checks it, before any model work: the prompt,
        its passages (None: retrieve) and the decoding settings with `decoding`'s overrides
        (max_new_tokens, temperature, top_p, seed; None keeps the configured value) and
        `system_prompt`. A ValueError / TypeError names what is wrong."""
        if not isinstance(prompt, str):
            raise InputTypeError(f"prompt must be a string (one request answers one prompt), got "
                                 f"{type(prompt).__name__}")
        if system_prompt is not None:
            if not isinstance(system_prompt, str):
                raise InputTypeError(f"system_prompt must be a string, got {type(system_prompt).__name__}")
            _refuse_non_text(system_prompt, "system_prompt")
        _, [prompt], rows = self._check_prompts(prompt, passages)
        return prompt, None if rows is None else rows[0], self._decoding(system_prompt=system_prompt, **decoding)

    def _decoding(self, system_prompt: str | None = None, **given) -> DecodingConfig:
        """The decoding settings with the given overrides (None keeps the configured one), checked."""
        for name, value in given.items():
            # a bool is an int to Python and a digit string passes the configuration's lax parsing:
            # max_new_tokens=True would quietly decode one token
            if value is not None and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
                raise InputTypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
        return self.runtime.decoding(system_prompt=system_prompt, **given)


def _refuse_non_text(text: str, name: str) -> None:
    """A string holding half a surrogate pair ("\\ud800" in JSON, a byte that is not UTF-8 in a
    command-line argument) is not text: the tokenizer would fail on it with a message naming
    nothing of the caller's."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise InputError(f"{name} is not valid text: an unpaired surrogate \\u{ord(text[e.start]):04x} at character "
                         f"{e.start} (a broken \\u escape, or bytes that are not UTF-8)") from None


__all__ = ["EWE", "GenerationResult", "ConfigError"]


def _given_passage(passage, where: str) -> Evidence:
    """A passage given to `check` or `generate`: its text, or {"title", "text"} (the title says whom
    it is about; without one, whom it is about is read from its opening, ewe/verify/subject.py)."""
    problem = passage_problem(passage)
    if problem is not None:
        part, what = problem
        raise (InputTypeError if part == ".title" else InputError)(f"{where}{part} {what}")
    title, text = (passage.get("title", ""), passage["text"]) if isinstance(passage, dict) else ("", passage)
    _refuse_non_text(title, f"{where}.title")
    _refuse_non_text(text, f"{where}.text" if isinstance(passage, dict) else where)
    return Evidence(text=text, title=title)
