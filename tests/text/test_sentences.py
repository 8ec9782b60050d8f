from text.sentences import split_sentences


def test_splits_on_terminal_punctuation():
    assert split_sentences("One here. Two here! Three here? Four") == [
        "One here.", "Two here!", "Three here?", "Four"]


def test_abbreviations_initials_and_numbers_do_not_split():
    assert split_sentences("Dr. Smith met J. R. R. Tolkien in the U.S. in 1950. It rained.") == [
        "Dr. Smith met J. R. R. Tolkien in the U.S. in 1950.", "It rained."]
    assert split_sentences("It costs 3.5 dollars, e.g. not much. Fine.") == [
        "It costs 3.5 dollars, e.g. not much.", "Fine."]


def test_lower_case_continuation_does_not_split():
    assert split_sentences("We used approx. five of them.") == ["We used approx. five of them."]


def test_closing_quotes_stay_with_their_sentence():
    assert split_sentences('He said "Stop." Then he left.') == ['He said "Stop."', "Then he left."]


def test_blank_line_has_no_sentences():
    assert split_sentences("   ") == []
