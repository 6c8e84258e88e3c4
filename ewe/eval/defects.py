"""The scorer's own count of what no claim score sees: sentences that repeat an earlier one,
loops inside one sentence, talk to the user instead of an answer, and claims about someone or
something else than the person or thing the prompt asks about.

These rules are deliberately the scorer's, not the loop's: EWE's controller rejects such
sentences with verify/degenerate.py, verify/subject.py and verify/redundancy.py, and a yardstick
made of the same rules could never see what they miss (issue 56: "0.00 repeated sentences"
came from the very test that had dropped the others). Nothing here imports those modules; the
rules are plain text tests, frozen by tests/test_defects.py on fixed answers, and `DEFECTS`
names their version (a details line counted by an older version is counted again).
"""
from __future__ import annotations

import re
from collections import Counter

DEFECTS = "defects-2"

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")
# function words: left out of the words two sentences are compared on
_FUNCTION = frozenset("""a an the and or but nor of in on at to for from by with as into onto upon about after before
during since until than then that this these those which who whom whose what when where while is are was were be been
being am has have had do does did will would shall should can could may might must it its he she his her him they them
their there here also not no so such very more most many much one first""".split())


def _words(text: str) -> list[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def _content(text: str) -> set[str]:
    return {w for w in _words(text) if w not in _FUNCTION and not w.isdigit()}


def repeated_sentences(texts: list[str], overlap: float = 0.8) -> list[bool]:
    """Per sentence: it repeats one earlier sentence of the answer, its words the same, or (four
    content words or more) at least `overlap` of its content words in that one sentence."""
    out, earlier, seen = [], [], set()
    for text in texts:
        key = " ".join(_words(text))
        mine = _content(text)
        out.append(bool(key) and (key in seen or (len(mine) >= 4 and any(
            len(mine & e) >= overlap * len(mine) for e in earlier))))
        seen.add(key)
        earlier.append(mine)
    return out


def loop_sentence(text: str) -> bool:
    """A sentence that goes round in a loop: a run of three words said three times or more in it, a
    run of six words said twice, or a run of four said twice back to back ("is often referred to as
    "the father of modern drama" and is often referred to as ..."; "Forest Park in Portland, Oregon,
    and Forest Park in Portland, Oregon"). Parallel parts that differ ("Queen of France from 1137 to
    1152 as the wife of King Louis VII, and Queen of England ... as the wife of King Henry II") are
    no loop."""
    ws = _words(text)
    grams = Counter(tuple(ws[i:i + 3]) for i in range(len(ws) - 2))
    if any(c >= 3 and not _all_function(g) for g, c in grams.items()):
        return True
    first: dict[tuple[str, ...], int] = {}
    for b in range(len(ws) - 3):
        g4 = tuple(ws[b:b + 4])
        a = first.setdefault(g4, b)
        if a == b or _all_function(g4):
            continue
        run = 4  # how far the second run goes on as the first did
        while b + run < len(ws) and a + run < b and ws[a + run] == ws[b + run]:
            run += 1
        if run >= 6 or b - (a + run) <= 1:  # six words again, or four back to back ("X, X", "X, and X")
            return True
    return False


def _all_function(gram: tuple[str, ...]) -> bool:
    return all(w in _FUNCTION for w in gram)


_META = re.compile(
    r"^(?:sure|certainly|of course|okay|ok)\b|^(?:here (?:is|are|'s)|let me|let's|note:)|"
    r"\b(?:we'll|we've|you've|you're|you'll|you'd)\b|\bwould you like\b|\bcan i (?:assist|help)\b|\byour (?:bio|biography|question|request|answer|essay|text|prompt)\b|"
    r"\b(?:as an ai|as a language model|in this (?:bio|biography|answer|response))\b|"
    # the source spoken of instead of the subject ("The article highlights the era of New Imperialism")
    r"\b(?:the|this) (?:article|passage|text|document|paragraph|section)s? (?:also |further )?(?:highlights|provides|"
    r"mentions|describes|discusses|says|states|notes|is a|delves|touches|explores|covers|offers|presents|focuses)\b|"
    r"\bthis (?:article|paragraph|answer|response|summary)\b|\bin the context of the (?:article|passage|text)\b|"
    r"\(from the (?:article|passage)\b|"
    # the answer naming itself a kind of text, or rating it ("This is a summary of ...", "The description is
    # concise", "A brilliant introduction to ...", "... is a nice touch")
    r"^\W*this is an? (?:[\w-]+ ){0,3}(?:summary|description|overview|introduction|paragraph)\b|"
    r"\bthe (?:description|explanation|wording|answer|response) (?:is|was) (?:\w+ )?(?:concise|clear|easy|"
    r"informative|detailed|well|excellent|great|good|helpful)\b|"
    r"\b(?:a )?(?:nice|great|good|lovely) touch\b|\beasy to follow\b|\bwell-written\b|"
    r"^\W*(?:an?|what an?) (?:(?:highly|very|truly|really) )?(?:brilliant|excellent|great|wonderful|fantastic|"
    r"informative|detailed|insightful|engaging|impressive|comprehensive|thorough|concise|fascinating|clear)"
    r"(?:,? (?:and )?[\w-]+)* (?:answer|response|introduction|overview|summary|read|explanation)(?: to\b[^.]*)?\W*$",
    re.IGNORECASE)
# the first person speaking ("I'll add", "I hope"), not a regnal or ordinal I ("Charles I would", "World War I")
_FIRST_PERSON = re.compile(r"(?:^|(?<=[^\w\s])\s*|\b(?i:and|but|so|now|here|then)\s+)(?:I(?:'ll|'m|'ve|'d)\b|"
                           r"I (?:am|will|would|have|hope|think|believe|can|cannot|could|must|need|want|should|"
                           r"shall|just|also)\b)")


def meta_sentence(text: str) -> bool:
    """A sentence that speaks to the user or about the answer or its source instead of answering
    ("Sure, ...", "Here are ...", "I'll add a few more details.", "Your bio is filled with ...",
    "The article highlights ..."); words inside
    quotation marks (a title, a quote) do not count."""
    bare = re.sub(r"[\"“][^\"”]*[\"”]", " ", text).strip().replace("’", "'")
    return bool(_META.search(bare) or _FIRST_PERSON.search(bare))


_PERSON_PROMPT = re.compile(r"\b(?:bio(?:graphy)? of|life of|who (?:was|is))\s+(.+?)[\s.?!]*$", re.IGNORECASE)
_TITLES = frozenset("""sir lord lady saint st king queen prince princess emperor empress duke duchess pope president
general dr mr mrs ms count countess baron the of von van de da der la le du jr sr ii iii iv""".split())


def person_asked(prompt: str, topic: str | None = None) -> str | None:
    """Who a prompt asks about when it asks about a person ("Tell me a bio of Ada Lovelace."; the
    row's topic where the dataset gives one), else None: other prompts name things whose makers
    and parts an answer rightly speaks of."""
    m = _PERSON_PROMPT.search(prompt.strip())
    if not m:
        return None
    return topic or m.group(1)


def name_words(person: str) -> set[str]:
    """The words of a name that identify the person (titles, particles and initials left out):
    "Prince Eugene of Savoy" -> {eugene, savoy}."""
    return {w for w in _words(re.sub(r"\([^)]*\)", " ", person)) if w not in _TITLES and len(w) > 1}


_PRONOUNS = frozenset("he she his her him hers himself herself".split())


def _names_or_stands_for(text: str, names: set[str]) -> bool:
    """`text` names a word of the name (a possessive too: "Klimt's") or has a he/she that may stand for it."""
    ws = {w[:-2] if w.endswith("'s") else w for w in _words(text)}
    return bool(names & ws) or bool(_PRONOUNS & ws)


_ANAPHORA = frozenset("it its this these those they their them".split())


def off_subject_claim(claim: str, person: str, sentence: str = "", previous: str = "") -> bool:
    """A claim of an answer about `person` where neither the claim nor its sentence names a word
    of the person's name or has a pronoun that may stand for them: a fact about someone or
    something else ("Landscape painting is the depiction of natural scenery" in Gustav Klimt's
    answer). A claim about the person's work in a sentence that says "his" is theirs, and so is
    one whose sentence goes on from the sentence before ("It was commissioned ...", "These works
    include ...") when that one is about the person."""
    names = name_words(person)
    if not names or _names_or_stands_for(claim, names) or _names_or_stands_for(sentence, names):
        return False
    return not (_ANAPHORA & set(_words(sentence)) and _names_or_stands_for(previous, names))


_THING_PROMPT = re.compile(r"\babout\s+(?:(?-i:the)\s+)?([^?.!\n]{1,80}?)\s*[?.!\n]", re.IGNORECASE)
_STOPWORDS = frozenset("the a an of and in on for to at by with".split())


def thing_asked(prompt: str, topic: str | None = None) -> str | None:
    """What a prompt that does not ask about a person asks about ("What can you tell me about The
    Legend of Zelda?"; the row's topic where the dataset gives one), else None."""
    if person_asked(prompt, topic):
        return None
    if topic:
        return topic
    m = _THING_PROMPT.search(prompt)
    return m.group(1) if m else None


def _stem(word: str) -> str:
    """A plural's ending dropped ("towers" -> "tower", "thrushes" -> "thrush")."""
    w = word.lower()
    if len(w) > 4 and w.endswith("es") and w[:-2].endswith(("sh", "ch", "x", "ss")):
        return w[:-2]
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def _related(word: str, key: str) -> bool:
    """One word, or a derived form sharing most of it ("pediatricians" and "pediatrics")."""
    if word == key:
        return True
    n = 0
    while n < min(len(word), len(key)) and word[n] == key[n]:
        n += 1
    return n >= 5 and n >= 0.75 * min(len(word), len(key))


class _Thing:
    """A thing's name as an answer may tie a sentence to it: its words, and for a name of several
    capitalized words (`proper`) only as written or after "the" ("the tower" is the Eiffel Tower,
    "a tower" or "towers" are towers in general), or its initials ("NBA")."""

    def __init__(self, name: str):
        content = [w for w in _WORD.findall(re.sub(r"\([^)]*\)", " ", name)) if w.lower() not in _STOPWORDS]
        self.proper = len(content) > 1 and all(w[:1].isupper() for w in content)
        self.keys = {_stem(w) for w in content}
        self.exact = {w.lower() for w in content}
        self.initials = "".join(w[0] for w in content).upper() if len(content) > 1 else ""

    def __bool__(self) -> bool:
        return bool(self.keys)

    def tied(self, text: str) -> bool:
        words = _WORD.findall(text)
        if self.initials and self.initials in words:
            return True
        if self.proper:  # a sentence's first word is capitalized anyway: only as the name writes it
            found = {_stem(w) for i, w in enumerate(words) if w[:1].isupper() and (i or w.lower() in self.exact)}
            found |= {_stem(m) for m in re.findall(r"\bthe\s+(\w+)", text, re.IGNORECASE)}
        else:
            found = {_stem(w) for w in words}
        return any(_related(w, k) for w in found for k in self.keys)


def off_topic_claim(claim: str, thing: "_Thing | str", sentence: str = "", previous_on_topic: bool = False) -> bool:
    """A claim of an answer about a thing that neither it nor its sentence ties to the thing
    (`_Thing.tied`), in a sentence that does not go on ("it", "its", "this", an opening "The
    <noun>") from one on the thing: "A legend is a genre of folklore" in The Legend of Zelda's
    answer, another film's cast in Spirited Away's."""
    thing = thing if isinstance(thing, _Thing) else _Thing(thing)
    if not thing or thing.tied(claim) or thing.tied(sentence):
        return False
    return not (previous_on_topic and _goes_on(sentence))


def _goes_on(sentence: str) -> bool:
    return bool(_ANAPHORA & set(_words(sentence))) or bool(re.match(r"\s*The\s+[a-z]", sentence))


def mark_defects(sentences: list[dict], prompt: str, topic: str | None = None) -> dict:
    """Mark each sentence of a details line (`repeats`, `loop`, `meta`) and each claim about
    something else than the prompt's person or thing (`off_subject`); the counts (`defect_counts`).
    Idempotent."""
    person = person_asked(prompt, topic)
    asked = None if person else thing_asked(prompt, topic)
    thing = _Thing(asked) if asked else None
    texts = [s["text"] for s in sentences]
    on_topic = False  # the sentence before is on the thing (a sentence going on from it is too)
    for i, (s, rep) in enumerate(zip(sentences, repeated_sentences(texts))):
        s["repeats"], s["loop"], s["meta"] = rep, loop_sentence(s["text"]), meta_sentence(s["text"])
        previous = texts[i - 1] if i else ""
        for c in s["claims"]:
            if person:
                c["off_subject"] = off_subject_claim(c["text"], person, s["text"], previous)
            else:
                c["off_subject"] = thing is not None and off_topic_claim(c["text"], thing, s["text"], on_topic)
        if thing:
            on_topic = thing.tied(s["text"]) or (on_topic and _goes_on(s["text"]))
    return _counts(sentences, asked=bool(person or thing))


def defect_counts(sentences: list[dict], prompt: str, topic: str | None = None) -> dict:
    """The counts a details line carries (after `mark_defects`); off-subject claims None for an
    answer whose prompt names no person or thing."""
    return _counts(sentences, asked=bool(person_asked(prompt, topic) or thing_asked(prompt, topic)))


def _counts(sentences: list[dict], asked: bool) -> dict:
    return {"defects": DEFECTS,
            "repeated_sentences": sum(1 for s in sentences if s.get("repeats")),
            "loop_sentences": sum(1 for s in sentences if s.get("loop")),
            "meta_sentences": sum(1 for s in sentences if s.get("meta")),
            "off_subject_claims": None if not asked else sum(
                1 for s in sentences for c in s["claims"] if c.get("off_subject") and "duplicate_of" not in c)}
