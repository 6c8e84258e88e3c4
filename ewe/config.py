"""Typed, validated configuration. Out-of-range values fail here, before any model work.

Errors name the setting, the value given and the limit (pydantic does the checking;
`ConfigError` only formats its report).
"""
from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class ConfigError(ValueError):
    """A configuration value is missing, unknown or out of range."""


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class ModelConfig(_Section):
    name: str = Field("embedded", description='"embedded" (SmolLM2-135M-Instruct), a local folder, or a hub id')
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    device: str = "cpu"
    attention_impl: Literal["auto", "reference", "fused", "extension"] = "auto"


class MemoryConfig(_Section):
    unit_tokens: int = Field(128, ge=8, le=4096, description="M: the most tokens one unit holds")
    retrieval_units: int = Field(4, ge=0, le=64, description="capacity of the retrieved-passage pool")
    feedback_units: int = Field(2, ge=0, le=64, description="capacity of the fact-checking feedback pool")
    # Measured (benchmarks/unit_start_token.py, 24 Wikipedia summaries, SmolLM2-135M): with the
    # start token the summary's own sentence is more likely in 18 of 24 cases (mean NLL 1.625
    # vs 1.665 nats/token; no memory 3.531), so no attention-sink harm shows here.
    unit_start_token: bool = Field(True, description="begin every unit with the BOS token")
    encoder_cache_units: int = Field(256, ge=0, le=100_000, description="encoded units kept for reuse")
    reencode_context: bool = Field(False, description="re-prefill the context when memory changes")


class RetrievalConfig(_Section):
    source: str | None = Field(
        "embedded",
        description='"embedded" (Wikipedia summaries, built on first use), a datastore folder, or null for none',
    )
    top_k: int = Field(4, ge=1, le=64, description="passages retrieved for the prompt (the initial memory)")
    threshold: float | None = Field(None, description="keep only passages scoring at least this")
    dedup_sources: bool = Field(True, description="at most one chunk per source article")
    placement: Literal["memory", "prompt"] = Field(
        "memory", description='"memory": one unit per passage (EWE); "prompt": prepended as text (the "+RA" baseline)'
    )


class DecodingConfig(_Section):
    max_new_tokens: int = Field(256, ge=1, le=32_768)
    temperature: float = Field(0.0, ge=0.0, le=100.0, description="0 is greedy")
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    seed: int | None = None
    system_prompt: str | None = Field(None, description="None keeps the chat template's default")


class EWEConfig(_Section):
    model: ModelConfig = ModelConfig()
    memory: MemoryConfig = MemoryConfig()
    retrieval: RetrievalConfig = RetrievalConfig()
    decoding: DecodingConfig = DecodingConfig()

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
        data = yaml.safe_load(path.read_text()) or {}
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: the top level must be a mapping of sections")
        try:
            return cls.build(data, **overrides)
        except ConfigError as e:
            raise ConfigError(f"{path}: {e}") from None


def format_errors(e: ValidationError) -> str:
    lines = []
    for err in e.errors():
        where = ".".join(str(x) for x in err["loc"])
        given = f" (got {err['input']!r})" if err["type"] != "missing" else ""
        lines.append(f"{where}: {err['msg']}{given}")
    return "invalid configuration: " + "; ".join(lines)


def _deep_copy(d: dict) -> dict:
    return {k: _deep_copy(v) if isinstance(v, dict) else v for k, v in d.items()}
