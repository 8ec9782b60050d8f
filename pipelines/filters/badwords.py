"""The bad-words filter: a case-insensitive match of a listed term drops the page; a whole-word
match, except for the languages written without spaces (mC4's ja, th, zh: anywhere)."""
import dataclasses
from typing import Iterator, Sequence

import ahocorasick


def parse_badwords(content: bytes, source: str, lower_case: bool = True) -> list:
    """The terms of a word list file (UTF-8, one term per line), lower-cased unless `lower_case`
    is False: the released C4 kept terms as written, so one with a capital never matched its
    lower-cased text."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ValueError(f"bad-words list {source} is not UTF-8 text: {error}") from None
    terms = sorted({line.strip().lower() if lower_case else line.strip()
                    for line in text.splitlines() if line.strip()})
    if not terms:
        raise ValueError(f"bad-words list {source} holds no terms")
    return terms


@dataclasses.dataclass(frozen=True)
class BadwordsMatcher:
    """The terms as one Aho-Corasick automaton (pyahocorasick, in C): one pass over a page finds
    every occurrence of every term, several times faster than a set of the page's words and an
    alternation of the phrases. With word boundaries, an occurrence counts where neither the
    character before it nor the one after it is a word character, as the regular expression
    `(?<!\w)(?:term|...)(?!\w)` of the public C4 code decides (tests/pipelines/test_filters.py)."""
    automaton: ahocorasick.Automaton  # Each term -> its length.
    word_boundaries: bool


def compile_badwords(terms: Sequence[str], word_boundaries: bool = True) -> BadwordsMatcher:
    if not terms:
        raise ValueError("a bad-words filter needs at least one term")
    automaton = ahocorasick.Automaton()
    for term in terms:
        automaton.add_word(term, len(term))
    automaton.make_automaton()
    return BadwordsMatcher(automaton, word_boundaries)


def is_word_character(character: str) -> bool:
    """What `\w` matches in a str pattern of Python's re: alphanumerics (str.isalnum) and `_`."""
    return character.isalnum() or character == "_"


def found_badwords(text: str, matcher: BadwordsMatcher) -> Iterator[str]:
    """Each occurrence of a term in `text` that the filter counts, as the term."""
    lower = text.lower()
    last = len(lower) - 1
    for end, length in matcher.automaton.iter(lower):
        start = end - length + 1
        if not matcher.word_boundaries or (
                (start == 0 or not is_word_character(lower[start - 1]))
                and (end == last or not is_word_character(lower[end + 1]))):
            yield lower[start:end + 1]


def contains_badword(text: str, matcher: BadwordsMatcher) -> bool:
    return next(found_badwords(text, matcher), None) is not None
