"""The closed-class words and verb lemmas the memory rules read, per language.

Lemmas come from simplemma (`reading.lemmas`): "trabajé", "trabajara" and "trabajar" are
one entry. Where simplemma reads a Portuguese or Spanish first-person verb as its noun
("trabalho", "trabajo", "uso", "vivo"), that form is listed beside the lemma. Pronouns,
negations, question and condition words are closed classes: a short list is all of them.
"""

from __future__ import annotations

from dataclasses import dataclass


def _w(words: str) -> frozenset[str]:
    return frozenset(words.split())


@dataclass(frozen=True, slots=True)
class Lexicon:
    """One language's words; every entry lower case."""

    me: frozenset[str]
    """The first-person subject ("i", "eu", "yo", "je", "ich")."""
    mine: frozenset[str]
    """First-person possessives ("my", "meu", "mi", "mon", "mein")."""
    negation: frozenset[str]
    condition: frozenset[str]
    """What opens a hypothetical ("if", "suppose", "se", "wenn", "angenommen")."""
    asking: frozenset[str]
    """Words that open a question (the clause's first word)."""
    want: frozenset[str]
    """Lemmas of asking for something ("want", "need", "querer", "brauchen")."""
    be: frozenset[str]
    work: frozenset[str]
    live: frozenset[str]
    use: frozenset[str]
    lead: frozenset[str]
    prefer: frozenset[str]
    called: frozenset[str]
    """Lemmas of being called ("call", "llamar", "appeler", "heißen")."""
    answer: frozenset[str]
    """Lemmas of answers and of answering ("answer", "resposta", "antworten")."""
    move: frozenset[str]
    """Lemmas of moving somewhere ("move", "mudar", "déménager", "umziehen"): a workplace
    when where the user moved is one of ``workplaces``, a home otherwise."""
    workplaces: frozenset[str]
    """Nouns of places of work ("office", "escritório", "Büro")."""
    keys: dict[str, str]
    """The topic of each noun a possessive may name ("name" -> name, "zeitzone" -> timezone)."""
    articles: frozenset[str]
    preps: frozenset[str]
    """Prepositions: where a role or a trait ends ("engineer | on the Payments team")."""

    @property
    def small(self) -> frozenset[str]:
        """The language's closed-class words, which tell it from a neighbour."""
        return self.me | self.mine | self.negation | self.articles | self.preps | self.asking


_KEYS_EN = {"name": "name", "pronoun": "pronouns", "zone": "timezone", "timezone": "timezone"}

LEXICONS: dict[str, Lexicon] = {
    "en": Lexicon(
        me=_w("i"),
        mine=_w("my"),
        negation=_w("not never no n't"),
        condition=_w("if suppose supposing imagine assuming would were unless"),
        asking=_w(
            "what where who which when why how do does did am is are can could should will may"
        ),
        want=_w("want need wish like love know"),
        be=_w("be"),
        work=_w("work"),
        live=_w("live"),
        use=_w("use"),
        lead=_w("manage lead run own"),
        prefer=_w("prefer like"),
        called=_w("call"),
        answer=_w("answer reply respond write speak talk explain keep"),
        move=_w("move relocate transfer"),
        workplaces=_w("office company team branch site job"),
        keys=_KEYS_EN | {"team": "team", "role": "role", "job": "role", "language": "language"},
        articles=_w("a an the"),
        preps=_w("on in at for from of with to by since"),
    ),
    "pt": Lexicon(
        me=_w("eu"),
        mine=_w("meu minha"),
        negation=_w("não nao nunca jamais nem"),
        condition=_w("se imagina imagine suponha supondo suponhamos caso fosse"),
        asking=_w(
            "que onde aonde quem qual quais quando porque como quanto quantos quantas "
            "podes pode posso será"
        ),
        want=_w("querer precisar gostar desejar"),
        be=_w("ser estar sou estou"),
        work=_w("trabalhar trabalho"),
        live=_w("morar viver moro vivo residir"),
        use=_w("usar uso utilizar"),
        lead=_w("gerir liderar dirigir"),
        prefer=_w("preferir"),
        called=_w("chamar"),
        answer=_w("responder resposta escrever falar"),
        move=_w("mudar transferir"),
        workplaces=_w("escritório empresa equipe equipa filial"),
        keys={
            "nome": "name",
            "fuso": "timezone",
            "equipa": "team",
            "equipe": "team",
            "cargo": "role",
            "pronome": "pronouns",
            "língua": "language",
        },
        articles=_w("o a os as um uma"),
        preps=_w("de do da dos das no na em para com a ao pela pelo desde"),
    ),
    "es": Lexicon(
        me=_w("yo"),
        mine=_w("mi"),
        negation=_w("no nunca jamás ni"),
        condition=_w("si supongamos imagina imaginemos suponiendo fuera fuese trabajara viviera"),
        asking=_w(
            "qué que dónde donde quién cuál cuáles cuándo cómo cuánto cuántos cuántas puedes puede"
        ),
        want=_w("querer necesitar gustar desear"),
        be=_w("ser estar soy estoy"),
        work=_w("trabajar trabajo"),
        live=_w("vivir vivo residir"),
        use=_w("usar uso utilizar"),
        lead=_w("dirigir liderar gestionar"),
        prefer=_w("preferir"),
        called=_w("llamar"),
        answer=_w("responder respuesta escribir hablar"),
        move=_w("mudar trasladar"),
        workplaces=_w("oficina empresa equipo sucursal"),
        keys={
            "nombre": "name",
            "zona": "timezone",
            "equipo": "team",
            "puesto": "role",
            "pronombre": "pronouns",
            "idioma": "language",
        },
        articles=_w("el la los las un una"),
        preps=_w("de del en para con a al por desde"),
    ),
    "fr": Lexicon(
        me=_w("je j"),
        mine=_w("mon ma"),
        negation=_w("ne n pas jamais"),
        condition=_w("si imaginons imagine supposons supposer"),
        asking=_w(
            "où qui quel quelle quels quelles quand pourquoi comment combien est-ce peux pouvez"
        ),
        want=_w("vouloir besoin aimer souhaiter"),
        be=_w("être"),
        work=_w("travailler bosser bosse"),
        live=_w("habiter vivre"),
        use=_w("utiliser"),
        lead=_w("diriger gérer"),
        prefer=_w("préférer"),
        called=_w("appeler"),
        answer=_w("répondre réponse écrire parler"),
        move=_w("déménager muter"),
        workplaces=_w("bureau entreprise équipe agence"),
        keys={
            "nom": "name",
            "fuseau": "timezone",
            "équipe": "team",
            "poste": "role",
            "pronom": "pronouns",
            "langue": "language",
        },
        articles=_w("le la les l un une des"),
        preps=_w("de du des dans à au aux chez pour avec en par jusqu depuis"),
    ),
    "de": Lexicon(
        me=_w("ich"),
        mine=_w("mein meine"),
        negation=_w("nicht kein keine keinen nie niemals"),
        condition=_w("wenn falls angenommen würde wäre hätte"),
        asking=_w("wo wer was welche welcher welches wann warum wie kannst können bin"),
        want=_w("mögen möchten wollen brauchen wünschen"),
        be=_w("sein"),
        work=_w("arbeiten"),
        live=_w("wohnen leben"),
        use=_w("benutzen verwenden nutzen"),
        lead=_w("leiten führen"),
        prefer=_w("bevorzugen mögen"),
        called=_w("heißen heiße"),
        answer=_w("antworten antwort schreiben sprechen"),
        move=_w("umziehen ziehen wechseln"),
        workplaces=_w("büro firma team standort filiale"),
        keys={
            "name": "name",
            "zeitzone": "timezone",
            "team": "team",
            "rolle": "role",
            "pronomen": "pronouns",
            "sprache": "language",
        },
        articles=_w("der die das ein eine einen dem den"),
        preps=_w("bei in im am für mit von vom aus gegen zu zum zur seit"),
    ),
}
