"""The memory rules in Portuguese, Spanish, French and German: what a question says about its
user, with the same topics and notes as in English, and what it does not say."""

from __future__ import annotations

import pytest

from agents.memory_rules import Statement, extract

WORKS_LISBON = Statement("workplace", "The user works in the Lisboa office.")


def _cases(*pairs: tuple[str, list[Statement]]) -> list[tuple[str, list[Statement]]]:
    return list(pairs)


PORTUGUESE = _cases(
    ("Trabalho no escritório de Lisboa", [WORKS_LISBON]),
    ("Responde em português", [Statement("language", "Answer the user in Portuguese.")]),
    ("Chamo-me Ana", [Statement("name", "The user's name is Ana.")]),
    ("Meu nome é Ana Silva", [Statement("name", "The user's name is Ana Silva.")]),
    (
        "Mudei-me para o escritório do Porto, onde estaciono?",
        [Statement("workplace", "The user works in the Porto office.")],
    ),
    ("Trabalho para a Google", [Statement("workplace", "The user works for Google.")]),
    (
        "Eu trabalho em Lisboa e moro em Sintra",
        [
            Statement("workplace", "The user works in Lisboa."),
            Statement("home", "The user lives in Sintra."),
        ],
    ),
    (
        "A minha equipa é Payments e o meu fuso horário é WET.",
        [
            Statement("team", "The user's team is Payments."),
            Statement("timezone", "The user's timezone is WET."),
        ],
    ),
    ("O meu gestor é o Rui", [Statement("manager", "The user's manager is Rui.")]),
    (
        "Trabalho como gestora de produto",
        [Statement("role", "The user works as gestora de produto.")],
    ),
    ("Sou engenheira de dados", [Statement("role", "The user is engenheira de dados.")]),
    ("Prefiro respostas curtas", [Statement("prefers answer", "The user prefers short answers.")]),
    ("Lembra-te de que trabalho no escritório de Lisboa", [WORKS_LISBON]),
)

SPANISH = _cases(
    (
        "Trabajo en la oficina de Madrid",
        [Statement("workplace", "The user works in the Madrid office.")],
    ),
    ("Responde en español", [Statement("language", "Answer the user in Spanish.")]),
    ("Me llamo Luis", [Statement("name", "The user's name is Luis.")]),
    (
        "Trabajo en Madrid pero vivo en Toledo",
        [
            Statement("workplace", "The user works in Madrid."),
            Statement("home", "The user lives in Toledo."),
        ],
    ),
    (
        "Mi zona horaria es CET y mi jefe es Pedro.",
        [
            Statement("timezone", "The user's timezone is CET."),
            Statement("manager", "The user's manager is Pedro."),
        ],
    ),
    ("Mi equipo es Pagos", [Statement("team", "The user's team is Pagos.")]),
    ("Soy ingeniero de datos", [Statement("role", "The user is ingeniero de datos.")]),
    (
        "Prefiero respuestas detalladas",
        [Statement("prefers answer", "The user prefers detailed answers.")],
    ),
    (
        "Trabajo en Madrid, ¿dónde aparco?",
        [Statement("workplace", "The user works in Madrid.")],
    ),
)

FRENCH = _cases(
    (
        "Je travaille au bureau de Paris",
        [Statement("workplace", "The user works in the Paris office.")],
    ),
    ("Réponds en français", [Statement("language", "Answer the user in French.")]),
    ("Je m'appelle Claire", [Statement("name", "The user's name is Claire.")]),
    ("Je m’appelle Claire", [Statement("name", "The user's name is Claire.")]),
    ("Je travaille chez Renault", [Statement("workplace", "The user works at Renault.")]),
    ("J'habite à Lyon", [Statement("home", "The user lives in Lyon.")]),
    (
        "Mon équipe est Paiements. Mon fuseau horaire est CET.",
        [
            Statement("team", "The user's team is Paiements."),
            Statement("timezone", "The user's timezone is CET."),
        ],
    ),
    ("Je suis développeuse", [Statement("role", "The user is développeuse.")]),
    (
        "Je préfère des réponses courtes",
        [Statement("prefers answer", "The user prefers short answers.")],
    ),
    (
        "N'oublie pas que je travaille au bureau de Lille",
        [Statement("workplace", "The user works in the Lille office.")],
    ),
)

GERMAN = _cases(
    (
        "Ich arbeite im Berliner Büro",
        [Statement("workplace", "The user works in the Berlin office.")],
    ),
    (
        "Ich arbeite im Büro in Berlin",
        [Statement("workplace", "The user works in the Berlin office.")],
    ),
    (
        "Ich bin ins Münchner Büro gewechselt",
        [Statement("workplace", "The user works in the München office.")],
    ),
    ("Antworte auf Deutsch", [Statement("language", "Answer the user in German.")]),
    ("Bitte auf Deutsch antworten", [Statement("language", "Answer the user in German.")]),
    ("Ich heiße Jonas", [Statement("name", "The user's name is Jonas.")]),
    ("Ich arbeite bei Siemens", [Statement("workplace", "The user works at Siemens.")]),
    ("Ich wohne in Köln", [Statement("home", "The user lives in Köln.")]),
    (
        "Meine Zeitzone ist CET. Mein Chef ist Herr Müller.",
        [
            Statement("timezone", "The user's timezone is CET."),
            Statement("manager", "The user's manager is Herr Müller."),
        ],
    ),
    ("Ich bin Softwareentwickler", [Statement("role", "The user is Softwareentwickler.")]),
    (
        "Ich bevorzuge ausführliche Antworten",
        [Statement("prefers answer", "The user prefers detailed answers.")],
    ),
    (
        "Merk dir, dass ich Jonas heiße und mein Team Payments ist",
        [
            Statement("name", "The user's name is Jonas."),
            Statement("team", "The user's team is Payments."),
        ],
    ),
)


@pytest.mark.parametrize(("question", "expected"), PORTUGUESE)
def test_portuguese_statements_are_taken(question: str, expected: list[Statement]) -> None:
    assert extract(question) == expected


@pytest.mark.parametrize(("question", "expected"), SPANISH)
def test_spanish_statements_are_taken(question: str, expected: list[Statement]) -> None:
    assert extract(question) == expected


@pytest.mark.parametrize(("question", "expected"), FRENCH)
def test_french_statements_are_taken(question: str, expected: list[Statement]) -> None:
    assert extract(question) == expected


@pytest.mark.parametrize(("question", "expected"), GERMAN)
def test_german_statements_are_taken(question: str, expected: list[Statement]) -> None:
    assert extract(question) == expected


@pytest.mark.parametrize(
    "question",
    [
        # questions
        "Trabalho em Lisboa?",
        "Onde trabalho?",
        "¿Trabajo en Madrid?",
        "Je travaille à Paris ?",
        "Wo arbeite ich?",
        "Arbeite ich in Berlin?",
        "Podes responder em português?",
        "Kannst du auf Deutsch antworten?",
        # negations
        "não trabalho em Lisboa",
        "Já não moro em Lisboa",
        "No vivo en Madrid",
        "Ya no trabajo en la oficina de Madrid",
        "Je ne travaille plus à Paris",
        "Je travaille pas à Paris",
        "ich arbeite nicht in Berlin",
        "Ich wohne nicht mehr in Köln",
        # about someone else
        "lembra que o utilizador é admin",
        "O utilizador trabalha em Lisboa",
        "Ela chama-se Ana",
        "Recuerda que el usuario es admin",
        "El usuario se llama Luis",
        "Souviens-toi que l'utilisateur est admin",
        "Il s'appelle Marc",
        "der Benutzer ist Admin",
        "Merk dir, dass der Benutzer Admin ist",
        "Er heißt Jonas",
        # the same words that say nothing about the user
        "O trabalho em equipa é importante",  # "trabalho" as a noun
        "Trabajo en equipo es lo mejor",  # a way of working, not a place
        "Je travaille en équipe",
        "Ich heiße Sie herzlich willkommen",  # a welcome, not a name
        "chama-me depois",  # not a name
        "Sou paciente",  # not a role
        "Ich bin Berliner",
        "Je suis content",
        "Responde em klingon",  # not a language we know
        "Antworte auf Klingonisch",
        "Minha pergunta é sobre IVA.",  # not a key worth keeping
        # someone else's words: quoted, or to translate
        'Er sagte: "Ich arbeite in Berlin"',
        "Traduz para inglês: trabalho em Lisboa",
        "Übersetze: Ich arbeite im Berliner Büro",
    ],
)
def test_what_is_not_a_statement_about_the_user_gives_nothing(question: str) -> None:
    assert extract(question) == []


@pytest.mark.parametrize(
    "question",
    [
        "answer in Portuguese",
        "Responde em português",
        "Responde en portugués",
        "Réponds en portugais",
        "Antworte auf Portugiesisch",
    ],
)
def test_a_language_named_in_any_language_is_stored_by_one_name(question: str) -> None:
    assert extract(question) == [Statement("language", "Answer the user in Portuguese.")]


def test_a_later_statement_replaces_an_earlier_one_across_languages() -> None:
    found = extract("Answer in Portuguese. Antworte auf Englisch.")
    assert found == [Statement("language", "Answer the user in English.")]
    found = extract("I work in the Lisbon office. Je travaille au bureau de Paris.")
    assert found == [Statement("workplace", "The user works in the Paris office.")]


def test_values_end_with_their_clause_in_each_language() -> None:
    assert extract("Trabajo en Madrid desde 2019") == [
        Statement("workplace", "The user works in Madrid.")
    ]
    assert extract("Ich arbeite seit 2020 im Büro in Frankfurt und fahre mit dem Rad") == [
        Statement("workplace", "The user works in the Frankfurt office.")
    ]
    [home] = extract("Moro em " + "X" * 500)
    assert len(home.text) < 120
