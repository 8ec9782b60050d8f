"""The bad-words filter: a case-insensitive match of a listed term drops the page; a whole-word
match, except for the languages written without spaces (mC4's ja, th, zh: anywhere)."""
import dataclasses
import re
from typing import FrozenSet, Sequence, Tuple

_WORD = re.compile(r"\w+")


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
    """One regular expression for all terms, tried only where a term can start.

    Running a 400-way alternation at every word of every page is slow; the first word of each
    term picks the few positions worth trying, which gives the same matches several times faster.
    """
    pattern: "re.Pattern"
    first_words: FrozenSet[str]
    terms_without_first_word: Tuple[str, ...]  # Terms that start with a symbol, such as an emoji.
    word_boundaries: bool = True  # False: a term matches anywhere, inside words too.


def compile_badwords(terms: Sequence[str], word_boundaries: bool = True) -> BadwordsMatcher:
    if not terms:
        raise ValueError("a bad-words filter needs at least one term")
    # Longest first, so that a multi-word term wins over its first word in the alternation.
    alternatives = "|".join(re.escape(term) for term in sorted(terms, key=lambda t: (-len(t), t)))
    if not word_boundaries:
        return BadwordsMatcher(re.compile(alternatives), frozenset(), (), word_boundaries=False)
    first_words = set()
    symbol_initial = []
    for term in terms:
        first = _WORD.match(term)
        if first:
            first_words.add(first.group())
        else:
            symbol_initial.append(term)
    return BadwordsMatcher(re.compile(r"(?<!\w)(?:" + alternatives + r")(?!\w)"),
                           frozenset(first_words), tuple(symbol_initial))


def contains_badword(text: str, matcher: BadwordsMatcher) -> bool:
    lower = text.lower()
    if not matcher.word_boundaries:
        return matcher.pattern.search(lower) is not None
    for word in _WORD.finditer(lower):
        if word.group() in matcher.first_words and matcher.pattern.match(lower, word.start()):
            return True
    return (any(term in lower for term in matcher.terms_without_first_word)
            and matcher.pattern.search(lower) is not None)
