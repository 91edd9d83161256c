"""Language names, as the user writes them, and the one name a memory stores for each.

"answer in Portuguese", "responde em português", "responde en portugués", "réponds en
portugais" and "antworte auf Portugiesisch" all store ``portuguese``, so the latest of
them replaces the others on the ``language`` topic whatever language it was said in.
"""

from __future__ import annotations

from agents.understanding.memory.rules.statement import fold

#: The canonical (English) names a memory stores.
LANGUAGES = frozenset(
    [
        "english",
        "portuguese",
        "spanish",
        "french",
        "german",
        "italian",
        "dutch",
        "polish",
        "japanese",
        "chinese",
        "mandarin",
        "korean",
        "russian",
        "arabic",
        "hindi",
        "turkish",
        "swedish",
        "danish",
        "norwegian",
        "finnish",
        "greek",
        "czech",
        "ukrainian",
        "romanian",
        "hungarian",
        "catalan",
        "hebrew",
    ]
)

#: Each canonical name in Portuguese, Spanish, French and German, folded (`fold`): one
#: spelling serves "português" and "portugués", "alemão" needs its own.
_NAMES: dict[str, tuple[str, ...]] = {
    "english": ("ingles", "anglais", "englisch"),
    "portuguese": ("portugues", "portugais", "portugiesisch"),
    "spanish": ("espanhol", "castelhano", "espanol", "castellano", "espagnol", "spanisch"),
    "french": ("frances", "francais", "franzosisch"),
    "german": ("alemao", "aleman", "allemand", "deutsch"),
    "italian": ("italiano", "italien", "italienisch"),
    "dutch": ("neerlandes", "holandes", "neerlandais", "hollandais", "niederlandisch"),
    "polish": ("polaco", "polones", "polonais", "polnisch"),
    "japanese": ("japones", "japonais", "japanisch"),
    "chinese": ("chines", "chino", "chinois", "chinesisch"),
    "mandarin": ("mandarim", "mandarin"),
    "korean": ("coreano", "coreen", "koreanisch"),
    "russian": ("russo", "ruso", "russe", "russisch"),
    "arabic": ("arabe", "arabisch"),
    "hindi": ("hindi",),
    "turkish": ("turco", "turc", "turkisch"),
    "swedish": ("sueco", "suedois", "schwedisch"),
    "danish": ("dinamarques", "danes", "danois", "danisch"),
    "norwegian": ("noruegues", "noruego", "norvegien", "norwegisch"),
    "finnish": ("finlandes", "finnois", "finlandais", "finnisch"),
    "greek": ("grego", "griego", "grec", "griechisch"),
    "czech": ("checo", "tcheco", "tcheque", "tschechisch"),
    "ukrainian": ("ucraniano", "ukrainien", "ukrainisch"),
    "romanian": ("romeno", "rumano", "roumain", "rumanisch"),
    "hungarian": ("hungaro", "hongrois", "ungarisch"),
    "catalan": ("catalao", "catalan", "katalanisch"),
    "hebrew": ("hebraico", "hebreo", "hebreu", "hebraisch"),
}
_CANONICAL = {name: canonical for canonical, names in _NAMES.items() for name in names}


def canonical_language(word: str) -> str | None:
    """The canonical name of the language a word names, in any of the five languages."""
    folded = fold(word)
    return folded if folded in LANGUAGES else _CANONICAL.get(folded)
