"""The Spanish rules: "Trabajo en la oficina de Madrid", "Responde en español",
"Me llamo Luis", "Mi equipo es Payments".

Spanish drops the subject, so the first-person verb ("trabajo", "vivo", "soy") marks the
speaker; it must open its clause (after "yo", "ahora", "y", "que" ...), since "el trabajo
en equipo" uses the same word as a noun.
"""

from __future__ import annotations

import re

from agents.memory_rules.table import LanguageRules, by_word, office_of, patterns, word_set

#: Where a subject-less first-person verb may stand: a clause's start, after "y"/"que".
_LEAD = (
    r"(?:^|\b(?:y|e|pero|que)\s+)\s*"
    r"(?:(?:yo|ahora|actualmente|también|tambien|hoy|todavía|todavia)\s+)*"
)
#: Adverbs between the verb and what it says ("trabajo ahora en ...").
_AFTER = r"(?:\s+(?:ahora|actualmente|hoy|también|tambien|todavía|todavia))*"

RULES = LanguageRules(
    negation=re.compile(
        r"\b(?:no|nunca|jamás|jamas|tampoco|ni|ningún|ningun|ninguna|ninguno)\b", re.I
    ),
    question=re.compile(
        r"^\s*(?:(?:y|pero)\s+)?(?:¿|(?:qué|que|dónde|donde|adónde|adonde|quién|quien|"
        r"quiénes|quienes|cuál|cual|cuáles|cuales|cuándo|cuando|por\s+qué|cómo|como|cuánto|"
        r"cuanto|cuánta|cuanta|cuántos|cuantos|cuántas|cuantas)\b)",
        re.I,
    ),
    remember=re.compile(
        r"^\s*(?:por\s+favor,?\s+)?(?:recuérdalo|recuerda|recuerde|acuérdate|acuerdate|"
        r"ten\s+en\s+cuenta|tenga\s+en\s+cuenta|toma\s+nota|anota|no\s+olvides|"
        r"no\s+olvide)(?:\s+de)?[:,]?\s*(?:que\s+)?",
        re.I,
    ),
    stop=re.compile(
        r"\s*(?:,|;|:|\(|\by\b|\bpero\b|\bporque\b|\bpues\b|\bpor\s+favor\b|\bdesde\b|"
        r"\bhace\s+\d|\bas[ií]\s+que\b|$)",
        re.I,
    ),
    articles=re.compile(r"^(?:el|la|los|las|un|una)\s+", re.I),
    work=patterns(
        _LEAD + r"trabajo" + _AFTER + r"\s+(?P<prep>en|para)\s+(?P<rest>.+)",
        _LEAD + r"estoy\s+(?:basado|basada|ubicado|ubicada)\s+(?P<prep>en)\s+(?P<rest>.+)",
    ),
    preps={"para": "for"},
    moved=patterns(
        _LEAD
        + r"(?:me\s+mudé|me\s+mude|me\s+he\s+mudado|me\s+cambié|me\s+cambie|"
        + r"me\s+he\s+cambiado|me\s+trasladaron|me\s+han\s+trasladado)"
        + _AFTER
        + r"\s+a\s+(?:la\s+)?(?P<rest>oficina\b.+)",
    ),
    office=office_of(r"^oficina\s+(?:de|del|en)\s+(?P<city>.+)$"),
    home=patterns(_LEAD + r"(?:vivo|resido)" + _AFTER + r"\s+en\s+(?P<rest>.+)"),
    name=patterns(
        r"\b(?:me\s+llamo|mi\s+nombre\s+es|llámame|llamame|puedes\s+llamarme|"
        r"puede\s+llamarme)\s+(?P<rest>.+)",
    ),
    work_as=patterns(_LEAD + r"trabajo" + _AFTER + r"\s+como\s+(?P<rest>.+)"),
    i_am=patterns(_LEAD + r"soy\s+(?P<rest>.+)"),
    jobs=word_set(
        "ingeniero, ingeniera, programador, programadora, desarrollador, desarrolladora, "
        "analista, gerente, jefe, jefa, director, directora, administrador, administradora, "
        "admin, médico, médica, enfermero, enfermera, abogado, abogada, profesor, profesora, "
        "contable, contador, contadora, consultor, consultora, diseñador, diseñadora, "
        "becario, becaria, técnico, técnica, arquitecto, arquitecta, científico, científica, "
        "investigador, investigadora, vendedor, vendedora, coordinador, coordinadora, "
        "asistente, estudiante, líder"
    ),
    answer_in=patterns(
        r"\b(?:respóndeme|respondeme|responde|responda|respondan|respondas|contéstame|"
        r"contestame|contesta|conteste|contestes|escríbeme|escribeme|escribe|escriba|"
        r"escribas|háblame|hablame|habla|hable|hables)"
        r"(?:\s+(?:siempre|solo|sólo|solamente|únicamente|unicamente))*"
        r"\s+en\s+(?P<v>[^\W\d_]+)",
    ),
    prefer=patterns(_LEAD + r"prefiero\s+(?!que\b)(?P<rest>.+)"),
    answers=word_set("respuesta, respuestas"),
    lengths=by_word(
        {
            "short": "corta, cortas, corto, cortos, breve, breves, concisa, concisas",
            "detailed": "detallada, detalladas, completa, completas, extensa, extensas",
            "long": "larga, largas",
        }
    ),
    mine=patterns(r"\bmi\s+(?P<k>zona\s+horaria|huso\s+horario|[^\W\d_]+)\s+es\s+(?P<rest>.+)"),
    keys=by_word(
        {
            "team": "equipo",
            "department": "departamento",
            "manager": "jefe, jefa, gerente, manager, responsable, supervisor, supervisora",
            "role": "cargo, puesto, rol, función, papel",
            "job": "trabajo, empleo, profesión",
            "title": "título",
            "timezone": "zona horaria, huso horario",
            "office": "oficina",
            "city": "ciudad",
            "country": "país",
            "pronouns": "pronombres",
            "language": "idioma, lengua",
            "company": "empresa",
            "employer": "empleador, empleadora",
        }
    ),
)
