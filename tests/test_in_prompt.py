"""Passages written into a prompt (ewe/retrieval/in_prompt.py, config retrieval.prompt_format)."""
import pytest

from ewe.config import ConfigError, EWEConfig
from ewe.retrieval.chunking import format_passage, split_passage
from ewe.retrieval.in_prompt import AFTER_LABEL, PASSAGE_FORMATS
from ewe.runtime import Runtime

CURIE = format_passage("Marie Curie", "Polish-French physicist and chemist (1867-1934)",
                       "Marie Curie was a physicist and chemist who conducted pioneering research on radioactivity.")
MERCURY = format_passage("Mercury (planet)", "smallest planet", "Mercury is the first planet from the Sun.")
PIERRE = format_passage("Pierre Curie", "", "He shared the 1903 Nobel Prize in Physics with his wife.")
PROMPT = "Tell me a bio of Marie Curie."


@pytest.mark.parametrize("title, desc, body", [
    ("Marie Curie", "Polish-French physicist and chemist (1867-1934)", "Marie Curie was a physicist."),
    ("Mercury (planet)", "smallest planet", "Mercury is the first planet: the closest."),
    ("Pierre Curie", "", "He shared the prize (with his wife): 1903."),
])
def test_split_passage_inverts_format_passage(title, desc, body):
    assert split_passage(format_passage(title, desc, body)) == (title, desc, body)


@pytest.mark.parametrize("text", ["just a sentence (with a remark) and no head.", "Odd (unclosed: body", ""])
def test_text_without_a_head_is_all_body(text):
    assert split_passage(text) == ("", "", text)


@pytest.mark.parametrize("name", sorted(PASSAGE_FORMATS))
def test_every_format_holds_the_request_and_every_passage_text(name):
    text = PASSAGE_FORMATS[name](PROMPT, [CURIE, MERCURY, PIERRE])
    assert PROMPT in text
    for p in (CURIE, MERCURY, PIERRE):
        assert split_passage(p)[2] in text


def test_after_puts_the_request_first_and_no_passage_head_in_the_prompt():
    text = PASSAGE_FORMATS["after"](PROMPT, [CURIE, MERCURY, PIERRE])
    assert text.startswith(PROMPT + "\n\n" + AFTER_LABEL)
    assert "[1]" not in text and "(Polish-French physicist" not in text and "(smallest planet)" not in text
    # a passage whose text does not name its subject says whom it is about, after its text
    assert "with his wife. (from the article on Pierre Curie)" in text and "Pierre Curie:" not in text
    assert "Marie Curie:" not in text and "article on Marie Curie" not in text


def test_numbered_is_the_list_ewe_used_before():
    assert PASSAGE_FORMATS["numbered"](PROMPT, [CURIE, PIERRE]) == f"Relevant passages:\n[1] {CURIE}\n[2] {PIERRE}\n\n{PROMPT}"


@pytest.mark.parametrize("name", ["after", "numbered"])
def test_the_runtime_writes_the_configured_format(name):
    rt = Runtime(EWEConfig.build({"retrieval": {"prompt_format": name}}))
    assert rt.prompt_with_passages(PROMPT, [CURIE]) == PASSAGE_FORMATS[name](PROMPT, [CURIE])
    assert rt.prompt_with_passages(PROMPT, []) == PROMPT


def test_an_unknown_format_is_refused_by_name():
    with pytest.raises(ConfigError, match="prompt_format"):
        EWEConfig.build({"retrieval": {"prompt_format": "bullets"}})


def test_the_config_offers_exactly_the_formats_that_exist():
    from typing import get_args

    from ewe.config import RetrievalConfig

    assert set(get_args(RetrievalConfig.model_fields["prompt_format"].annotation)) == set(PASSAGE_FORMATS)
