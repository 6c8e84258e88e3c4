"""Typed, validated configuration. Out-of-range values fail here, before any model work.

Errors name the setting, the value given and the limit (pydantic does the checking;
`ConfigError` only formats its report).
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .settings import Settings, error_lines


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range."""


SHARED_SECTIONS = ("model", "memory", "retrieval", "decoding", "checker")  # what every method reads


class ModelConfig(Settings):
    name: str = Field("embedded", description='"embedded" (SmolLM2-135M-Instruct), a local folder, or a hub id')
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    device: str = "cpu"
    attention_impl: Optional[Literal["auto", "reference", "fused", "extension", "flash"]] = Field(
        None, description="memory attention kernel; unset: the EWE_ATTENTION_IMPL environment variable, else auto")
    weights: Optional[Literal["bfloat16", "int8"]] = Field(
        None, description="the linear layers' weights, for a faster decode step (ewe/ops/quantized_linear.py): "
        "unset: model.dtype; bfloat16; int8: one scale per output channel, CPU only, the compiled kernel "
        "(`make ext`; without it the same weights run dequantized, no faster)")
    memory_adapter: str = Field(
        "auto", min_length=1, description='the LoRA adapter that teaches the model to read memory units '
        '(ewe/memory/adapter.py, `ewe train memory`): "auto", the shipped one for the embedded model and none for '
        'any other; "none"; or an adapter folder. Refused for a model it was not trained on')

    @model_validator(mode="after")
    def _weights_on_cpu(self):
        if self.weights == "int8" and not self.device.startswith("cpu"):
            raise ValueError(f"model.weights 'int8' runs on CPU only, but model.device is {self.device!r}")
        return self


class MemoryConfig(Settings):
    unit_tokens: int = Field(128, ge=8, le=4096, description="M: the most tokens one unit holds")
    retrieval_units: int = Field(4, ge=0, le=64, description="capacity of the retrieved-passage pool")
    feedback_units: int = Field(2, ge=0, le=64, description="capacity of the fact-checking feedback pool")
    subject_units: int = Field(0, ge=0, le=64, description="with a controller: the prompt's subject resolved to its "
                               "article in the datastore (controller/subject_article.py), its first subject_units "
                               "chunks pinned in memory for the whole answer, never evicted; 0: none")
    # Measured (benchmarks/memory_vs_prompt.py, 24 Wikipedia summaries, SmolLM2-135M): with the
    # start token the summary's own sentence is more likely in 18 of 24 cases (mean NLL 1.625
    # vs 1.665 nats/token; no memory 3.531), so no attention-sink harm shows here.
    unit_start_token: bool = Field(True, description="begin every unit with the BOS token")
    unit_text: Literal["passage", "body"] = Field(
        "passage", description='what a unit holds of a passage: "passage" as retrieved ("Title (description): '
                               'text"), "body" its text without the head (ewe/retrieval/in_prompt.py UNIT_TEXTS)')
    temperature: float = Field(1.0, gt=0.0, le=4.0, description="APE's T: memory logits divided by T, and the "
                               "memory log-sum-exp multiplied by T * lse_scale before the merge (1: eq. 1)")
    lse_scale: float = Field(1.0, gt=0.0, le=4.0, description="APE's S (1: eq. 1)")
    encoder_cache_units: int = Field(256, ge=0, le=100_000, description="encoded units kept for reuse")
    reencode_context: bool = Field(False, description="re-prefill the context when memory changes")

    def context_offset(self, reads_memory: bool | None = None) -> int:
        """Where an answer's context positions start: after the unit_tokens positions each unit is
        encoded at, when the answer reads memory, so no context token shares a unit's position; 0
        when it reads none. None: whenever a pool has room (a controlled answer, whose memory fills
        while it decodes)."""
        if reads_memory is None:
            reads_memory = bool(self.retrieval_units + self.feedback_units + self.subject_units)
        return self.unit_tokens if reads_memory else 0


class RetrievalConfig(Settings):
    source: str | None = Field(
        "embedded",
        description='"embedded" (Wikipedia summaries, built on first use), a datastore folder, or null for none',
    )
    top_k: int = Field(4, ge=1, le=64, description="passages retrieved for the prompt (the initial memory)")
    threshold: float | None = Field(None, allow_inf_nan=False, description="keep only passages scoring at least this")
    dedup_sources: bool = Field(True, description="at most one chunk per source article")
    placement: Literal["memory", "prompt", "prompt+memory"] = Field(
        "memory", description='"memory": one unit per passage (EWE); "prompt": written into the prompt as text '
                              '(the "+RA" baseline); '
                              '"prompt+memory": the passages retrieved for the prompt as text, and what '
                              "arrives while decoding (refreshed retrieval, the checker's feedback) in memory units"
    )

    prompt_format: Literal["after", "numbered", "articles", "background"] = Field(
        "after", description='how passages are written into a prompt (ewe/retrieval/in_prompt.py): "after" puts '
                             'their text after the request as background (the model copies no passage head); '
                             '"numbered" is the list before the request that ewe used until issue 30'
    )

    @property
    def in_prompt(self) -> bool:
        """The passages retrieved for (or given with) the prompt are written into it as text."""
        return self.placement in ("prompt", "prompt+memory")


class DecodingConfig(Settings):
    max_new_tokens: int = Field(256, ge=1, le=32_768)
    temperature: float = Field(0.0, ge=0.0, le=100.0, description="0 is greedy")
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = Field(None, ge=0, le=2**63 - 1, description="sampling seed (None: a fresh one each call)")
    system_prompt: str | None = Field(None, description="None keeps the chat template's default")
    kv_cache: Literal["dynamic", "static"] = Field(
        "dynamic", description="static: the KV cache allocated once for the prompt plus max_new_tokens, a crop "
        "moves an index (ewe/engine/static_cache.py); on a CUDA device its decode steps replay a captured CUDA "
        "graph (decoding.cuda_graphs)")
    cuda_graphs: bool = Field(True, description="kv_cache static on a CUDA device: capture one decode step "
                              "(memory attention included) as a CUDA graph and replay it per token")
    compile: bool = Field(False, description="kv_cache static on CPU: compile the fixed-shape decode step with "
                          "torch.compile (measured 1.40x per step on 2 cores, after about 16 s of compiling; each "
                          "new shape, e.g. another batch size, compiles again)")

    @model_validator(mode="after")
    def _compile_needs_static(self):
        if self.compile and self.kv_cache != "static":
            raise ValueError("decoding.compile compiles the static cache's fixed-shape step: set decoding.kv_cache "
                             "'static' too")
        return self


class CheckerConfig(Settings):
    """The fact-checker: claim extraction, evidence from the datastore, a verdict backend."""

    backend: Literal["alignment", "judge", "nli", "llm_judge", "http", "ita"] = Field(
        "judge", description="judge: the offline default, a trained judge (checker.judge: minilm-cross ships; "
        "`ewe judge train` makes others); alignment: the fast heuristic (MiniLM + number/name/negation rules), "
        "and `ewe eval`'s default scorer; nli: a local HF NLI checkpoint; "
        "llm_judge: the generator (or http) as judge; http: an OpenAI-compatible endpoint; "
        "ita: Iterative Tree Analysis over ita_base (sub-claims verified in a tree)"
    )
    ita_base: Literal["alignment", "judge", "nli", "llm_judge", "http"] = Field(
        "judge", description="ita: the backend that judges each node of the tree")
    judge: str = Field("minilm-cross", description="judge: a shipped judge (minilm-cross) or a folder written by "
                       "`ewe judge train`")
    reject_repeats: bool = Field(
        True, description="every method that checks: a sentence that adds no claim beyond the answer so far "
        "fails its check (trace reason 'repeats'). EWE's loop keeps a candidate rewrite only if it adds a "
        "supported claim, and ends the answer where a repeat cannot be replaced by anything new (a shorter true "
        "answer beats a padded one); Streaming-VR ends the answer before a repeat; Full-VR, A2R and CoVe drop "
        "the repeated sentences of the answer they return"
    )
    reject_degenerate: bool = Field(
        True, description="EWE's loop: a sentence that is no answer fails its check whatever its claims "
        "(ewe/verify/degenerate.py; trace reasons 'loop': it repeats a clause of its own, 'meta': it talks to "
        "the user or about the answer, 'heading': a passage's \"Title (description)\" head on its own line or "
        "opening the passage's text copied, or a \"Label: value\" field, 'garbled': fused or tripled words, or "
        "another language than the prompt's), and no candidate rewrite of that kind is kept"
    )
    reject_off_subject: bool = Field(
        True, description="a sentence about another subject than the prompt's fails its check whatever its "
        "claims (trace reason 'off_subject'; ewe/verify/subject.py off_subject_of): in a bio (a bio of, who was) "
        "its grammatical subject names someone else and it neither names the person nor refers back to them by "
        "a personal pronoun; in any answer about a person or a thing with a name of capitalized words, its "
        "subject is a common noun spoken of in general ('A tower is a tall structure' about the Eiffel Tower, "
        "'The tiger is a large cat' about Tiger Woods). An answer about a thing may name its builders and makers"
    )
    judge_threshold: Optional[float] = Field(
        None, gt=0, lt=1, description="judge: P(supported) above which a claim is supported; null: the judge's "
        "recorded operating point (`ewe judge operating-point`), 0.5 where it records none")
    ita_max_depth: int = Field(2, ge=0, le=5, description="ita: levels of sub-claims below a claim at most")
    ita_max_children: int = Field(3, ge=1, le=10, description="ita: sub-claims per node at most")
    veto: Literal["none", "contradiction"] = Field(
        "none", description="contradiction: a verdict is overruled to unsupported when the evidence sentence the claim "
        "aligns with states another number of the same kind, or the opposite by negation (the alignment checker's "
        "rules; ewe/verify/veto.py), for the judge flat and at each node of ita")
    ita_span_accepted: bool = Field(
        False, description="ita: also split a claim its own evidence accepts, and reject it when a sub-claim is "
        "rejected (the paper spans only unsubstantiated nodes; a small judge accepts a claim that matches its "
        "passage on most words and holds one wrong detail)")
    ita_unsure_below: float = Field(
        0.0, ge=0, le=1, description="ita: an accepted node whose base score (the judge's P(supported)) is below this "
        "is unsure: it is split as with ita_span_accepted, and a rejected sub-claim rejects it; 0: never (the paper's "
        "delta, which spans only what the verifier leaves unsubstantiated)")
    ita_span: Literal["llm", "rules"] = Field(
        "llm", description="ita: sub-claims written by checker.llm, or split by the rule-based clause splitter")
    extractor: Literal["rules", "atomic", "llm"] = Field(
        "rules", description="claim extraction: the rule splitter's clauses; atomic: also one claim per predicate noun "
        "of a list (the scorer's unit, configs/eval.yaml); llm falls back to rules")
    llm: Literal["generator", "http"] = Field("generator", description="the model behind the llm extractor / judge")
    evidence_k: int = Field(3, ge=1, le=50, description="passages retrieved per claim")
    query_with_prompt: bool = Field(False, description="search evidence with prompt + claim")
    bind_subjects: bool = Field(True, description="judge a claim only against what each passage says about the "
                                "claim's subject: a passage about another person keeps just the sentences naming "
                                "the claim's subject, or is dropped for it (ewe/verify/subject.py)")
    nli_model: str | None = Field(None, description="local folder of a sequence-classification NLI model")
    nli_label_map: dict[str, str] | None = Field(None, description="model label -> supported|unsupported|not_enough_evidence")
    http_base_url: str | None = None
    http_model: str | None = None
    http_api_key_env: str | None = "OPENAI_API_KEY"
    http_timeout_s: float = Field(30.0, gt=0, le=600)
    http_retries: int = Field(2, ge=0, le=10)

    @model_validator(mode="after")
    def _backend_needs(self):
        judge = self.ita_base if self.backend == "ita" else self.backend
        if judge == "nli" and not self.nli_model:
            raise ValueError("checker.backend 'nli' needs checker.nli_model (a local checkpoint folder)")
        span_llm = self.backend == "ita" and self.ita_span == "llm"
        uses_http = judge == "http" or (self.llm == "http" and (judge == "llm_judge" or self.extractor == "llm" or span_llm))
        if uses_http and not (self.http_base_url and self.http_model):
            raise ValueError("an http checker needs checker.http_base_url and checker.http_model")
        return self


class EWEConfig(BaseModel):
    """The shared sections (model, memory, retrieval, decoding, checker) and the chosen
    method's own section, the only other one: each method's module defines it
    (`Method.section`, `Method.Options`; EWE's is `controller`). A section of another method
    is refused, not ignored."""

    model_config = ConfigDict(extra="allow", validate_assignment=True)  # extra: the method's own section

    method: str = Field(
        "ewe", description='"ewe": memory-augmented decoding (+ controller); "cove": the Chain-of-Verification '
                           'baseline; "streaming-vr" / "full-vr": verify and refine per sentence / per answer; '
                           '"a2r": Ask-Assess-Refine; or the name of a method registered with '
                           'ewe.methods.registry.register (its settings go in `options`)'
    )
    model: ModelConfig = ModelConfig()
    memory: MemoryConfig = MemoryConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    decoding: DecodingConfig = DecodingConfig()
    checker: CheckerConfig = CheckerConfig()

    @field_validator("method")
    @classmethod
    def _registered(cls, name: str) -> str:
        from .methods.registry import known, names

        if not known(name):
            raise ValueError(f"not a registered method (methods: {', '.join(names())}; a method of "
                             "your own is registered with ewe.methods.registry.register before its configuration "
                             "is read)")
        return name

    @model_validator(mode="before")
    @classmethod
    def _only_the_methods_section(cls, data):
        """Refuse a section the chosen method does not read (another method's, or a typo)."""
        from .methods.registry import known, method_class, section_owners

        if not isinstance(data, dict) or not isinstance(data.get("method", "ewe"), str) or not known(
                data.get("method", "ewe")):
            return data  # not a mapping, not a name, or no method's: the field's check reports it
        method = data.get("method", "ewe")
        own = method_class(method).section
        data = {k: v for k, v in data.items() if k in cls.model_fields or k == own or v is not None}
        stray = sorted(k for k in data if k not in cls.model_fields and k != own)
        owned = {k: section_owners(k) for k in stray}
        unknown = [k for k in stray if not owned[k] and k != "options"]
        if unknown:
            raise ValueError("; ".join(f"{k}: not a section (sections: method, {', '.join(SHARED_SECTIONS)}, and "
                                       f"'{own}', the settings of method {method!r})" for k in unknown))
        if stray:
            def owner(section: str) -> str:
                if section == "options":
                    return "'options' is for methods registered outside ewe"
                return f"'{section}' is for method {' / '.join(map(repr, owned[section]))}"
            raise ValueError(f"method {method!r} reads only its own section '{own}': {'; '.join(map(owner, stray))} "
                             "(remove it, or choose that method)")
        return data

    @model_validator(mode="after")
    def _the_methods_settings(self):
        """The method's own section checked by its settings model, then the whole by the method."""
        from .methods.registry import method_class

        cls = method_class(self.method)
        extra = self.__pydantic_extra__
        given = extra.get(cls.section)
        if cls.Options is not None and isinstance(given, cls.Options):
            settings = given  # already checked (a copy, or a section assigned as a model)
        else:
            settings = cls.read_options(given.model_dump() if isinstance(given, BaseModel) else given)
        if settings is None:
            extra.pop(cls.section, None)
        else:
            extra[cls.section] = settings
        cls.check_config(self)
        return self

    @property
    def method_section(self) -> Settings | BaseModel | None:
        """The chosen method's own settings (None for a method that takes none)."""
        from .methods.registry import method_class

        return (self.__pydantic_extra__ or {}).get(method_class(self.method).section)

    @property
    def pauses(self) -> bool:
        """The method pauses to retrieve or to check while it writes (EWE's controller)."""
        from .methods.registry import method_class

        return method_class(self.method).pauses(self)

    @property
    def self_checks(self) -> bool:
        """The method runs the fact-checker on its own answer while it writes."""
        from .methods.registry import method_class

        return method_class(self.method).checks_itself(self)

    @classmethod
    def upgrade_saved(cls, saved: dict) -> dict:
        """A configuration saved before each method had its own section (every built-in
        method's section was written, the others unused): those unused sections removed."""
        legacy = {"ewe": "controller", "cove": "cove", "streaming-vr": "vr", "full-vr": "vr", "a2r": "a2r"}
        if not isinstance(saved, dict) or saved.get("method", "ewe") not in legacy:
            return saved  # a registered method's configuration never held the built-ins' sections
        own = legacy[saved.get("method", "ewe")]
        return {k: v for k, v in saved.items() if k == own or k not in legacy.values()}

    @classmethod
    def build(cls, data: dict | None = None, **overrides) -> "EWEConfig":
        """Validate `data` with dotted overrides applied, e.g. build(cfg, **{"memory.unit_tokens": 64})."""
        data = _deep_copy(data or {})
        for dotted, value in overrides.items():
            node = data
            *parents, leaf = dotted.split(".")
            for p in parents:
                node = node.setdefault(p, {})
            node[leaf] = value
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(format_errors(e)) from None

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides) -> "EWEConfig":
        path = Path(path)
        if not path.exists():
            raise ConfigError(f"config file not found: {path}")
        if not path.is_file():
            raise ConfigError(f"--config {path}: not a file (give a YAML file such as configs/ewe.yaml)")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except UnicodeDecodeError as e:
            raise ConfigError(f"{path}: not UTF-8 text (byte {e.start})") from None
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
            problem = getattr(e, "problem", None) or str(e).splitlines()[0]
            if "constructor" in str(problem) or "tag" in str(problem):
                problem = f"{problem} (YAML tags such as !!python are not allowed: configs hold plain values)"
            raise ConfigError(f"{where}: not valid YAML: {problem}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        if not data:  # an empty file is a mistake more often than a wish for every default
            raise ConfigError(f"{path}: holds no settings; leave out --config for the defaults, "
                              "or start from a file in configs/")
        try:
            return cls.build(data, **overrides)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None


def format_errors(e: ValidationError) -> str:
    return "invalid configuration: " + "; ".join(error_lines(e))


def _deep_copy(d: dict) -> dict:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in d.items()}
