"""The Portuguese rules (European and Brazilian): "Trabalho no escritório de Lisboa",
"Responde em português", "Chamo-me Ana", "A minha equipa é Payments".

Portuguese drops the subject, so the first-person verb ("trabalho", "moro", "sou") is what
marks the speaker; it must open its clause (after "eu", "agora", "e", "que" ...), since
"o trabalho em equipa" uses the same word as a noun.
"""

from __future__ import annotations

import re

from agents.memory_rules.table import LanguageRules, by_word, office_of, patterns, word_set

#: Where a subject-less first-person verb may stand: a clause's start, after "e"/"que".
_LEAD = (
    r"(?:^|\b(?:e|mas|então|entao|que)\s+)\s*"
    r"(?:(?:eu|agora|atualmente|actualmente|também|tambem|hoje|ainda)\s+)*"
)
#: Adverbs between the verb and what it says ("trabalho agora no ...").
_AFTER = r"(?:\s+(?:agora|atualmente|actualmente|hoje|também|tambem|ainda))*"
_IN = r"(?:em|no|na|nos|nas)"

RULES = LanguageRules(
    negation=re.compile(r"\b(?:não|nao|nunca|jamais|nem|nenhum|nenhuma)\b", re.I),
    question=re.compile(
        r"^\s*(?:(?:e|mas)\s+)?(?:o\s+que|que|onde|aonde|quem|qual|quais|quando|porque|"
        r"porquê|por\s+que|como|quanto|quanta|quantos|quantas|será)\b",
        re.I,
    ),
    remember=re.compile(
        r"^\s*(?:por\s+favor,?\s+)?(?:lembra-te|lembre-se|lembra|lembre|recorda-te|recorda|"
        r"recorde|toma\s+nota|anota|tem\s+em\s+conta|tenha\s+em\s+conta|não\s+te\s+esqueças|"
        r"nao\s+te\s+esquecas|não\s+se\s+esqueça|nota)(?:\s+de)?[:,]?\s*(?:que\s+)?",
        re.I,
    ),
    stop=re.compile(
        r"\s*(?:,|;|:|\(|\be\b|\bmas\b|\bporque\b|\bpois\b|\bpor\s+favor\b|\bentão\b|"
        r"\bdesde\b|\bhá\s+\d|$)",
        re.I,
    ),
    articles=re.compile(r"^(?:o|a|os|as|um|uma)\s+", re.I),
    work=patterns(
        _LEAD + r"trabalho" + _AFTER + r"\s+(?P<prep>em|no|na|nos|nas|para|pra)\s+(?P<rest>.+)",
        _LEAD
        + r"(?:estou|sou)\s+(?:baseado|baseada|sediado|sediada)\s+(?P<prep>"
        + _IN
        + r")\s+(?P<rest>.+)",
    ),
    preps={"para": "for", "pra": "for"},
    moved=patterns(
        _LEAD
        + r"(?:mudei-me|mudei|fui\s+transferid[oa]|passei)"
        + _AFTER
        + r"\s+(?:para|pra|pro)\s+(?:o\s+)?(?P<rest>escrit[oó]rio\b.+)",
    ),
    office=office_of(r"^escrit[oó]rio\s+(?:de|do|da|em|no|na)\s+(?P<city>.+)$"),
    home=patterns(_LEAD + r"(?:moro|vivo|resido)" + _AFTER + r"\s+" + _IN + r"\s+(?P<rest>.+)"),
    name=patterns(
        r"\b(?:chamo-me|me\s+chamo|meu\s+nome\s+é|chama-me|chame-me|trata-me\s+por|"
        r"trate-me\s+por|podes\s+chamar-me|pode\s+chamar-me|pode\s+me\s+chamar(?:\s+de)?)"
        r"\s+(?P<rest>.+)",
    ),
    work_as=patterns(_LEAD + r"trabalho" + _AFTER + r"\s+como\s+(?P<rest>.+)"),
    i_am=patterns(_LEAD + r"sou\s+(?P<rest>.+)"),
    jobs=word_set(
        "engenheiro, engenheira, programador, programadora, desenvolvedor, "
        "desenvolvedora, analista, gestor, gestora, gerente, diretor, diretora, "
        "director, directora, administrador, administradora, admin, médico, médica, "
        "enfermeiro, enfermeira, advogado, advogada, professor, professora, "
        "contabilista, contador, contadora, consultor, consultora, designer, "
        "estagiário, estagiária, técnico, técnica, arquiteto, arquiteta, arquitecto, "
        "arquitecta, cientista, investigador, investigadora, vendedor, vendedora, "
        "coordenador, coordenadora, assistente, estudante, líder"
    ),
    answer_in=patterns(
        r"\b(?:responde|responda|respondam|respondas|responder|escreve|escreva|escrevas|"
        r"escrever|fala|fale|fales|falar)(?:-me|\s+me)?(?:\s+(?:sempre|só|so|apenas|somente))*"
        r"\s+em\s+(?P<v>[^\W\d_]+)",
    ),
    prefer=patterns(_LEAD + r"prefiro\s+(?!que\b)(?P<rest>.+)"),
    answers=word_set("resposta, respostas"),
    lengths=by_word(
        {
            "short": "curta, curtas, curto, curtos, breve, breves, concisa, concisas, sucinta, "
            "sucintas",
            "detailed": "detalhada, detalhadas, pormenorizada, pormenorizadas, completa, "
            "completas, desenvolvida, desenvolvidas",
            "long": "longa, longas",
        }
    ),
    mine=patterns(r"\b(?:meu|minha)\s+(?P<k>fuso\s+hor[aá]rio|[^\W\d_]+)\s+é\s+(?P<rest>.+)"),
    keys=by_word(
        {
            "team": "equipa, equipe, time",
            "department": "departamento",
            "manager": "gestor, gestora, chefe, manager, supervisor, supervisora, responsável",
            "role": "cargo, função, papel",
            "job": "emprego, trabalho, profissão",
            "title": "título",
            "timezone": "fuso horário, fuso",
            "office": "escritório",
            "city": "cidade",
            "country": "país",
            "pronouns": "pronomes",
            "language": "língua, idioma",
            "company": "empresa",
            "employer": "empregador, empregadora",
        }
    ),
)
