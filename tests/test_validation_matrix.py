"""A validation matrix over every bounded CLI flag, configuration field and API argument.

For each bound: the value just inside is accepted, the value at the bound is accepted (ge, le)
or refused (gt, lt) as declared, and the value just outside is refused with an error that names
the flag or field and what is wrong. Floats are also refused as NaN and +-infinity.

The bounds are enumerated, not listed: the argparse tree that `ewe.cli.build_parser()` builds
(every action typed with a function of `ewe.argtypes`, and every flag that sets a configuration
field), the pydantic fields of `EWEConfig` and its sections (annotated_types Ge/Gt/Le/Lt and
Literal choices), and the keyword arguments of `EWE.generate`. A new bounded flag or field is
covered without touching this file; each enumeration also asserts a minimum size, so that the
matrix cannot silently test nothing. No real model is loaded: CLI flags are parsed only (or go
through `cli.main` where it fails before any model), and `EWE.generate` runs on the tiny model.
"""
from __future__ import annotations

import argparse
import inspect
import math
import re
import subprocess
import sys
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import annotated_types as at
import pytest
from pydantic import BaseModel, ValidationError

from ewe import argtypes, cli
from ewe.api import EWE
from ewe.config import ConfigError, EWEConfig
from ewe.errors import InputError
from ewe.methods.registry import BUILT_IN, method_class

ROOT = Path(__file__).resolve().parents[1]

# ------------------------------------------------------------------------------------------
# enumeration helpers
# ------------------------------------------------------------------------------------------

PARSER = cli.build_parser()


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(subcommand path, parser) for the root and every (nested) subcommand."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, path + (name,))


def _is_leaf(parser: argparse.ArgumentParser) -> bool:
    return not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)


def _required_argv(parser: argparse.ArgumentParser) -> list[str]:
    """Placeholder values for a leaf parser's positionals and required options."""
    argv = []
    for a in parser._actions:
        if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if not a.option_strings:
            if a.nargs == "*":
                continue
            value = str(next(iter(a.choices))) if a.choices else "x"
            argv += [value] * (a.nargs if isinstance(a.nargs, int) else 1)
        elif a.required:
            argv.append(f"{a.option_strings[0]}=x")
    return argv


LEAVES = [(path, p) for path, p in _walk(PARSER) if _is_leaf(p) and path]

# the bounded argparse types: function -> (the bound, the message for a value under it)
ARGTYPE_BOUNDS = {
    argtypes.positive_int: (1, "must be at least 1"),
    argtypes.non_negative_int: (0, "must be 0 or more"),
    argtypes.seed: (0, "must be 0 or more"),
}
# number types with no whole-number lower bound: (accepted values, refused values with their message)
FLOAT_ARGTYPES = {
    argtypes.finite_float: (["-1e9", "0", "0.5", "1e9"], [("nan", "not a finite number"), ("inf", "not a finite number"),
                                                         ("-inf", "not a finite number"), ("x", "is not a number")]),
    argtypes.positive_float: (["5e-324", "1e-4", "3"], [("0", "must be greater than 0"), ("-1e-4", "must be greater than 0"),
                                                        ("nan", "not a finite number"), ("inf", "not a finite number")]),
    argtypes.share: (["0", "0.25", "1"], [("1.5", "must be between 0 and 1"), ("-0.1", "must be between 0 and 1"),
                                          ("nan", "not a finite number"), ("x", "is not a number")]),
}


def test_every_argtype_has_a_row_in_the_matrix():
    """A new bounded type in ewe/argtypes.py must get its bound here (else its flags go untested)."""
    public = {f for name, f in vars(argtypes).items() if inspect.isfunction(f) and not name.startswith("_")
              and f.__module__ == argtypes.__name__
              # a group builder, and a factory whose every number goes through positive_int (tested
              # through `bench attention --case` in test_bench_commands)
              and name not in ("command_group", "positive_ints")}
    assert public == set(ARGTYPE_BOUNDS) | set(FLOAT_ARGTYPES), "add the new argtype's bound to the matrix"


@dataclass(frozen=True)
class Flag:
    path: tuple[str, ...]
    action: argparse.Action

    @property
    def option(self) -> str:
        return max(self.action.option_strings, key=len)

    @property
    def argparse_name(self) -> str:  # how argparse names the flag in its errors
        return "/".join(self.action.option_strings)

    def __str__(self) -> str:
        return f"ewe {' '.join(self.path)} {self.option}"


ARGTYPE_FLAGS = [Flag(path, a) for path, p in LEAVES for a in p._actions
                 if a.option_strings and a.type in ARGTYPE_BOUNDS]
FLOAT_FLAGS = [Flag(path, a) for path, p in LEAVES for a in p._actions
               if a.option_strings and a.type in FLOAT_ARGTYPES]

# flags that set a configuration field (dest "section.key"), by dest: they are bounded by the field
CONFIG_FLAGS = {}
for _path, _p in LEAVES:
    for _a in _p._actions:
        if _a.option_strings and "." in _a.dest and _a.type in (int, float):
            CONFIG_FLAGS.setdefault(_a.dest, Flag(_path, _a))

# plain int/float flags that are neither an argtype nor a configuration field: each must be known
# here as unbounded by nature
UNBOUNDED_OK = {
    ("judge", "data", "--seed"): "any integer seeds random.Random",
}
PLAIN_FLAGS = [Flag(path, a) for path, p in LEAVES for a in p._actions
               if a.option_strings and a.type in (int, float) and "." not in a.dest]


def test_enumeration_found_the_flags():
    assert len(ARGTYPE_FLAGS) >= 34, [str(f) for f in ARGTYPE_FLAGS]
    assert {f.path[0] for f in ARGTYPE_FLAGS} >= {"run", "index", "eval", "judge", "bench"}
    assert {a.type for f in ARGTYPE_FLAGS for a in [f.action]} == set(ARGTYPE_BOUNDS)
    assert len(CONFIG_FLAGS) >= 10, sorted(CONFIG_FLAGS)


def test_every_plain_number_flag_is_accounted_for():
    """A new `type=int` / `type=float` flag should use an argtypes bound (or a config field)."""
    known = set(UNBOUNDED_OK)
    found = {(*f.path, f.option) for f in PLAIN_FLAGS}
    assert found <= known, f"unbounded number flags: {sorted(found - known)}: give them a bound from ewe/argtypes.py"
    assert known <= found, f"stale entries: {sorted(known - found)}"


# ------------------------------------------------------------------------------------------
# CLI flags with an argtypes bound: parse only
# ------------------------------------------------------------------------------------------


def _parse(flag: Flag, value: str):
    leaf = dict(LEAVES)[flag.path]
    return PARSER.parse_args([*flag.path, *_required_argv(leaf), f"{flag.option}={value}"])


def _argtype_cases():
    for flag in ARGTYPE_FLAGS:
        bound, message = ARGTYPE_BOUNDS[flag.action.type]
        yield pytest.param(flag, bound + 1, None, id=f"{flag}=inside")
        yield pytest.param(flag, bound, None, id=f"{flag}=at")
        yield pytest.param(flag, bound - 1, message, id=f"{flag}=outside")
        yield pytest.param(flag, bound - 2, message, id=f"{flag}=far-outside")
        yield pytest.param(flag, "1.5", "is not a whole number", id=f"{flag}=fraction")


@pytest.mark.parametrize("flag, value, message", list(_argtype_cases()))
def test_argtype_flag(flag, value, message, capsys):
    if message is None:
        args = _parse(flag, str(value))
        got = getattr(args, flag.action.dest)
        assert got == ([value] if flag.action.nargs in ("+", "*") else value)
        return
    with pytest.raises(SystemExit) as e:
        _parse(flag, str(value))
    err = capsys.readouterr().err
    assert e.value.code == 2
    assert f"argument {flag.argparse_name}: " in err and message in err and str(value) in err, err
    assert "Traceback" not in err


def _seed_and_float_cases():
    for flag in [f for f in ARGTYPE_FLAGS if f.action.type is argtypes.seed]:
        yield pytest.param(flag, str(2**63 - 1), None, id=f"{flag}=max")
        yield pytest.param(flag, str(2**63), "too large for a seed", id=f"{flag}=over-max")
    for flag in FLOAT_FLAGS:
        accepted, refused = FLOAT_ARGTYPES[flag.action.type]
        for v in accepted:
            yield pytest.param(flag, v, None, id=f"{flag}={v}")
        for v, message in refused:
            yield pytest.param(flag, v, message, id=f"{flag}={v}")


def test_the_seed_and_float_flags_were_found():
    assert {(*f.path, f.option) for f in FLOAT_FLAGS} >= {("index", "search", "--threshold"), ("judge", "train", "--lr")}
    assert ("judge", "train", "--seed") in {(*f.path, f.option) for f in ARGTYPE_FLAGS if f.action.type is argtypes.seed}


@pytest.mark.parametrize("flag, value, message", list(_seed_and_float_cases()))
def test_seed_and_float_flags(flag, value, message, capsys):
    if message is None:
        assert getattr(_parse(flag, value), flag.action.dest) == flag.action.type(value)
        return
    with pytest.raises(SystemExit) as e:
        _parse(flag, value)
    err = capsys.readouterr().err
    assert e.value.code == 2 and f"argument {flag.argparse_name}: " in err and message in err, err
    assert "Traceback" not in err


# ------------------------------------------------------------------------------------------
# configuration fields: every bound of every section
# ------------------------------------------------------------------------------------------

SECTION_METHOD = {method_class(m).section: m for m in reversed(BUILT_IN)}  # vr -> streaming-vr


def _section_type(field) -> type[BaseModel]:
    [t] = [t for t in (field.annotation, *typing.get_args(field.annotation))
           if isinstance(t, type) and issubclass(t, BaseModel)]
    return t


def _sections():
    """Every section: the shared ones (fields of EWEConfig) and each built-in method's own."""
    for name, field in EWEConfig.model_fields.items():
        if name != "method":
            yield name, _section_type(field), "ewe"
    for section, method in SECTION_METHOD.items():
        yield section, method_class(method).Options, method


def _number_type(annotation) -> type | None:
    """int or float for `int`, `float`, `int | None`, ...; None otherwise."""
    args = [a for a in (annotation, *typing.get_args(annotation)) if a in (int, float)]
    return args[0] if args else None


def _optional(annotation) -> bool:
    return type(None) in typing.get_args(annotation)


@dataclass(frozen=True)
class BoundedField:
    section: str
    name: str
    method: str
    kind: type  # int or float
    lower: tuple | None  # (bound, inclusive)
    upper: tuple | None
    finite: bool  # NaN and inf refused
    optional: bool

    @property
    def path(self) -> str:
        return f"{self.section}.{self.name}"


def _bounded_fields() -> list[BoundedField]:
    out = []
    for section, model, method in _sections():
        for name, info in model.model_fields.items():
            kind = _number_type(info.annotation)
            if kind is None:
                continue
            lower = upper = None
            finite = False
            for m in info.metadata:
                if isinstance(m, at.Ge):
                    lower = (m.ge, True)
                elif isinstance(m, at.Gt):
                    lower = (m.gt, False)
                elif isinstance(m, at.Le):
                    upper = (m.le, True)
                elif isinstance(m, at.Lt):
                    upper = (m.lt, False)
                elif getattr(m, "allow_inf_nan", True) is False:
                    finite = True
            if lower or upper or finite:
                out.append(BoundedField(section, name, method, kind, lower, upper, finite, _optional(info.annotation)))
    return out


BOUNDED = _bounded_fields()


def _step(kind, b, direction: int):
    return b + direction if kind is int else math.nextafter(float(b), direction * math.inf)


def _fmt(b) -> str:
    return str(b) if isinstance(b, int) else f"{b:g}"


def _field_cases(f: BoundedField):
    """(value, None for accepted or the expected message fragment for refused, label)."""
    if f.lower:
        b, inclusive = f.lower
        op = "greater than or equal to" if inclusive else "greater than"
        yield _step(f.kind, b, +1), None, "just inside the lower bound"
        yield b, None if inclusive else f"{op} {_fmt(b)}", "at the lower bound"
        yield _step(f.kind, b, -1), f"{op} {_fmt(b)}", "just under the lower bound"
    if f.upper:
        b, inclusive = f.upper
        op = "less than or equal to" if inclusive else "less than"
        yield _step(f.kind, b, -1), None, "just inside the upper bound"
        yield b, None if inclusive else f"{op} {_fmt(b)}", "at the upper bound"
        yield _step(f.kind, b, +1), f"{op} {_fmt(b)}", "just over the upper bound"
    if f.kind is float:
        if not (f.lower or f.upper):
            yield 0.5, None, "a finite value"
            yield -0.5, None, "a negative finite value"
        for v in (math.nan, math.inf, -math.inf):
            yield v, "Input should be", f"{v}"
    if f.optional:
        yield None, None, "unset"


def _config_cases():
    for f in BOUNDED:
        for value, message, label in _field_cases(f):
            yield pytest.param(f, value, message, id=f"{f.path}={value!r} ({label})")


def test_enumeration_found_the_fields():
    paths = {f.path for f in BOUNDED}
    assert len(paths) >= 38, sorted(paths)
    assert {f.section for f in BOUNDED} == {name for name, _, _ in _sections()} - {"model"}
    assert {"memory.unit_tokens", "decoding.top_p", "decoding.seed", "controller.min_prob_threshold",
            "checker.judge_threshold", "cove.top_k", "vr.answer_tokens", "a2r.stop_threshold",
            "retrieval.threshold", "controller.entropy_threshold"} <= paths
    # every number field has a bound, and no float field takes NaN or infinity
    numbers = {f"{s}.{n}" for s, model, _ in _sections() for n, i in model.model_fields.items()
               if _number_type(i.annotation)}
    assert numbers == paths, sorted(numbers - paths)
    assert all(f.finite or f.kind is int or f.upper for f in BOUNDED), \
        [f.path for f in BOUNDED if f.kind is float and not (f.finite or f.upper)]


def _build(method: str, **overrides) -> EWEConfig:
    return EWEConfig.build({"method": method}, **overrides)


@pytest.mark.parametrize("f, value, message", list(_config_cases()))
def test_config_field(f, value, message):
    if message is None:
        cfg = _build(f.method, **{f.path: value})
        assert getattr(getattr(cfg, f.section), f.name) == value
        return
    with pytest.raises(ConfigError) as e:
        _build(f.method, **{f.path: value})
    text = str(e.value)
    assert f"{f.path}: " in text and message in text and f"(got {value!r})" in text, text
    # the same bound holds on assignment to a built configuration
    section = getattr(_build(f.method), f.section)
    with pytest.raises(ValidationError, match=f.name):
        setattr(section, f.name, value)


# Literal choices: every choice accepted (with the settings it needs), anything else refused

NEEDS = {  # a choice that needs other settings (the cross-field validators ask for them)
    ("checker.backend", "nli"): {"checker.nli_model": "some/folder"},
    ("checker.backend", "http"): {"checker.http_base_url": "http://localhost:1", "checker.http_model": "m"},
}


def _literal_choices(annotation) -> tuple[list, bool]:
    """(choices, whether the field is a list of them) for Literal, Optional[Literal], list[Literal]."""
    if typing.get_origin(annotation) is Literal:
        return list(typing.get_args(annotation)), False
    if typing.get_origin(annotation) is list:
        return _literal_choices(typing.get_args(annotation)[0])[0], True
    for a in typing.get_args(annotation):
        if typing.get_origin(a) is Literal:
            return list(typing.get_args(a)), False
    return [], False


def _literal_fields():
    from ewe.methods.registry import BUILT_IN

    out = [("method", "method", None, list(BUILT_IN), False)]  # a name the registry knows (test_config: others)
    for section, model, method in _sections():
        for name, info in model.model_fields.items():
            choices, is_list = _literal_choices(info.annotation)
            if choices:
                out.append((f"{section}.{name}", method, name, choices, is_list))
    return out


LITERALS = _literal_fields()


def _literal_cases():
    for path, method, _, choices, is_list in LITERALS:
        for c in choices:
            yield pytest.param(path, method, [c] if is_list else c, True, id=f"{path}={c}")
        yield pytest.param(path, method, ["nope"] if is_list else "nope", False, id=f"{path}=nope")


def test_enumeration_found_the_choices():
    assert len(LITERALS) >= 18, [p for p, *_ in LITERALS]


@pytest.mark.parametrize("path, method, value, ok", list(_literal_cases()))
def test_config_choice(path, method, value, ok):
    if path == "method":
        build = lambda: EWEConfig.build({"method": value})  # noqa: E731
    else:
        extra = NEEDS.get((path, value if isinstance(value, str) else None), {})
        build = lambda: _build(method, **{path: value}, **extra)  # noqa: E731
    if ok:
        cfg = build()
        node = cfg
        for part in path.split("."):
            node = getattr(node, part)
        assert node == value
        return
    with pytest.raises(ConfigError) as e:
        build()
    text = str(e.value)
    refusal = "not a registered method" if path == "method" else "Input should be"
    assert path in text and refusal in text and "'nope'" in text, text


# bounds that come from a validator across fields: at the bound accepted, past it refused

CROSS = [
    ({"controller.retrieval_trigger": "interval", "memory.retrieval_units": 1}, "ewe", None),
    ({"controller.retrieval_trigger": "interval", "memory.retrieval_units": 0}, "ewe",
     "controller.retrieval_trigger needs memory.retrieval_units >= 1"),
    ({"cove.retrieval": True, "cove.passages_placement": "memory", "cove.top_k": 4, "memory.retrieval_units": 4},
     "cove", None),
    ({"cove.retrieval": True, "cove.passages_placement": "memory", "cove.top_k": 5, "memory.retrieval_units": 4},
     "cove", "cove.top_k=5 passages do not fit memory.retrieval_units=4"),
    ({"checker.backend": "nli"}, "ewe", "checker.backend 'nli' needs checker.nli_model"),
    ({"checker.backend": "http", "checker.http_model": "m"}, "ewe", "needs checker.http_base_url"),
    ({"controller.verify_trigger": "interval", "retrieval.placement": "prompt"}, "ewe",
     "controller pauses need retrieval.placement"),
    ({"retrieval.source": None}, "a2r", "checks against evidence from a datastore: set retrieval.source"),
    ({"cove.top_k": 3}, "ewe", "method 'ewe' reads only its own section 'controller'"),
]


@pytest.mark.parametrize("overrides, method, message", CROSS, ids=[m or "ok" for _, _, m in CROSS])
def test_config_cross_field_bound(overrides, method, message):
    if message is None:
        _build(method, **overrides)
        return
    with pytest.raises(ConfigError, match=re.escape(message)):
        _build(method, **overrides)


# ------------------------------------------------------------------------------------------
# CLI flags that set a configuration field: bounded by the field, refused before any model
# ------------------------------------------------------------------------------------------


def _config_flag_cases():
    fields = {f.path: f for f in BOUNDED}
    for dest, flag in sorted(CONFIG_FLAGS.items()):
        f = fields.get(dest)
        if f is None:
            continue
        for value, message, label in _field_cases(f):
            if value is None:
                continue
            text = repr(value) if isinstance(value, float) and math.isfinite(value) else str(value)
            yield pytest.param(flag, f, text, value, message, id=f"{flag.option}={text} ({label})")


def test_every_number_flag_that_sets_a_field_is_bounded():
    fields = {f.path for f in BOUNDED}
    assert set(CONFIG_FLAGS) <= fields, sorted(set(CONFIG_FLAGS) - fields)


@pytest.fixture
def no_model(monkeypatch):
    """Fail if a command gets as far as loading a model."""
    def refuse(*a, **k):
        raise AssertionError("the command went on to load a model")
    monkeypatch.setattr(EWE, "from_runtime", classmethod(refuse))


@pytest.mark.parametrize("flag, f, text, value, message", list(_config_flag_cases()))
def test_config_flag(flag, f, text, value, message, capsys, no_model):
    args = _parse(flag, text)
    assert getattr(args, flag.action.dest) == value or (isinstance(value, float) and math.isnan(value))
    if message is None:
        cfg = EWEConfig.build(**cli.config_overrides(args))
        assert getattr(getattr(cfg, f.section), f.name) == value
        return
    # through the command itself: refused with exit status 2 before the model loads
    assert cli.main([*flag.path, *_required_argv(dict(LEAVES)[flag.path]), f"{flag.option}={text}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ewe: error: invalid configuration: ") and f"{f.path}: " in err and message in err, err
    assert "Traceback" not in err


def test_config_flags_are_the_same_on_every_command():
    """--unit-tokens, --top-k ... mean the same field on generate, run, check and the benches."""
    by_option = {}
    for path, p in LEAVES:
        for a in p._actions:
            if a.option_strings and "." in a.dest:
                by_option.setdefault(tuple(a.option_strings), set()).add((a.dest, a.type))
    assert all(len(v) == 1 for v in by_option.values()), {k: v for k, v in by_option.items() if len(v) > 1}


def test_cli_error_in_a_real_process(tmp_path):
    """The whole command in its own process: exit status 2, the message on stderr, no traceback."""
    message = "ewe: error: invalid configuration: memory.unit_tokens: Input should be greater than or equal to 8 (got 7)"
    r = subprocess.run([sys.executable, "-m", "ewe.cli", "generate", "hi", "--unit-tokens", "7"], capture_output=True, text=True, cwd=tmp_path,
                       env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path)},
                       timeout=120)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert r.stdout == ""


# ------------------------------------------------------------------------------------------
# EWE.generate arguments on the tiny model: refused before any model work, one value accepted
# ------------------------------------------------------------------------------------------


@pytest.fixture
def ewe(tiny):  # conftest's tiny EWE; `model_work` (conftest) records what reached its model
    return tiny


GENERATE_ARGS = [name for name, p in inspect.signature(EWE.generate).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY]


def test_generate_arguments_are_decoding_fields():
    assert set(GENERATE_ARGS) == {"max_new_tokens", "temperature", "top_p", "seed"}
    assert {f"decoding.{a}" for a in GENERATE_ARGS} <= {f.path for f in BOUNDED}


def _generate_refusals():
    fields = {f.path: f for f in BOUNDED}
    for arg in GENERATE_ARGS:
        f = fields[f"decoding.{arg}"]
        for value, message, label in _field_cases(f):
            if message is not None:
                yield pytest.param(arg, value, message, id=f"{arg}={value!r} ({label})")


@pytest.mark.parametrize("arg, value, message", list(_generate_refusals()))
def test_generate_refuses_before_model_work(ewe, model_work, arg, value, message):
    with pytest.raises(ConfigError) as e:
        ewe.generate("Paris?", passages=["Marie Curie was a physicist."], **{arg: value})
    text = str(e.value)
    assert f"decoding.{arg}: " in text and message in text and f"(got {value!r})" in text, text
    assert model_work == []


def test_generate_refuses_more_passages_than_units_and_empty_ones(ewe, model_work):
    cap = ewe.config.memory.retrieval_units
    with pytest.raises(InputError, match=rf"passages\[0\]: {cap + 1} passages but memory.retrieval_units={cap}"):
        ewe.generate("Paris?", passages=(PASSAGES * 20)[: cap + 1])
    with pytest.raises(InputError, match=r"passages\[0\]\[0\] is empty"):
        ewe.generate("Paris?", passages=[" "])
    assert model_work == []


def test_generate_refuses_past_the_context_limit(ewe, model_work):
    n = len(ewe.prompt_ids("Paris?"))
    over = ewe.max_positions - n + 1
    with pytest.raises(InputError, match=rf"max_new_tokens={over} = {ewe.max_positions + 1} exceeds the context limit"):
        ewe.generate("Paris?", passages=[], max_new_tokens=over)
    assert model_work == []


PASSAGES = ["Paris is in France.", "Marie Curie was a physicist.", "The Eiffel Tower is in Paris.",
            "Albert Einstein was a physicist.", "The quick brown fox jumps over the lazy dog."]
@pytest.mark.parametrize("kwargs", [
    {"max_new_tokens": 1},
    {"max_new_tokens": 1, "temperature": 100.0, "top_p": 1.0, "seed": 0},
    {"max_new_tokens": 1, "temperature": 1.0, "top_p": 1e-30, "seed": 2**63 - 1},
    {"max_new_tokens": 1, "temperature": math.nextafter(0.0, 1.0), "seed": 0},
    {"max_new_tokens": 1, "temperature": 1.0, "top_p": math.nextafter(0.0, 1.0), "seed": 0},
], ids=["max_new_tokens=1", "temperature=100, top_p=1, seed=0", "top_p=1e-30, seed=2**63-1",
        "temperature=5e-324", "top_p=5e-324"])
def test_generate_accepts_values_at_the_bounds(ewe, kwargs):
    """At the bounds (retrieval_units passages, the least budget, the extreme settings): it runs."""
    cap = ewe.config.memory.retrieval_units
    r = ewe.generate("Paris?", passages=PASSAGES[:cap], **kwargs)
    assert len(r.token_ids) <= 1 and r.stats["memory_units"] == cap


def test_as_llm_budget_is_bounded(ewe):
    with pytest.raises(ConfigError, match=r"decoding.max_new_tokens: Input should be greater than or equal to 1"):
        ewe.as_llm(0)
    assert callable(ewe.as_llm(1))


@pytest.mark.parametrize("k", [0, -1, 1.5, True])
def test_retrieve_refuses_a_count_under_one(ewe, k):
    with pytest.raises(InputError, match=rf"k={k!r}: the number of passages to retrieve must be a whole number, at least 1"):
        ewe.retrieve(["Paris"], k=k)

