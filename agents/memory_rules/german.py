"""The German rules: "Ich arbeite im Berliner Büro", "Antworte auf Deutsch",
"Ich heiße Jonas", "Mein Team ist Payments".

"ich" marks the speaker, before its verb ("ich arbeite"), after it when an adverb leads
("jetzt arbeite ich"), or with the verb last in a "dass" clause ("merk dir, dass ich im
Büro in Berlin arbeite"). A question puts the verb first ("Arbeite ich in Berlin?") and
ends with "?", so it is dropped before these rules read it.
"""

from __future__ import annotations

import re

from agents.memory_rules.table import LanguageRules, by_word, patterns, word_set

#: Adverbs that may lead a statement (then the verb comes before "ich") or follow its verb.
_ADVERB = r"(?:jetzt|nun|inzwischen|mittlerweile|derzeit|aktuell|momentan|gerade|seit\s+\S+)"
_AFTER = r"(?:\s+(?:" + _ADVERB + r"|schon|auch|hauptsächlich|hauptsaechlich))*"


def _i(verbs: str) -> str:
    """The speaker and a verb: "ich <verb>" or "<adverb> <verb> ich", then any adverbs."""
    return rf"\b(?:ich\s+(?:{verbs})|{_ADVERB}\s+(?:{verbs})\s+ich)" + _AFTER


#: Demonyms whose city is not the demonym less its "-er" ("Münchner Büro" -> München).
_CITIES = {
    "Münchner": "München",
    "Münchener": "München",
    "Dresdner": "Dresden",
    "Bremer": "Bremen",
    "Zürcher": "Zürich",
    "Basler": "Basel",
    "Hannoveraner": "Hannover",
}
_OFFICE = re.compile(
    r"^(?:Büro|Buero|Standort|Niederlassung)\s+(?:in\s+)?(?P<city>\S+(?:\s+\S+)?)$", re.I
)
_ADJECTIVE_OFFICE = re.compile(r"^(?P<demonym>\S+er)\s+(?:Büro|Buero|Standort)$", re.I)


def office(value: str) -> str | None:
    """The city of an office: "Büro in Berlin", "Standort Berlin", "Berliner Büro"."""
    if (m := _OFFICE.match(value)) and m.group("city")[0].isupper():
        return m.group("city")
    if (m := _ADJECTIVE_OFFICE.match(value)) and (demonym := m.group("demonym"))[0].isupper():
        return _CITIES.get(demonym, demonym.removesuffix("er"))
    return None


RULES = LanguageRules(
    negation=re.compile(
        r"\b(?:nicht|kein|keine|keinen|keinem|keiner|keines|nie|niemals|nirgends|nirgendwo)\b",
        re.I,
    ),
    question=re.compile(
        r"^\s*(?:(?:und|aber)\s+)?(?:wo|woher|wohin|was|wer|wen|wem|wessen|wie|wann|warum|"
        r"weshalb|wieso|weswegen|welche|welcher|welches|welchen|welchem|ist|sind|bin|bist|"
        r"kann|kannst|können|könnte|soll|sollte|muss|darf|gibt|hat|hast|habe|haben|wird|"
        r"werde|arbeite|wohne|lebe|heiße|heisse)\b",
        re.I,
    ),
    remember=re.compile(
        r"^\s*(?:bitte\s+)?(?:merk\s+dir|merke\s+dir|merkt\s+euch|merken\s+sie\s+sich|"
        r"denk\s+daran|denke\s+daran|denken\s+sie\s+daran|beachte|beachten\s+sie|"
        r"vergiss\s+nicht|vergessen\s+sie\s+nicht|notier\s+dir|notiere\s+dir)"
        r"(?:\s+bitte)?[:,]?\s*(?:dass\s+)?",
        re.I,
    ),
    stop=re.compile(
        r"\s*(?:,|;|:|\(|\bund\b|\baber\b|\bweil\b|\bdenn\b|\bbitte\b|\bseit\b|\bsondern\b|"
        r"\balso\b|$)",
        re.I,
    ),
    articles=re.compile(r"^(?:der|die|das|dem|den|des|ein|eine|einem|einer)\s+", re.I),
    work=patterns(
        _i("arbeite") + r"\s+(?P<prep>in|im|bei|beim|für|fuer|am)\s+(?P<rest>.+)",
        # a "dass" clause puts the verb last: "(dass) ich im Büro in Berlin arbeite"
        r"\bich" + _AFTER + r"\s+(?P<prep>in|im|bei|beim|für|fuer|am)\s+(?P<rest>.+?)\s+arbeite\b",
    ),
    preps={"bei": "at", "beim": "at", "am": "at", "fur": "for", "fuer": "for"},
    moved=patterns(
        r"\bich\s+(?:bin|wurde)" + _AFTER + r"\s+(?:ins|in\s+das)\s+(?P<rest>.+?)\s+"
        r"(?:gewechselt|umgezogen|versetzt)\b",
    ),
    office=office,
    home=patterns(
        _i("wohne|lebe") + r"\s+(?:in|im)\s+(?P<rest>.+)",
        r"\bich" + _AFTER + r"\s+(?:in|im)\s+(?P<rest>.+?)\s+(?:wohne|lebe)\b",
    ),
    name=patterns(
        r"\b(?:ich\s+heiße|ich\s+heisse|mein\s+(?:name|vorname)\s+ist|nenn\s+mich|"
        r"nenne\s+mich|nennen\s+sie\s+mich|man\s+nennt\s+mich)(?:\s+bitte)?\s+"
        r"(?!sie\b|ihnen\b)(?P<rest>.+)",
        r"\bich\s+(?P<rest>\S+(?:\s+\S+)?)\s+(?:heiße|heisse)\b",
    ),
    work_as=patterns(_i("arbeite") + r"\s+als\s+(?P<rest>.+)"),
    i_am=patterns(r"\bich\s+bin\s+(?P<rest>.+)"),
    jobs=word_set(
        "ingenieur, ingenieurin, entwickler, entwicklerin, programmierer, programmiererin, "
        "analyst, analystin, manager, managerin, leiter, leiterin, direktor, direktorin, "
        "administrator, administratorin, admin, arzt, ärztin, pfleger, pflegerin, anwalt, "
        "anwältin, lehrer, lehrerin, buchhalter, buchhalterin, berater, beraterin, designer, "
        "designerin, praktikant, praktikantin, techniker, technikerin, architekt, architektin, "
        "wissenschaftler, wissenschaftlerin, forscher, forscherin, verkäufer, verkäuferin, "
        "koordinator, koordinatorin, assistent, assistentin, student, studentin"
    ),
    answer_in=patterns(
        r"\b(?:antworte|antwortet|antworten\s+sie|schreib|schreibe|schreibt|schreiben\s+sie|"
        r"sprich|sprecht|sprechen\s+sie)"
        r"(?:\s+(?:mir|mit\s+mir|bitte|immer|nur|ab\s+jetzt|künftig|kuenftig|in\s+zukunft))*"
        r"\s+(?:auf|in)\s+(?P<v>[^\W\d_]+)",
        r"\b(?:auf|in)\s+(?P<v>[^\W\d_]+)\s+(?:antworten|antwortest|antwortet|schreiben|"
        r"schreibst|sprechen)\b",
    ),
    prefer=patterns(
        _i("bevorzuge") + r"\s+(?P<rest>.+)",
        _i("mag|möchte|moechte|hätte|haette") + r"\s+(?:gern\s+|gerne\s+)?lieber\s+(?P<rest>.+)",
    ),
    answers=word_set("antwort, antworten"),
    lengths=by_word(
        {
            "short": "kurz, kurze, kurzen, knapp, knappe, knappen, prägnante, prägnanten",
            "detailed": "ausführlich, ausführliche, ausführlichen, detaillierte, detaillierten",
            "long": "lang, lange, langen",
        }
    ),
    mine=patterns(
        r"\b(?:mein|meine)\s+(?P<k>[^\W\d_]+)\s+(?:ist|lautet)\s+(?P<rest>.+)",
        # a "dass" clause: "(dass) mein Team Payments ist"
        r"(?:^\s*|\b(?:dass|und|aber)\s+)(?:mein|meine)\s+(?P<k>[^\W\d_]+)\s+"
        r"(?P<rest>.+?)\s+ist\W*$",
    ),
    keys=by_word(
        {
            "team": "team",
            "department": "abteilung",
            "manager": "manager, managerin, chef, chefin, vorgesetzter, vorgesetzte, "
            "teamleiter, teamleiterin, führungskraft",
            "role": "rolle, position, funktion, stelle",
            "job": "job, beruf",
            "title": "titel, berufsbezeichnung",
            "timezone": "zeitzone",
            "office": "büro, standort",
            "city": "stadt, wohnort",
            "country": "land",
            "pronouns": "pronomen",
            "language": "sprache, muttersprache",
            "company": "firma, unternehmen",
            "employer": "arbeitgeber, arbeitgeberin",
        }
    ),
)
