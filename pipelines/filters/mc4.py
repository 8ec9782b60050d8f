"""mC4, the multilingual C4 behind mT5, as the public C4 code defines it: the `multilingual`
config of tensorflow_datasets/text/c4.py (dataset version 3.1.0), its languages and its rules
that English C4 does not have (the paragraph filter, CLD3's `und`, per-language bad words with
a soft filter, one split pair per language).

The one owner of these names and rules: pipelines/config.py builds the variant from them, the
stages apply them, tfds_c4 names its splits with them. tests/pipelines/test_mc4.py checks the
constants against TFDS's own and each rule on its edges; the oracle test runs TFDS's code itself.
"""
import heapq
from typing import Collection, Optional, Tuple

from text.hashing import md5_int

# The 107 language codes CLD3 gives that kept at least 10,000 pages in the public build
# (MC4_LANGUAGES): 101 languages, six of them also in Latin script (`bg-Latn`, ...).
LANGUAGES = (
    "af", "am", "ar", "az", "be", "bg", "bg-Latn", "bn", "ca", "ceb", "co", "cs", "cy", "da",
    "de", "el", "el-Latn", "en", "eo", "es", "et", "eu", "fa", "fi", "fil", "fr", "fy", "ga",
    "gd", "gl", "gu", "ha", "haw", "hi", "hi-Latn", "hmn", "ht", "hu", "hy", "id", "ig", "is",
    "it", "iw", "ja", "ja-Latn", "jv", "ka", "kk", "km", "kn", "ko", "ku", "ky", "la", "lb",
    "lo", "lt", "lv", "mg", "mi", "mk", "ml", "mn", "mr", "ms", "mt", "my", "ne", "nl", "no",
    "ny", "pa", "pl", "ps", "pt", "ro", "ru", "ru-Latn", "sd", "si", "sk", "sl", "sm", "sn",
    "so", "sq", "sr", "st", "su", "sv", "sw", "ta", "te", "tg", "th", "tr", "uk", "ur", "uz",
    "vi", "xh", "yi", "yo", "zh", "zh-Latn", "zu",
)
# A page CLD3 is not sure of: not reliable, or less probable than MIN_PROBABILITY.
UNKNOWN_LANGUAGE = "und"
# Every language that has splits, in TFDS's order: the languages, then `und`.
SPLIT_LANGUAGES = LANGUAGES + (UNKNOWN_LANGUAGE,)
MIN_PROBABILITY = 0.95
# CLD3's NNetLanguageIdentifier as TFDS builds it: no answer under 100 bytes, the first 10,000
# bytes read.
CLD3_MIN_BYTES = 100
CLD3_MAX_BYTES = 10_000

# The paragraph filter: at least 3 lines, and the 3 longest of at least 200 characters.
MIN_PARAGRAPHS = 3
MIN_PARAGRAPH_CHARS = 200

# The LDNOOBW files TFDS reads (_BADWORDS_LANGS), by their names in that repository; a name's
# part before the first `-` is the language it counts for (`fr-CA-u-sd-caqc` adds to `fr`).
BADWORDS_FILES = (
    "ar", "cs", "da", "de", "en", "eo", "es", "fa", "fi", "fil", "fr", "fr-CA-u-sd-caqc", "hi",
    "hu", "it", "ja", "kab", "ko", "nl", "no", "pl", "pt", "ru", "sv", "th", "tlh", "tr", "zh",
)
# Terms that are common subwords of languages written without spaces (each filtered more than
# 10% of its language's pages): not bad words there.
BADWORDS_ALLOWLIST = {"ja": frozenset({"sm", "グロ", "女の子"}), "zh": frozenset({"性"})}
# Languages whose terms match anywhere, not only between non-word characters.
UNSPACED_LANGUAGES = frozenset({"ja", "th", "zh"})
# The share of pages with a bad word that are dropped; the rest are kept, chosen by URL hash.
BADWORDS_FILTER_FRACTION = 0.999


def badwords_language(file_name: str) -> str:
    """The language a bad-words file counts for: its name without the region and extensions."""
    return file_name.split("-")[0]


def page_language(language: str) -> str:
    """The language whose bad words a page's CLD3 code is checked against (`bg-Latn`: `bg`)."""
    return language.split("-")[0]


def paragraph_drop_reason(text: str) -> Optional[str]:
    """Why a page fails the paragraph filter (too few lines, or its third-longest line is too
    short), or None. Lines are the text's `\\n`-separated parts, as they are."""
    lines = text.split("\n")
    if len(lines) < MIN_PARAGRAPHS:
        return "too_few_paragraphs"
    if min(heapq.nlargest(MIN_PARAGRAPHS, map(len, lines))) < MIN_PARAGRAPH_CHARS:
        return "short_paragraphs"
    return None


def cld3_label(language: str, probability: float, is_reliable: bool,
               languages: Collection[str] = LANGUAGES, min_probability: float = MIN_PROBABILITY
               ) -> Tuple[Optional[str], Optional[str]]:
    """(the page's language, or None to drop it; why it is `und` or dropped, or None) of one
    CLD3 answer: not reliable or less probable than `min_probability` gives `und`, a reliable
    language outside `languages` drops the page."""
    if not is_reliable:
        return UNKNOWN_LANGUAGE, "not_reliable"
    if probability < min_probability:
        return UNKNOWN_LANGUAGE, "low_probability"
    if language not in languages:
        return None, "other_language"
    return language, None


def keeps_page_with_badword(normalized_url: str, filter_fraction: float) -> bool:
    """Whether the soft filter keeps a page that has a bad word: the MD5 of its normalized URL,
    as an integer, modulo the denominator of `filter_fraction` as an exact fraction, is at least
    its numerator. So about 1 - filter_fraction of such pages stay, the same on every run."""
    numerator, denominator = filter_fraction.as_integer_ratio()
    return md5_int(normalized_url) % denominator >= numerator


def split_name(language: str, split: str) -> str:
    """TFDS's name of a language's split: `de` (train) and `de-validation`."""
    return language if split == "train" else f"{language}-{split}"
