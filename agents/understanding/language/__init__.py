"""Words as a language library reads them: lemmas, function words, numbers written in words.

The judges' rules compare a draft with its evidence through these, never through
four-letter prefixes or an English word list: simplemma gives the lemma ("holidays" and
"holiday" are one word, "férias" stays itself), stop-words each language's function
words, text2num the digits of "twenty-seven" or "vinte e sete". What a text names comes
from simplemma's lexicon and dateparser's calendar (`names`), never from capital letters;
limits ("up to", "apenas") and coordinating conjunctions are each language's closed
classes (`limits`, `clauses`).
"""
