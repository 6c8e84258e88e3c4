"""Property-based tests (hypothesis) of ewe's text boundaries: sentence tracking over arbitrary
Unicode, plain-text token ids, cropping the KV cache, and the JSONL record log.

Each test states an invariant over generated inputs; hypothesis shrinks any counterexample to
a minimal one. The example counts keep the whole file to a few seconds on two cores."""
import json
import tempfile
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ewe.controller import SentenceTracker
from ewe.engine import DecodingSession
from ewe.errors import RunError
from ewe.memory import UnitEncoder
from ewe.ops import MemoryState
from ewe.modeling import patch_model
from ewe.record_log import RecordLog, finished_ids
from ewe.tokens import chat_ids, prompt_ids, text_ids, text_ids_many
from ewe.verify.text import sentence_spans
from tiny import tiny_model, tiny_tokenizer

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]

# Pieces that sit on text boundaries: sentence ends and abbreviations, whitespace and line
# breaks of every kind, multi-byte characters (emoji, ZWJ sequences, flags, CJK), combining
# marks, right-to-left text and marks, quotes and brackets after a full stop, lone punctuation,
# and the special tokens' own strings.
FRAGMENTS = [
    "Marie Curie was a physicist", "He was born in 1867", "Dr.", "Mr. X", "U.S.", "e.g.", "3.", "1934",
    ". ", "! ", "? ", ".", "!", "?", "…", "...", " ", "  ", "\t", "\n", "\n\n", "\r\n", "\u2028", "\u2029",
    "\x85", "\u00a0", "\u2009", "\x1c", "\x1f", '."', ".”", ".)", "'", '"', "(", ")", "[", "-", "*", "1.", "•",
    "😀", "👩\u200d👩\u200d👧", "🇫🇷", "你好。", "再见！", "日本語", "e\u0301", "a\u0308\u0323", "\u0301",
    "שלום.", "مرحبا؟", "\u200f", "\u202e", "Ω", "ß", "İ",
] + SPECIALS
any_char_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\ufffd"), max_size=6)
unicode_text = st.lists(st.one_of(st.sampled_from(FRAGMENTS), any_char_text), max_size=14).map("".join)

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- 1. Sentence tracking -------------------------------------------------------------------------

def tracked(ids, chunks=None, final=True):
    """A tracker fed `ids` token by token (or in `chunks` through extend); the sentences returned."""
    tr = SentenceTracker(tiny_tokenizer())
    returned = []
    if chunks is None:
        for i, t in enumerate(ids):
            returned += tr.append(t, -0.01 * i, 0.1 * i)
    else:
        pos = 0
        for n in chunks + [len(ids)]:
            piece = ids[pos:pos + n]
            returned += tr.extend(piece, [-0.01 * (pos + j) for j in range(len(piece))],
                                  [0.1 * (pos + j) for j in range(len(piece))])
            pos += len(piece)
    if final:
        returned += tr.finish(complete=True)
    return tr, returned


def spans(tr):
    return [(s.start, s.end, s.text) for s in tr.sentences]


def assert_tiles(tr, ids, text, returned):
    """The sentences are non-empty token spans, in order, contiguous from token 0, each reported
    once; only whitespace follows the last; every sentence's text is its tokens' text stripped,
    with its own log-probs and entropies; and no boundary splits a character, so the sentences'
    decoded spans joined give back the text exactly."""
    tok = tiny_tokenizer()
    assert tr.text == text
    assert [id(s) for s in returned] == [id(s) for s in tr.sentences]
    end = 0
    for s in tr.sentences:
        assert s.start == end < s.end and s.complete
        assert s.text == tok.decode(ids[s.start:s.end], skip_special_tokens=True).strip() != ""
        assert s.logprobs == [-0.01 * i for i in range(s.start, s.end)]
        assert s.entropies == [0.1 * i for i in range(s.start, s.end)]
        end = s.end
    assert tr.decode(end).strip() == ""
    assert bool(tr.sentences) == bool(text.strip())
    pieces = [tr.decode(s.start, s.end) for s in tr.sentences] + [tr.decode(end)]
    assert "".join(pieces) == text, pieces


@FAST
@given(unicode_text)
@example("\x1f3. ")  # pysbd raised ValueError on U+001C..U+001F before a numbered item
def test_sentences_tile_the_tokens_and_their_text(text):
    ids = text_ids(tiny_tokenizer(), text)
    tr, returned = tracked(ids)
    assert_tiles(tr, ids, text, returned)


def boundary_ends(ids, base, final):
    """What the segmenter asks for on the text decoded from token `base`: each sentence ends at the
    last token boundary at or before the character where the next sentence begins (while decoding
    goes on, only up to the first sentence that no whitespace parts from the next; the last one,
    when decoding ended, at the last token); boundaries that fall on one token boundary are one,
    and one that falls on `base` is none."""
    tok = tiny_tokenizer()
    spans = sentence_spans(tok.decode(ids[base:], skip_special_tokens=True))
    chars = {j: len(tok.decode(ids[base:j], skip_special_tokens=True)) for j in range(base, len(ids) + 1)}
    parted = [spans[i + 1][0] > spans[i][1] for i in range(len(spans) - 1)]
    if not final and False in parted:  # decoding goes on: sentences end only where whitespace parts them
        spans = spans[: parted.index(False) + 1]
    ends = [max(j for j, c in chars.items() if c <= nxt) for nxt, _ in spans[1:]]
    ends += [len(ids)] if final and spans else []
    return sorted(set(ends) - {base})


@FAST
@given(unicode_text)
def test_sentences_end_at_the_last_token_boundary_before_the_next_sentence(text):
    """All tokens at once, then the end of decoding: the sentences end where the segmenter's
    sentences begin, to the token, never a token early or late."""
    ids = text_ids(tiny_tokenizer(), text)
    tr = SentenceTracker(tiny_tokenizer())
    first = tr.extend(ids, [0.0] * len(ids), [0.0] * len(ids))
    if first:  # segmented at once (else no character in the text hinted at a sentence end)
        assert [s.end for s in first] == boundary_ends(ids, 0, final=False)
    base = tr.tail_start
    assert [s.end for s in tr.finish(complete=True)] == boundary_ends(ids, base, final=True)


@FAST
@given(unicode_text, st.lists(st.integers(0, 12), max_size=8))
def test_feeding_in_chunks_through_extend_keeps_the_tiling(text, chunks):
    """The loop feeds tokens one at a time, and after a rewind replays many with one extend:
    however the same tokens arrive, the sentences tile them (not that they are the same
    sentences: see the next test)."""
    ids = text_ids(tiny_tokenizer(), text)
    for feed in ([], chunks):
        tr, returned = tracked(ids, chunks=feed)
        assert_tiles(tr, ids, text, returned)


@pytest.mark.parametrize("text", [
    # a character whose bytes lie in two tokens decodes as U+FFFD after its first byte, which pysbd
    # takes for the start of a sentence: token by token, "Dr." ends a sentence
    "Mr. Smith met Dr.\xa0Jones today.",
    # pysbd splits the prefix "waited.." after the first period ("..." arrives as three tokens),
    # once an earlier ". S" has opened the tracker's gate
    "Dr. Smith waited... He left.",
])
def test_token_by_token_sentences_equal_all_at_once(text):
    """Not a property of every text: a streaming segmenter commits before it sees what follows
    ("(Mr. X" ends a sentence that "(Mr. X.)" does not), but it must not commit inside a
    character or an ellipsis still arriving."""
    ids = text_ids(tiny_tokenizer(), text)
    assert spans(tracked(ids)[0]) == spans(tracked(ids, chunks=[])[0])


@FAST
@given(unicode_text, st.data())
def test_truncate_then_replay_equals_never_truncating(text, data):
    """truncate(L) returns the removed tokens' text, keeps exactly the sentences within the first L tokens,
    and appending the same tokens again gives the sentences of a run that never truncated."""
    ids = text_ids(tiny_tokenizer(), text)
    full, _ = tracked(ids, final=False)
    near_ends = sorted({max(0, min(len(ids), s.end + d)) for s in full.sentences for d in (-1, 0, 1)})
    length = data.draw(st.one_of(st.sampled_from(near_ends or [0]), st.integers(0, len(ids))), label="length")
    before = list(full.sentences)
    tr, _ = tracked(ids, final=False)
    removed = tr.truncate(length)
    assert tr.tokens == ids[:length] and len(tr.logprobs) == len(tr.entropies) == length
    assert removed == tiny_tokenizer().decode(ids[length:], skip_special_tokens=True)
    assert tr.sentences == [s for s in before if s.end <= length]
    for i in range(length, len(ids)):
        tr.append(ids[i], -0.01 * i, 0.1 * i)
    assert spans(tr) == spans(full)
    tr.finish(complete=True)
    full.finish(complete=True)
    assert spans(tr) == spans(full)


@FAST
@given(unicode_text)
def test_a_cut_off_last_sentence_is_reported_but_not_kept(text):
    """finish(complete=False) reports the same sentences as finish(complete=True), the last marked
    incomplete and dropped from the finished ones."""
    ids = text_ids(tiny_tokenizer(), text)
    done, _ = tracked(ids)
    cut = SentenceTracker(tiny_tokenizer())
    for t in ids:
        cut.append(t, 0.0, 0.0)
    before = len(cut.sentences)
    out_cut = cut.finish(complete=False)
    assert [(s.start, s.end, s.text) for s in out_cut] == [(s.start, s.end, s.text) for s in done.sentences[before:]]
    if out_cut:
        assert out_cut[-1].complete is False and all(s.complete for s in out_cut[:-1])
        assert spans(cut) == spans(done)[:-1]
        assert cut.unfinished() is not None and cut.unfinished().text == out_cut[-1].text
    else:
        assert spans(cut) == spans(done) and cut.unfinished() is None


# --- 2. Plain-text token ids ----------------------------------------------------------------------

text_with_specials = st.lists(st.one_of(st.sampled_from(FRAGMENTS + SPECIALS * 3), st.text(max_size=8)),
                              max_size=12).map("".join)


@settings(max_examples=150, deadline=None)
@given(text_with_specials)
def test_text_ids_never_forge_control_tokens_and_round_trip(text):
    tok = tiny_tokenizer()
    ids = text_ids(tok, text)
    special = set(tok.all_special_ids) | {i for i, t in tok.added_tokens_decoder.items() if t.special}
    assert not special & set(ids)
    assert tok.decode(ids, skip_special_tokens=False) == text  # byte-level BPE is lossless
    assert text_ids_many(tok, [text, text[::-1]]) == [ids, text_ids(tok, text[::-1])]


@settings(max_examples=80, deadline=None)
@given(text_with_specials, st.one_of(st.none(), text_with_specials))
def test_chat_ids_hold_only_the_templates_own_control_tokens(user, system):
    """Whatever the contents, the chat ids decode to the rendered template, and their control
    tokens are exactly those of the template around plain contents."""
    tok = tiny_tokenizer()
    messages = ([{"role": "system", "content": system}] if system is not None else []) + [{"role": "user", "content": user}]
    ids = chat_ids(tok, messages)
    rendered = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert tok.decode(ids, skip_special_tokens=False) == rendered
    special = set(tok.all_special_ids)
    plain = chat_ids(tok, [{**m, "content": "x"} for m in messages])
    assert [i for i in ids if i in special] == [i for i in plain if i in special]
    assert prompt_ids(tok, user, system or None) == chat_ids(
        tok, ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": user}])


# --- 3. Cropping the KV cache ---------------------------------------------------------------------

M = 24


@pytest.fixture(scope="module")
def model():
    m = tiny_model()
    patch_model(m)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny matrices: threads only wait on each other, worst on a busy machine
    yield m
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def memory(model):
    units = UnitEncoder(model, tiny_tokenizer(), M).encode(["Marie Curie was a Polish physicist.",
                                                           "The Eiffel Tower is in Paris."])
    return MemoryState.from_rows([units])


def token_lists(lo, hi):
    return st.lists(st.integers(0, len(tiny_tokenizer()) - 1), min_size=lo, max_size=hi)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(token_lists(1, 12), token_lists(1, 8), token_lists(1, 8), st.booleans(), st.data())
def test_crop_then_replay_equals_never_having_written(model, memory, a, b, c, with_memory, data):
    """prefill(a), extend(b), crop(k), extend(c) gives the logits (and cache) of a session that
    only ever saw the first k tokens and then c; k = len(a) is the common case."""
    state, offset = (memory, M) if with_memory else (None, 0)
    k = data.draw(st.one_of(st.just(len(a)), st.integers(0, len(a) + len(b))), label="k")
    ab = a + b
    s = DecodingSession(model, state, offset)
    s.prefill(torch.tensor([a]))
    s.extend(torch.tensor([b]))
    s.crop(k)
    assert s.length == s.cache.get_seq_length() == k and s.tokens[0].tolist() == ab[:k]
    got = s.extend(torch.tensor([c]))
    assert s.tokens[0].tolist() == ab[:k] + c and s.cache.get_seq_length() == k + len(c)

    fresh = DecodingSession(model, state, offset)
    if k == 0:  # nothing kept: c starts the context
        want = fresh.prefill(torch.tensor([c]))
    elif k <= len(a):  # the kept cache is exactly a prefill of a[:k]
        fresh.prefill(torch.tensor([a[:k]]))
        want = fresh.extend(torch.tensor([c]))
    else:
        fresh.prefill(torch.tensor([a]))
        fresh.extend(torch.tensor([b[:k - len(a)]]))
        want = fresh.extend(torch.tensor([c]))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # and decoding on agrees too (the cache beyond the crop holds nothing stale)
    nxt = int(got.argmax(-1))
    torch.testing.assert_close(s.step(torch.tensor([nxt])), fresh.step(torch.tensor([nxt])), atol=1e-5, rtol=1e-5)


# --- 4. The JSONL record log ----------------------------------------------------------------------

json_text = st.text(st.one_of(st.characters(blacklist_categories=("Cs",)),
                              st.sampled_from(["\n", "\r", "\u2028", "\u2029", "\x85", "\x00", '"', "\\", "\t"])),
                    max_size=10)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70),
                      st.floats(allow_nan=False, allow_infinity=False), json_text)
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                             st.dictionaries(json_text, inner, max_size=4)),
                          max_leaves=12)
record_id = st.one_of(json_text, st.integers(-1000, 1000))
records = st.lists(st.tuples(record_id, st.dictionaries(json_text.filter(lambda k: k != "id"), json_value, max_size=4)),
                   max_size=6, unique_by=lambda r: str(r[0])).map(lambda rs: [{"id": i, **rest} for i, rest in rs])

LOG = settings(max_examples=60, deadline=None)


def written(rows) -> bytes:
    """The bytes RecordLog writes for `rows` into a fresh file."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "out.jsonl"
        with RecordLog(path) as log:
            for r in rows:
                log.append(r)
        return path.read_bytes()


@LOG
@given(records)
def test_records_read_back_equal_what_was_written(rows):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "out.jsonl"
        with RecordLog(path) as log:
            for r in rows:
                log.append(r)
            assert log.records() == rows
        assert [json.loads(line) for line in path.read_bytes().split(b"\n")[:-1]] == rows  # one line each
        with RecordLog(path) as log:
            assert log.done == {str(r["id"]) for r in rows}
            assert log.records() == rows


@LOG
@given(records, st.data())
def test_resume_after_a_cut_at_any_byte_keeps_exactly_the_complete_records(rows, data):
    """A run killed at any byte: the records whose line (newline or not) is whole are kept, the
    torn rest of the last line is cut off, and a rerun appending the missing ids gives back
    every record once, in order."""
    full = written(rows)
    cut = data.draw(st.integers(0, len(full)), label="cut")
    lines = full.split(b"\n")[:-1]
    ends = [sum(len(x) + 1 for x in lines[:i]) + len(lines[i]) for i in range(len(lines))]
    whole = [i for i, e in enumerate(ends) if e <= cut]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "out.jsonl"
        path.write_bytes(full[:cut])
        assert finished_ids(path) == {str(rows[i]["id"]) for i in whole}
        assert path.read_bytes() == b"".join(lines[i] + b"\n" for i in whole)
        with RecordLog(path) as log:
            for r in rows:
                if str(r["id"]) not in log.done:
                    log.append(r)
            assert log.records() == rows
        assert path.read_bytes() == full


not_a_record = st.one_of(  # a line, as bytes, that is not a record and not the start of one
    st.text(min_size=1).filter(lambda t: "\n" not in t and t.strip() and not t.lstrip().startswith("{")).map(str.encode),
    json_value.filter(lambda v: not isinstance(v, dict)).map(lambda v: json.dumps(v, ensure_ascii=False).encode()),
    st.dictionaries(json_text.filter(lambda k: k != "id"), json_value, max_size=3).map(  # no "id"
        lambda v: json.dumps(v, ensure_ascii=False).encode()),
    st.text(st.characters(blacklist_characters='"\\', blacklist_categories=("Cs", "Cc"))).map(  # a damaged byte
        lambda t: b'{"id": "' + t.encode() + b'\xff"}'),
)


@LOG
@given(records.filter(bool), not_a_record, st.data())
def test_a_line_that_is_not_a_record_is_refused_and_the_file_left_alone(rows, bad, data):
    """Anywhere but as a torn last line (the start of a JSON object), a line that is not a record
    is an error, never cut: the file is not ewe's output or was damaged."""
    lines = written(rows).split(b"\n")[:-1]
    at = data.draw(st.integers(0, len(lines)), label="at")
    newline = data.draw(st.booleans(), label="newline") if at == len(lines) else True
    damaged = b"".join(x + b"\n" for x in lines[:at]) + bad + (b"\n" if newline else b"") \
        + b"".join(x + b"\n" for x in lines[at:])
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "out.jsonl"
        path.write_bytes(damaged)
        with pytest.raises(RunError):
            finished_ids(path)
        assert path.read_bytes() == damaged
        for _ in range(2):  # the lock is released again: the second try is refused for the damage too
            with pytest.raises(RunError, match="not a result line|without an"):
                RecordLog(path).__enter__()
        assert path.read_bytes() == damaged
