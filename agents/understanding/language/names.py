"""What a text names: people, places, products, days and months, as a lexicon reads them.

A word names something when the language's lexicon does not define it as a common word:
simplemma knows no "Okafor", "Gdansk" or "xllamacpp" (a name, a code, a product), and it
holds "Lisbon" or "John" with a capitalised lemma, as a proper noun. The word's own case in
the text decides nothing: a German noun is capitalised and names nobody, and a name typed in
lower case is still one. German's lexicon capitalises every noun, so there only an unknown
word names something. Weekdays and months come from dateparser's calendar of each language
("Tuesday", "terça-feira", "dienstag"), read as the day or month they are, so that two
languages' names of one day are one. What a run's documents are called ("policy",
"handbook", "Richtlinie") and the phrases that attribute a statement to a source ("according
to", "segundo") are each language's own words too (`DOCUMENTS`). The examples are made up.
"""

from __future__ import annotations

import functools
import re

import simplemma

from agents.understanding.language.words import (
    LANGUAGES,
    WORD,
    function_words,
    lemma,
    words,
)

#: Languages whose lexicon capitalises every noun: a capitalised lemma there is no name.
NOUNS_CAPITALISED = frozenset({"de"})
#: dateparser's calendar keys: the weekdays and months.
CALENDAR = (
    *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    *("january", "february", "march", "april", "may", "june", "july", "august"),
    *("september", "october", "november", "december"),
)
#: A calendar word shorter than this is an abbreviation ("mar" is March, Tuesday and the sea).
MIN_CALENDAR_WORD = 4
_ELISION = re.compile(r"['’]")


@functools.cache
def calendar_words(lang: str) -> dict[str, str]:
    """The weekday and month names of ``lang`` (dateparser's locale data), case-folded, each
    mapped to the day or month it names ("terça-feira" -> "tuesday")."""
    from dateparser.languages import default_loader  # its language data: loaded when asked

    try:
        info = default_loader.get_locale(lang).info
    except Exception:  # a language dateparser does not ship: no calendar words
        return {}
    function = function_words(lang)
    out: dict[str, str] = {}
    for key in CALENDAR:
        for form in info.get(key, []):
            word = str(form).casefold()
            if len(word) >= MIN_CALENDAR_WORD and word not in function:
                out[word] = key
    return out


def _proper(word: str, lang: str) -> bool:
    low = word.casefold()
    if not (simplemma.is_known(word, lang=lang) or simplemma.is_known(low, lang=lang)):
        return True  # the lexicon does not define it: a name, a code, a product
    if lang in NOUNS_CAPITALISED:
        return False
    return simplemma.lemmatize(low, lang=lang)[:1].isupper()


def _names_something(word: str, lang: str, function: frozenset[str]) -> bool:
    if simplemma.is_known(word, lang=lang) and not _proper(word, lang):
        return False
    # An elided article or preposition ("l'abonnement", "jusqu'à") says nothing: the word
    # after it does. A compound names something when a part of it does ("lyon-part-dieu",
    # not "early-bird").
    head = _ELISION.split(word)[-1]
    parts = [p for p in head.split("-") if len(p) > 1 and p.casefold() not in function]
    return any(_proper(p, lang) for p in parts)


def names(text: str, lang: str) -> set[str]:
    """What ``text`` names (case-folded): its words the lexicon of ``lang`` does not define
    or holds as proper nouns, and its weekdays and months (as the day or month named)."""
    calendar = calendar_words(lang)
    function = function_words(lang)
    out: set[str] = set()
    for word in words(text):
        low = word.casefold()
        if low in calendar:
            out.add(calendar[low])
        elif low not in function and _names_something(word, lang, function):
            out.add(low)
    return out


def spans(text: str, lang: str) -> list[str]:
    """The names of ``text`` as written, adjacent name words kept together ("Mirela Okafor",
    "Lyon-Part-Dieu"), with a capitalised word that follows one; a weekday or a month stands
    alone, as the day or month it names."""
    calendar = calendar_words(lang)
    function = function_words(lang)
    out: list[str] = []
    run: list[str] = []
    end = 0
    for match in WORD.finditer(text):
        word, low = match.group(0), match.group(0).casefold()
        joined = not text[end : match.start()].strip()
        named = low not in calendar and low not in function
        # A capitalised word right after a name goes on with it ("Tomas Berg": the English
        # lexicon knows "berg").
        named = named and (
            _names_something(word, lang, function) or bool(run and joined and word[:1].isupper())
        )
        if not named or not joined:
            if run:
                out.append(" ".join(run))
            run = []
        if low in calendar:
            out.append(calendar[low])
        elif named:
            run.append(word)
        end = match.end()
    if run:
        out.append(" ".join(run))
    return list(dict.fromkeys(out))


#: Each language's words for what a run's documents are (a lemma each; "policies" is
#: "policy"), and its phrases that attribute a statement to a source ("according to").
DOCUMENTS: dict[str, tuple[str, ...]] = {
    "en": ("document", "doc", "docs", "policy", "handbook", "guide", "according to"),
    "pt": ("documento", "política", "manual", "guia", "regulamento", "de acordo com", "segundo"),
    "es": ("documento", "política", "manual", "guía", "reglamento", "según", "de acuerdo con"),
    "fr": ("document", "politique", "manuel", "guide", "règlement", "selon", "d'après"),
    "de": ("dokument", "richtlinie", "handbuch", "leitfaden", "laut", "gemäß"),
    "it": ("documento", "politica", "manuale", "guida", "regolamento", "secondo"),
    "nl": ("document", "beleid", "handboek", "gids", "volgens"),
}
#: Each language's definite and possessive determiners: "our policy" names the run's own
#: documents, where "a policy" names a kind of thing.
DETERMINERS: dict[str, tuple[str, ...]] = {
    "en": ("the", "our", "your", "this", "these", "my"),
    "pt": ("o", "a", "os", "as", "nosso", "nossa", "nossos", "nossas", "seu", "sua", "este"),
    "es": ("el", "la", "los", "las", "nuestro", "nuestra", "nuestros", "nuestras", "su", "sus"),
    "fr": ("le", "la", "les", "l", "notre", "nos", "votre", "vos", "ce", "cette"),
    "de": ("der", "die", "das", "den", "dem", "des", "unser", "unsere", "unseren", "unserem"),
    "it": ("il", "lo", "la", "i", "gli", "le", "l", "nostro", "nostra", "nostri", "nostre"),
    "nl": ("de", "het", "ons", "onze", "uw"),
}  # fmt: skip
#: How many words may stand between a determiner and the document it names ("our travel
#: policy documents").
DETERMINER_REACH = 3


def documents(text: str, lang: str, owned: bool = False) -> bool:
    """Whether ``text`` names documents (a document word of ``lang``, as a lemma) or a
    source ("according to"); with ``owned``, a document word after a definite or
    possessive determiner within :data:`DETERMINER_REACH` words ("our travel policy")."""
    wanted = DOCUMENTS.get(lang, DOCUMENTS[LANGUAGES[0]])
    folded = [w.casefold() for w in words(text)]
    lemmas = [lemma(w, lang) for w in folded]
    single = {w for w in wanted if " " not in w}
    hits = [
        i for i, (w, m) in enumerate(zip(folded, lemmas, strict=True)) if w in single or m in single
    ]
    if owned:
        determiners = set(DETERMINERS.get(lang, ()))
        return any(d in determiners for i in hits for d in folded[max(0, i - DETERMINER_REACH) : i])
    joined = " ".join(folded)
    phrases = [p for p in wanted if " " in p or "'" in p]
    return bool(hits) or any(re.search(rf"(?<!\w){re.escape(p)}(?!\w)", joined) for p in phrases)
