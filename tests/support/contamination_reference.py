"""The contamination study's normalisation and n-grams computed independently of
text/contamination.py, for the tests' expected values."""
import unicodedata


def reference_words(text: str) -> list:
    """The normalised words, computed character by character: lower case, Unicode punctuation,
    symbols and format characters gone, split on white space."""
    kept = "".join(c for c in text.lower()
                   if unicodedata.category(c)[0] not in "PS" and unicodedata.category(c) != "Cf")
    return kept.split()


def ngram_set(words: list, n: int) -> set:
    """Every run of n consecutive words, as a tuple."""
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}
