"""The bad-words filter: a case-insensitive match of a listed term drops the page; a whole-word
match, except for the languages written without spaces (mC4's ja, th, zh: anywhere)."""
import dataclasses
import functools
import re
from typing import Dict, FrozenSet, Iterable, Optional, Sequence, Tuple

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
    """The terms, split by how a page is checked for them.

    Searching a 400-way alternation through every page is slow. Most terms are one word (one
    run of word characters): a page has one iff the set of its words, made in C, meets theirs.
    The other terms (phrases, terms with symbols) are searched as one alternation, but only
    those whose first word the page holds, and those that start with a symbol the page holds:
    the same matches as the whole alternation, several times faster.
    """
    words: FrozenSet[str]  # The one-word terms.
    phrases_by_first_word: Dict[str, Tuple[str, ...]]  # The other terms that start with a word.
    terms_without_first_word: Tuple[str, ...]  # Terms that start with a symbol, such as an emoji.
    # The whole alternation: the search where there are no word boundaries (mC4's ja, th, zh).
    pattern: Optional["re.Pattern"] = None


def _alternation(terms: Iterable[str]) -> str:
    # Longest first, so that a multi-word term wins over its first word in the alternation.
    return "|".join(re.escape(term) for term in sorted(terms, key=lambda t: (-len(t), t)))


@functools.lru_cache(maxsize=4096)
def _whole_word_pattern(terms: Tuple[str, ...]) -> "re.Pattern":
    return re.compile(r"(?<!\w)(?:" + _alternation(terms) + r")(?!\w)")


def compile_badwords(terms: Sequence[str], word_boundaries: bool = True) -> BadwordsMatcher:
    if not terms:
        raise ValueError("a bad-words filter needs at least one term")
    if not word_boundaries:
        return BadwordsMatcher(frozenset(), {}, (), re.compile(_alternation(terms)))
    words, phrases, symbol_initial = set(), {}, []
    for term in terms:
        first = _WORD.match(term)
        if first is None:
            symbol_initial.append(term)
        elif first.end() == len(term):
            words.add(term)
        else:
            phrases.setdefault(first.group(), []).append(term)
    return BadwordsMatcher(frozenset(words),
                           {word: tuple(sorted(group)) for word, group in phrases.items()},
                           tuple(sorted(symbol_initial)))


def contains_badword(text: str, matcher: BadwordsMatcher) -> bool:
    lower = text.lower()
    if matcher.pattern is not None:
        return matcher.pattern.search(lower) is not None
    page_words = set(_WORD.findall(lower))
    if not matcher.words.isdisjoint(page_words):
        return True
    candidates = [term for word in page_words.intersection(matcher.phrases_by_first_word)
                  for term in matcher.phrases_by_first_word[word]]
    candidates += [term for term in matcher.terms_without_first_word if term in lower]
    return bool(candidates) and _whole_word_pattern(tuple(sorted(candidates))).search(
        lower) is not None
