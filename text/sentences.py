"""A rule-based English sentence splitter: offline, deterministic and fast.

The public C4 code counts sentences with NLTK's Punkt model, which must be downloaded at run
time (`nltk.download('punkt')`) and whose output depends on the model version. The rules here
need no data files and run in one regular-expression pass per line. A sentence ends at `.`, `!`
or `?` (possibly repeated, possibly followed by closing quotes or brackets) followed by white
space, except where the period most likely ends an abbreviation: a known abbreviation (`Dr.`,
`e.g.`, `etc.`), a single letter (initials such as `J. R. R.` and acronyms such as `U.S.`), or a
period followed by a lower-case word. A line break is white space to the rules: the paper rules
give the splitter one line at a time, so their sentences never cross line breaks; the released
rules, as the public code does with Punkt, also give it a whole page once (after dedup).
"""
import re
from typing import List

_ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st mt rev gen col lt sgt capt gov sen rep hon pres supt
vs etc al approx ca cf viz fig figs vol vols no nos pp ed eds inc ltd co corp bros dept est
jan feb mar apr jun jul aug sep sept oct nov dec
""".split())

_CANDIDATE_END = re.compile(r"(?P<mark>[.!?]+)[\"'\u201d\u2019\u00bb)\]]*\s+(?=(?P<next>\S))")
_WORD_BOUNDARY = frozenset(".!?")


def _word_before(line: str, end: int) -> str:
    """The run of characters before `end` up to white space or terminal punctuation."""
    start = end
    while start > 0 and not line[start - 1].isspace() and line[start - 1] not in _WORD_BOUNDARY:
        start -= 1
    return line[start:end]


def _ends_sentence(word: str, mark: str, next_char: str) -> bool:
    if "!" in mark or "?" in mark:
        return True
    if next_char.islower():
        return False
    word = word.lstrip("\"'([{\u201c\u2018\u00ab").lower()
    if len(word) == 1 and word.isalpha():
        return False
    return word not in _ABBREVIATIONS


def split_sentences(line: str) -> List[str]:
    """The sentences of a line (or any text), stripped, in order; [] for blank text."""
    sentences = []
    start = 0
    for match in _CANDIDATE_END.finditer(line):
        word = _word_before(line, match.start())
        if _ends_sentence(word, match.group("mark"), match.group("next")):
            end = match.start("next")
            sentences.append(line[start:end].strip())
            start = end
    rest = line[start:].strip()
    if rest:
        sentences.append(rest)
    return sentences
