"""mT5's metrics for its multilingual tasks: language-aware QA scoring and WikiAnn's span F1.

Like model.tasks.metrics, every metric takes postprocessed targets and predictions and returns
{metric name: value in percent}.

- MLQA, XQuAD and TyDi QA GoldP answers are scored as the MLQA evaluation script does
  (facebookresearch/MLQA `mlqa_evaluation_v1.py`, which mT5's `normalize_mlqa` follows): the
  normalisation knows each language's punctuation, articles and, for Chinese, word segmentation.
- WikiAnn targets list a sentence's entities as "TYPE: tokens" joined by " $$ " ("None" when it has
  none), as TFDS's wikiann builder writes them; `span_f1` scores them as mT5's scorer does.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import re
import string
import sys
import unicodedata
from typing import Sequence

from model.tasks import metrics
from model.tasks.multilingual_sources import SPAN_SEPARATOR

# --- QA: MLQA's language-aware normalisation ---------------------------------------------------


@functools.cache
def _punctuation_deletion() -> dict[int, None]:
    """A str.translate table deleting every Unicode punctuation character (general category P*)
    and ASCII's string.punctuation (which adds symbols such as $ + < = > ^ ` | ~). Built on first
    use: scanning all code points takes about half a second, too long for every import."""
    unicode_punctuation = (chr(code) for code in range(sys.maxunicode + 1)
                           if unicodedata.category(chr(code)).startswith("P"))
    return {ord(character): None for character in (*unicode_punctuation, *string.punctuation)}


_ARTICLES = {
    "en": re.compile(r"\b(a|an|the)\b"),
    "es": re.compile(r"\b(un|una|unos|unas|el|la|los|las)\b"),
    "vi": re.compile(r"\b(của|là|cái|chiếc|những)\b"),
    "de": re.compile(r"\b(ein|eine|einen|einem|eines|einer|der|die|das|den|dem|des)\b"),
}
# The MLQA script drops Arabic's article with re.sub(r"\sال^|ال", " ", text). Its first
# alternative can never match (`^` after other characters matches nowhere without MULTILINE), so
# every "ال" goes, inside words too ("قال", "said", becomes "ق"). That is the reference's scoring,
# kept as it is so that our numbers compare with published ones.
_ARABIC_ARTICLE = "ال"

# The script's "mixed segmentation" for Chinese: each character of U+4E00-U+9FA5 is a token.
_CJK_CHARACTER = re.compile("([\u4e00-\u9fa5])")


def _drop_articles(text: str, language: str) -> str:
    if language == "ar":
        return text.replace(_ARABIC_ARTICLE, " ")
    articles = _ARTICLES.get(language)
    return articles.sub(" ", text) if articles else text


def _tokens(text: str, language: str) -> list[str]:
    if language != "zh":
        return text.split()
    # The script also makes each punctuation character a token here, but punctuation is gone by
    # now; what is left is CJK characters and the whitespace-split runs between them.
    return [token for piece in _CJK_CHARACTER.split(text) for token in piece.split()]


def normalize_mlqa(text: str, language: str) -> str:
    """The MLQA evaluation script's normal form of an answer in `language` (an ISO 639-1 code):
    lower case; no punctuation (any Unicode P* character, and ASCII punctuation); no articles
    (en, es, vi, de; for ar every "ال", as the script does); tokens joined by single spaces, the
    tokens split at whitespace, and for zh also every CJK character (U+4E00-U+9FA5) a token.

    The script knows only en, es, hi, vi, de, ar and zh (hi and zh have no article list). Any other
    language (XQuAD's el, ru, th, tr; TyDi QA's bn, fi, id, ko, sw, te, ...) is scored here as hi
    is: punctuation dropped, whitespace tokens, no articles. So a language written without spaces
    (th, ja) is one token per whitespace-free run, and its F1 is close to its exact match."""
    text = text.lower().translate(_punctuation_deletion())
    return " ".join(_tokens(_drop_articles(text, language), language))


@dataclasses.dataclass(frozen=True)
class MultilingualQaMetric:
    """Exact match and token F1 of answers in one language, normalised by `normalize_mlqa`, each
    the best over the example's references, as SQuAD's and T5's qa_utils.qa_metrics score them."""
    language: str

    def __call__(self, targets: Sequence[Sequence[str]],
                 predictions: Sequence[str]) -> dict[str, float]:
        return metrics.squad(targets, predictions,
                             functools.partial(normalize_mlqa, language=self.language))


def qa_metric(language: str) -> MultilingualQaMetric:
    """The metric {"em", "f1"} of QA answers in `language`, e.g. qa_metric("de")(targets, predictions)."""
    return MultilingualQaMetric(language)


# --- WikiAnn: entity spans ---------------------------------------------------------------------

def _typed_spans(text: str) -> list[tuple[str, str]]:
    """(type, text) of each "TYPE: tokens" part; as mT5's scorer, a part that is not exactly two
    fields around one ":" is no span ("None", "", "PER rick", and "ORG: Star Wars: Episode II")."""
    spans = []
    for part in text.split(SPAN_SEPARATOR):
        fields = part.split(":")
        if len(fields) == 2:
            spans.append((fields[0].strip(), fields[1].strip()))
    return spans


def span_f1(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
    """mT5's WikiAnn span F1: micro F1 over all sentences of predicted against gold entity spans,
    a span right when its type and text equal a gold span of the same sentence not yet matched.
    Where nothing is predicted or nothing is gold, precision or recall is 0 (mT5 adds 1e-13 to
    its denominators instead, a difference below 1e-10 percent)."""
    right = predicted = gold = 0
    for target, prediction in zip(targets, predictions):
        gold_spans = collections.Counter(_typed_spans(target))
        predicted_spans = collections.Counter(_typed_spans(prediction))
        right += sum((gold_spans & predicted_spans).values())
        predicted += sum(predicted_spans.values())
        gold += sum(gold_spans.values())
    if right == 0:
        return {"span_f1": 0.0}
    precision, recall = right / predicted, right / gold
    return {"span_f1": 100 * 2 * precision * recall / (precision + recall)}
