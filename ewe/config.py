"""Typed, validated configuration. Out-of-range values fail here, before any model work.

Errors name the setting, the value given and the limit (pydantic does the checking;
`ConfigError` only formats its report).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer, model_validator


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(_Section):
    name: str = Field("embedded", description='"embedded" (SmolLM2-135M-Instruct), a local folder, or a hub id')
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    device: str = "cpu"
    attention_impl: Optional[Literal["auto", "reference", "fused", "extension"]] = Field(
        None, description="memory attention kernel; unset: the EWE_ATTENTION_IMPL environment variable, else auto")
    weights: Optional[Literal["bfloat16", "int8"]] = Field(
        None, description="the linear layers' weights, for a faster decode step (ewe/ops/quantized_linear.py): "
        "unset: model.dtype; bfloat16; int8: one scale per output channel, CPU only, the compiled kernel "
        "(`make ext`; without it the same weights run dequantized, no faster)")

    @model_validator(mode="after")
    def _weights_on_cpu(self):
        if self.weights == "int8" and not self.device.startswith("cpu"):
            raise ValueError(f"model.weights 'int8' runs on CPU only, but model.device is {self.device!r}")
        return self


class MemoryConfig(_Section):
    unit_tokens: int = Field(128, ge=8, le=4096, description="M: the most tokens one unit holds")
    retrieval_units: int = Field(4, ge=0, le=64, description="capacity of the retrieved-passage pool")
    feedback_units: int = Field(2, ge=0, le=64, description="capacity of the fact-checking feedback pool")
    # Measured (benchmarks/memory_vs_prompt.py, 24 Wikipedia summaries, SmolLM2-135M): with the
    # start token the summary's own sentence is more likely in 18 of 24 cases (mean NLL 1.625
    # vs 1.665 nats/token; no memory 3.531), so no attention-sink harm shows here.
    unit_start_token: bool = Field(True, description="begin every unit with the BOS token")
    temperature: float = Field(1.0, gt=0.0, le=4.0, description="APE's T: memory logits divided by T, and the "
                               "memory log-sum-exp multiplied by T * lse_scale before the merge (1: eq. 1)")
    lse_scale: float = Field(1.0, gt=0.0, le=4.0, description="APE's S (1: eq. 1)")
    encoder_cache_units: int = Field(256, ge=0, le=100_000, description="encoded units kept for reuse")
    reencode_context: bool = Field(False, description="re-prefill the context when memory changes")


class RetrievalConfig(_Section):
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


class DecodingConfig(_Section):
    max_new_tokens: int = Field(256, ge=1, le=32_768)
    temperature: float = Field(0.0, ge=0.0, le=100.0, description="0 is greedy")
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = Field(None, ge=0, le=2**63 - 1, description="sampling seed (None: a fresh one each call)")
    system_prompt: str | None = Field(None, description="None keeps the chat template's default")


Trigger = Literal["never", "interval", "entropy", "min_prob"]
FeedbackForm = Literal["refuting", "supporting", "instruction"]


class ControllerConfig(_Section):
    """When to pause, and what a pause may do (EWE section 3.1, appendices B and D).

    A pause happens only for a complete sentence not yet seen by that kind of pause.
    "interval" pauses every N generated tokens (the paper's T_r, T_v); "entropy" pauses
    for a sentence whose mean token entropy exceeds `entropy_threshold`; "min_prob" for
    one whose least likely token has probability below `min_prob_threshold`.
    """

    retrieval_trigger: Trigger = Field("never", description="when to refresh the retrieval pool")
    retrieval_interval: int = Field(1, ge=1, le=100_000, description="T_r, tokens between retrieval pauses")
    verify_trigger: Trigger = Field("never", description="when to fact-check new sentences")
    verify_interval: int = Field(8, ge=1, le=100_000, description="T_v, tokens between verification pauses")
    entropy_threshold: float = Field(2.5, ge=0.0, allow_inf_nan=False, description="nats; higher pauses less often")
    min_prob_threshold: float = Field(0.1, gt=0.0, le=1.0, description="higher pauses more often")
    rewrite_on_retrieval: bool = Field(
        False, description="FLARE-style: regenerate the sentence that triggered a retrieval pause, once"
    )
    feedback: list[FeedbackForm] = Field(
        default_factory=lambda: ["refuting", "supporting"],
        description="feedback forms put into the feedback pool after a failed check, first = kept first "
        "(table 4: refuting = passages judging a claim unsupported, supporting = passages judging one supported, "
        "instruction = 'Please refrain from ...')",
    )
    rewrite_when: Literal["not_supported", "contradicted"] = Field(
        "not_supported", description="not_supported: some claim is not supported (the paper's rule, "
        "not-enough-evidence included); contradicted: some claim is judged unsupported by its evidence"
    )
    max_retries: int = Field(2, ge=0, le=20, description="rewrites of one sentence before giving up on it; "
                             "a rewrite identical to an earlier attempt ends the retries at once")
    retry_temperature: float | None = Field(
        None, gt=0.0, le=10.0, description="sample rewrites at this temperature (null: the decoding settings, "
        "so a greedy rewrite changes only through the new memory)"
    )
    retry_top_p: float = Field(0.9, gt=0.0, le=1.0)
    rewrite_candidates: int = Field(
        1, ge=1, le=16, description="rewrites decoded at once as a batch from the cropped cache and judged "
        "together; the supported one the model finds likeliest is kept (1: the paper's one rewrite at a time)"
    )
    candidate_temperature: float = Field(
        0.8, gt=0.0, le=10.0, description="with rewrite_candidates > 1: the first candidate is greedy, the "
        "others sampled at this temperature (with retry_top_p)"
    )
    rewrite_max_tokens: int = Field(64, ge=4, le=1024, description="the longest candidate rewrite, in tokens")
    feedback_placement: Literal["memory", "prompt"] = Field(
        "memory", description="where the checker's feedback passages go for the rewrite: memory units "
        "(the paper), or text in the prompt of the candidates (which then re-read the prompt once)"
    )
    on_retries_exhausted: Literal["keep_best", "keep_last", "drop", "stop"] = Field(
        "keep_best", description="when no rewrite passes: keep the attempt with the fewest unsupported claims "
        "(never one that looks garbled), the last one, none (drop: the answer goes on from the sentence's "
        "start with another first word), or end the answer before it (stop)"
    )
    max_backtracks: int = Field(12, ge=0, le=1000, description="backtracks allowed per prompt, all sentences together")
    max_total_tokens: int | None = Field(
        None, ge=1, description="tokens decoded per prompt, discarded ones included (default 4 x max_new_tokens)"
    )

    @property
    def active(self) -> bool:
        return self.retrieval_trigger != "never" or self.verify_trigger != "never"


class CheckerConfig(_Section):
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
    judge_threshold: Optional[float] = Field(
        None, gt=0, lt=1, description="judge: P(supported) above which a claim is supported; null: the judge's "
        "recorded operating point (`ewe judge operating-point`), 0.5 where it records none")
    ita_max_depth: int = Field(2, ge=0, le=5, description="ita: levels of sub-claims below a claim at most")
    ita_max_children: int = Field(3, ge=1, le=10, description="ita: sub-claims per node at most")
    ita_span: Literal["llm", "rules"] = Field(
        "llm", description="ita: sub-claims written by checker.llm, or split by the rule-based clause splitter")
    extractor: Literal["rules", "llm"] = Field("rules", description="claim extraction; llm falls back to rules")
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


class CoveConfig(_Section):
    """The CoVe baseline (Chain-of-Verification, Dhuliawala et al. 2023), factor+revise.

    Used only with `method: cove`: baseline answer, planned verification questions, each
    answered on its own (optionally with retrieved passages), a cross-check per answer,
    and a revised answer. Question, answer and check stages decode greedily; the baseline
    and the revised answer use the decoding section.
    """

    retrieval: bool = Field(False, description="answer each verification question with passages retrieved for it")
    top_k: int = Field(3, ge=1, le=64, description="passages retrieved per verification question")
    passages_placement: Literal["memory", "prompt"] = Field(
        "prompt", description='"prompt": the passages as text in the prompt; "memory": one memory unit each'
    )
    max_questions: int = Field(8, ge=1, le=100, description="verification questions kept, first ones first")
    question_tokens: int = Field(128, ge=8, le=32_768, description="tokens for the planned list of questions")
    answer_tokens: int = Field(48, ge=1, le=32_768, description="tokens for each verification answer")
    check_tokens: int = Field(8, ge=1, le=1024, description="tokens for each consistency judgement")


class VerifyRefineConfig(_Section):
    """Streaming-VR and Full-VR (Ko et al., 2025): verify, and refine what fails.

    Used only with `method: streaming-vr` or `method: full-vr` (ewe/methods/verify_refine.py).
    The verifier is the checker section's fact-checker; the refiner is the generator with
    a refine prompt, decoding greedily.
    """

    mode: Literal["live", "offline"] = Field(
        "live", description='streaming-vr: "live" refines each sentence in place and generates on from it; '
                            '"offline" (the paper\'s experiments) refines the finished answer\'s sentences in order')
    open_book: bool = Field(False, description="prepend retrieval.top_k passages retrieved for the prompt to the "
                                               "generation prompt (the refiner sees them too); else closed-book")
    sentence_tokens: int = Field(64, ge=1, le=32_768, description="streaming-vr: tokens for one refined sentence")
    answer_tokens: int | None = Field(None, ge=1, le=32_768,
                                      description="full-vr: tokens for the refined answer (default decoding.max_new_tokens)")
    refiner_evidence: bool = Field(False, description="also show the refiner the checker's best evidence per claim "
                                                      "(not in the paper, whose refiner sees the prompt only)")


class A2RConfig(_Section):
    """A2R, Ask-Assess-Refine (Lee & Lee, 2024): cite, score, feed back, refine.

    Used only with `method: a2r` (ewe/methods/a2r.py). Scores are in [0, 1]: correctness (the
    share of claims the checker finds supported), citation recall and precision (ALCE's).
    """

    max_iterations: int = Field(2, ge=1, le=10, description="K: rounds of feedback at most")
    stop_threshold: float = Field(0.8, ge=0.0, le=1.0, description="stop once the mean of the three scores reaches this")
    correctness_threshold: float = Field(0.8, ge=0.0, le=1.0, description="feedback asks to fix correctness below this")
    citation_recall_threshold: float = Field(0.8, ge=0.0, le=1.0, description="... citation recall below this")
    citation_precision_threshold: float = Field(0.8, ge=0.0, le=1.0, description="... citation precision below this")
    feedback: Literal["llm", "template"] = Field(
        "llm", description='"llm": the generator writes the feedback from the scores (eq. 3); "template": written '
                           "from the scores and the failing statements, no model call")
    feedback_tokens: int = Field(96, ge=1, le=32_768, description="tokens for one feedback (greedy)")
    final: Literal["history", "last"] = Field(
        "history", description='"history": the answer is written once more from every draft and its feedback (eq. 5); '
                               '"last": the last refinement (eq. 4) is the answer')
    assess_final: bool = Field(True, description="also score the returned answer (stats.final_scores)")


METHOD_SECTIONS: dict[str, str] = {  # built-in method -> the one section of its own settings
    "ewe": "controller", "cove": "cove", "streaming-vr": "vr", "full-vr": "vr", "a2r": "a2r",
}
OPTIONS = "options"  # the section of a method registered outside ewe (ewe.methods.registry.register)
OWN_SECTIONS = frozenset({*METHOD_SECTIONS.values(), OPTIONS})  # the sections only one kind of method reads


def own_section(method: str) -> str:
    """The section of `method`'s own settings."""
    return METHOD_SECTIONS.get(method, OPTIONS)


class EWEConfig(_Section):
    """The shared sections (model, memory, retrieval, decoding, checker) and the chosen
    method's own section, the only one present: `controller` for ewe, `cove`, `vr` for
    streaming-vr and full-vr, `a2r`. A section of another method is refused, not ignored."""

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
    controller: Optional[ControllerConfig] = Field(None, description="method ewe: pauses, checks and rewrites")
    cove: Optional[CoveConfig] = Field(None, description="method cove")
    vr: Optional[VerifyRefineConfig] = Field(None, description="methods streaming-vr and full-vr")
    a2r: Optional[A2RConfig] = Field(None, description="method a2r")
    options: Optional[dict[str, Any]] = Field(
        None, description="a registered method's own settings, checked by the method (its Options model)")

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
    def _chosen_method_section(cls, data):
        """Fill in the chosen method's section; refuse the sections of the others."""
        from .methods.registry import known

        if not isinstance(data, dict) or not isinstance(data.get("method", "ewe"), str) or not known(
                data.get("method", "ewe")):
            return data  # not a mapping, not a name, or no method's: the field's check reports it
        method = data.get("method", "ewe")
        own = own_section(method)
        stray = sorted({s for s in OWN_SECTIONS if s != own and data.get(s) is not None})
        if stray:
            def owner(section: str) -> str:
                if section == OPTIONS:
                    return "'options' is for methods registered outside ewe"
                return f"'{section}' is for method {' / '.join(repr(m) for m, o in METHOD_SECTIONS.items() if o == section)}"
            raise ValueError(f"method {method!r} reads only its own section '{own}': {'; '.join(map(owner, stray))} "
                             "(remove it, or choose that method)")
        if data.get(own) is None:
            data = {**data, own: {}}
        return data

    @model_serializer(mode="wrap")
    def _without_absent_sections(self, handler):
        data = handler(self)
        for section in OWN_SECTIONS:
            if data.get(section) is None:
                data.pop(section, None)
        return data

    @property
    def method_section(self) -> "ControllerConfig | CoveConfig | VerifyRefineConfig | A2RConfig | dict":
        """The chosen method's own settings (a registered method's `options` as given)."""
        return getattr(self, own_section(self.method))

    @property
    def pauses(self) -> bool:
        """EWE's controller pauses to retrieve or to check while it writes."""
        return self.controller is not None and self.controller.active

    @property
    def self_checks(self) -> bool:
        """The method runs the fact-checker on its own answer while it writes."""
        if self.method == "ewe":
            return self.controller is not None and self.controller.verify_trigger != "never"
        return self.method in ("streaming-vr", "full-vr", "a2r")

    @model_validator(mode="after")
    def _consistent(self):
        if self.method not in METHOD_SECTIONS:
            from .methods.registry import method_class

            method_class(self.method).read_options(self.options or {})  # wrong options fail with the config
        if self.method == "cove":
            self._cove_consistent()
        if self.method in ("streaming-vr", "full-vr", "a2r") and self.retrieval.source is None:
            # also where vr.open_book and a2r retrieve their passages
            raise ValueError(f"method {self.method!r} checks against evidence from a datastore: set retrieval.source "
                             "(e.g. 'embedded' or a datastore folder)")
        ctl = self.controller
        if ctl is None:
            return self
        if ctl.active and self.retrieval.placement == "prompt":
            raise ValueError("controller pauses need retrieval.placement 'memory' or 'prompt+memory' (feedback goes "
                             "into memory units)")
        if ctl.retrieval_trigger != "never" and self.retrieval.source is None:
            raise ValueError("controller.retrieval_trigger needs a retrieval.source")
        if ctl.retrieval_trigger != "never" and self.memory.retrieval_units == 0:
            raise ValueError("controller.retrieval_trigger needs memory.retrieval_units >= 1")
        return self

    def _cove_consistent(self) -> None:
        cove, ret = self.cove, self.retrieval
        if cove.retrieval and ret.source is None:
            raise ValueError("cove.retrieval needs a retrieval.source (e.g. 'embedded' or a datastore folder)")
        if cove.passages_placement == "memory":
            if ret.placement == "prompt":
                raise ValueError("cove.passages_placement 'memory' conflicts with retrieval.placement 'prompt'; "
                                 "set retrieval.placement to 'memory' (cove.passages_placement decides for CoVe)")
            if cove.retrieval and cove.top_k > self.memory.retrieval_units:
                raise ValueError(f"cove.top_k={cove.top_k} passages do not fit "
                                 f"memory.retrieval_units={self.memory.retrieval_units}")

    @classmethod
    def upgrade_saved(cls, saved: dict) -> dict:
        """A configuration saved before each method had its own section (every section was
        written, the other methods' ones unused): those unused sections removed."""
        if not isinstance(saved, dict) or saved.get("method", "ewe") not in METHOD_SECTIONS:
            return saved  # a registered method's configuration never held the built-ins' sections
        own = METHOD_SECTIONS[saved.get("method", "ewe")]
        return {k: v for k, v in saved.items() if k == own or k not in METHOD_SECTIONS.values()}

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


def error_lines(e: ValidationError, section: str | None = None) -> list[str]:
    """One line naming each wrong key (inside `section`, for a section checked on its own)."""
    lines = []
    for err in e.errors():
        where = ".".join(str(x) for x in ([section] if section else []) + list(err["loc"]))
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "value_error" and not isinstance(err["input"], (str, int, float, bool, type(None))):
            lines.append(f"{where + ': ' if where else ''}{msg}")  # a cross-field check: the input is a whole section
            continue
        given = f" (got {err['input']!r})" if err["type"] != "missing" else ""
        lines.append(f"{where}: {msg}{given}")
    return lines


def _deep_copy(d: dict) -> dict:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in d.items()}
