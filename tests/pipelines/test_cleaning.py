"""The paper's cleaning heuristics, line by line and page by page."""
import pytest

from pipelines.filters.cleaning import (PAPER_TEXT_CLEANING, PUBLIC_C4_CLEANING, CleaningConfig,
                                        clean_page, has_sentences, line_drop_reason)
from text.sentences import split_sentences

GOOD = "This line is a perfectly fine sentence."


def page(*lines):
    return "\n".join(lines)


@pytest.mark.parametrize("line, reason", [
    ("This line has no terminal punctuation at all", "no_terminal_punctuation"),
    ("This line trails off into an ellipsis...", "ellipsis"),
    ("This line trails off into a unicode ellipsis\u2026", "ellipsis"),
    ("Too short a line.", "too_few_words"),
    ("Please enable JavaScript in your browser to continue.", "javascript"),
    ("By using this site you agree to our Terms of Use.", "policy"),
    ("Read our privacy policy before you sign up today.", "policy"),
    ("This website uses cookies to improve your experience.", "policy"),
    ("Word " + "x" * 1001 + " is far too long here.", "word_too_long"),
])
def test_line_drop_reasons(line, reason):
    assert line_drop_reason(line, PUBLIC_C4_CLEANING) == reason


@pytest.mark.parametrize("line", [
    GOOD,
    "Did you see the five different ships?",
    "What a wonderful world this is today!",
    'He said that "this is the end of it."',
    "She wrote \u201cwe will meet again soon\u201d",
    "Word " + "x" * 1000 + " is just short enough here.",
])
def test_lines_kept(line):
    assert line_drop_reason(line, PUBLIC_C4_CLEANING) is None


def test_word_threshold_is_configurable():
    line = "Three words only."
    assert line_drop_reason(line, PUBLIC_C4_CLEANING) == "too_few_words"
    assert line_drop_reason(line, PAPER_TEXT_CLEANING) is None


def test_page_keeps_only_good_lines_and_removes_citations():
    text = page("Menu", GOOD + "[1]", "Home | About | Contact",
                "The second good line is here too.[citation needed]",
                "And the third good line is right here.[edit]")
    result = clean_page(text, PUBLIC_C4_CLEANING)
    assert result.text == page(GOOD, "The second good line is here too.",
                               "And the third good line is right here.")
    assert result.lines_kept == 3
    assert result.lines_dropped == {"no_terminal_punctuation": 2}


@pytest.mark.parametrize("bad_line, reason", [
    ("Lorem ipsum dolor sit amet, consectetur.", "lorem_ipsum"),
    ("function f() { return 1; }", "curly_bracket"),
    ("LOREM IPSUM in a line that would be dropped anyway", "lorem_ipsum"),
])
def test_page_dropped_by_page_rules(bad_line, reason):
    result = clean_page(page(GOOD, GOOD, GOOD, bad_line), PUBLIC_C4_CLEANING)
    assert result.text is None and result.page_drop_reason == reason


def test_page_with_too_few_sentences_is_dropped():
    result = clean_page(page(GOOD, "Another sentence that is long enough."), PUBLIC_C4_CLEANING)
    assert result.text is None and result.page_drop_reason == "too_few_sentences"
    kept = clean_page(page(GOOD, "One sentence here. And a second one here."), PUBLIC_C4_CLEANING)
    assert kept.text is not None


def test_paper_text_setting_needs_five_sentences():
    three = page(GOOD, GOOD, GOOD)
    assert clean_page(three, PUBLIC_C4_CLEANING).text == three
    assert clean_page(three, PAPER_TEXT_CLEANING).page_drop_reason == "too_few_sentences"


def test_empty_page_is_dropped():
    assert clean_page("", PUBLIC_C4_CLEANING).page_drop_reason == "too_few_sentences"


def test_invalid_thresholds_are_rejected():
    with pytest.raises(ValueError, match="min_words_per_line"):
        CleaningConfig(min_words_per_line=0)


def test_sentences_are_counted_line_by_line_until_there_are_enough():
    text = page("One. Two.", "Three. Four. Five.", "Six.", "Seven.")
    split_lines = []

    def recording_split(line):
        split_lines.append(line)
        return split_sentences(line)
    for minimum in range(9):
        split_lines.clear()
        assert has_sentences(text, minimum, recording_split) is (minimum <= 7)
        assert len(split_lines) == {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 2, 6: 3}.get(minimum, 4)
    # A line break ends a sentence: three here, where the whole text splits into two.
    assert has_sentences("Sentence one. Sentence\ntwo.", 3)
    assert len(split_sentences("Sentence one. Sentence\ntwo.")) == 2
