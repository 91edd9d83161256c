"""The French rules: "Je travaille au bureau de Paris", "Réponds en français",
"Je m'appelle Claire", "Mon équipe est Payments".

"je" / "j'" marks the speaker. Negation is "ne ... pas" in writing and "pas" alone when
spoken; either is enough to take nothing from a clause.
"""

from __future__ import annotations

import re

from agents.memory_rules.table import LanguageRules, by_word, office_of, patterns, word_set

#: Adverbs between the verb and what it says ("je travaille maintenant à ...").
_AFTER = r"(?:\s+(?:maintenant|désormais|desormais|actuellement|aujourd'hui|aussi|toujours))*"
_AT = r"(?:à|a|au|aux|en|dans)"

RULES = LanguageRules(
    negation=re.compile(r"\b(?:ne|pas|jamais|aucun|aucune|nullement)\b|\bn'", re.I),
    question=re.compile(
        r"^\s*(?:(?:et|mais)\s+)?(?:est-ce|qu'est|quoi|où|qui|quel|quelle|quels|quelles|"
        r"quand|pourquoi|comment|combien|lequel|laquelle)\b",
        re.I,
    ),
    remember=re.compile(
        r"^\s*(?:s'il\s+(?:te|vous)\s+pla[iî]t,?\s+)?(?:souviens-toi|souvenez-vous|"
        r"rappelle-toi|rappelez-vous|retiens|retenez|notez|note|n'oublie\s+pas|"
        r"n'oubliez\s+pas)(?:\s+bien)?[:,]?\s*(?:que\s+|qu')?",
        re.I,
    ),
    stop=re.compile(
        r"\s*(?:,|;|:|\(|\bet\b|\bmais\b|\bcar\b|\bparce\b|\bdepuis\b|\bdonc\b|\bpuisque\b|"
        r"\bs'il\b|$)",
        re.I,
    ),
    articles=re.compile(r"^(?:(?:le|la|les|un|une|des|du)\s+|l')", re.I),
    work=patterns(
        r"\bje\s+travaille" + _AFTER + r"\s+(?P<prep>à|a|au|aux|en|dans|chez|pour)\s+(?P<rest>.+)",
        r"\bje\s+suis" + _AFTER + r"\s+(?:basée?|installée?)\s+(?P<prep>" + _AT + r")\s+"
        r"(?P<rest>.+)",
    ),
    preps={"chez": "at", "pour": "for"},
    moved=patterns(
        r"\b(?:j'ai\s+(?:été\s+)?(?:mutée?|déménagée?|demenagee?|rejoint)|"
        r"je\s+suis\s+(?:passée?|mutée?))" + _AFTER + r"\s+(?:au|à|a|dans)?\s*(?:le\s+)?"
        r"(?P<rest>bureau\b.+)",
    ),
    office=office_of(r"^bureau\s+(?:de\s+|du\s+|d'|à\s+|a\s+)(?P<city>.+)$"),
    home=patterns(
        r"\bj'habite" + _AFTER + r"(?:\s+" + _AT + r")?\s+(?P<rest>.+)",
        r"\bje\s+(?:vis|réside|reside)" + _AFTER + r"\s+" + _AT + r"\s+(?P<rest>.+)",
    ),
    name=patterns(
        r"\b(?:je\s+m'appelle|mon\s+(?:nom|prénom|prenom)\s+est|appelle-moi|appelez-moi|"
        r"tu\s+peux\s+m'appeler|vous\s+pouvez\s+m'appeler|on\s+m'appelle)\s+(?P<rest>.+)",
    ),
    work_as=patterns(r"\bje\s+travaille" + _AFTER + r"\s+(?:comme|en\s+tant\s+que)\s+(?P<rest>.+)"),
    i_am=patterns(r"\bje\s+suis\s+(?P<rest>.+)"),
    jobs=word_set(
        "ingénieur, ingénieure, développeur, développeuse, programmeur, programmeuse, "
        "analyste, gestionnaire, manager, chef, directeur, directrice, administrateur, "
        "administratrice, admin, médecin, infirmier, infirmière, avocat, avocate, professeur, "
        "professeure, enseignant, enseignante, comptable, consultant, consultante, designer, "
        "stagiaire, technicien, technicienne, architecte, chercheur, chercheuse, commercial, "
        "commerciale, vendeur, vendeuse, coordinateur, coordinatrice, assistant, assistante, "
        "étudiant, étudiante, responsable"
    ),
    answer_in=patterns(
        r"\b(?:réponds|reponds|répondez|repondez|répondre|repondre|écris|ecris|écrivez|"
        r"ecrivez|parle|parlez)(?:-moi)?"
        r"(?:\s+(?:toujours|uniquement|seulement|désormais|desormais))*"
        r"\s+en\s+(?P<v>[^\W\d_]+)",
    ),
    prefer=patterns(r"\bje\s+(?:préfère|prefere)\s+(?!que\b|qu')(?P<rest>.+)"),
    answers=word_set("réponse, réponses"),
    lengths=by_word(
        {
            "short": "courte, courtes, brève, brèves, concise, concises",
            "detailed": "détaillée, détaillées, complète, complètes, approfondie, approfondies",
            "long": "longue, longues",
        }
    ),
    mine=patterns(
        r"\b(?:mon|ma)\s+(?P<k>fuseau\s+horaire|[^\W\d_]+)\s+(?:est|c'est)\s+(?P<rest>.+)"
    ),
    keys=by_word(
        {
            "team": "équipe",
            "department": "département, service",
            "manager": "manager, responsable, chef, supérieur, supérieure",
            "role": "rôle, poste, fonction, métier",
            "job": "travail, emploi",
            "title": "titre",
            "timezone": "fuseau horaire",
            "office": "bureau",
            "city": "ville",
            "country": "pays",
            "pronouns": "pronoms",
            "language": "langue",
            "company": "entreprise, société",
            "employer": "employeur",
        }
    ),
)
