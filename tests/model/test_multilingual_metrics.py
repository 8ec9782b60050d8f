"""mT5's multilingual metrics: MLQA's normalisation against its rules worked by hand, mT5's
published metric tests, spans of WikiAnn tags against TFDS's wikiann builder, and span F1 against
seqeval on the real WikiAnn samples."""
import pathlib

import pytest
from seqeval.metrics import f1_score as seqeval_f1
from tensorflow_datasets.text.wikiann.wikiann import get_spans, tags_to_spans

from model.tasks import metrics
from model.tasks.multilingual_metrics import normalize_mlqa, qa_metric, span_f1
from model.tasks.multilingual_sources import SPAN_SEPARATOR, spans_of_tags

# --- normalisation: the expected forms follow the MLQA script's rules step by step ----------------
# (lower case, drop punctuation, drop the language's articles, re-tokenise, join with spaces)


def test_english_drops_ascii_and_unicode_punctuation_and_whole_word_articles():
    # "'" and "," are ASCII punctuation, “ ” — … Unicode P*; "the" inside "theatre" is no word.
    assert normalize_mlqa("The theatre's “An” award — a prize…", "en") == "theatres award prize"


def test_punctuation_is_unicode_p_categories_and_ascii_punctuation_only():
    # "$" is a symbol (Sc) but in string.punctuation; "€" is a symbol not in it, so it stays.
    assert normalize_mlqa("$5 €5 ¿«x»?", "en") == "5 €5 x"


def test_spanish_articles():
    # ¡ and ! are punctuation; "la" and "los" are articles; "de" is not.
    assert normalize_mlqa("¡La casa de los Pérez!", "es") == "casa de pérez"


def test_vietnamese_articles():
    # Vietnamese's list: của, là, cái, chiếc, những.
    assert normalize_mlqa("Chiếc xe của tôi là màu đỏ.", "vi") == "xe tôi màu đỏ"


def test_german_articles_are_whole_words():
    # der, die, das are articles; "des" inside "Dessert" and "die" inside "Diebin" are not words.
    assert normalize_mlqa("Der Dieb, die Diebin und DAS Dessert.", "de") == "dieb diebin und dessert"


def test_arabic_drops_every_al_as_the_script_does():
    # "،" and "؟" are punctuation; "ال" goes everywhere: the article of "الرجل" and, by the
    # script's rule, the inside of "قال" ("said"), which leaves "ق".
    assert normalize_mlqa("قال الرجل، مرحبا؟", "ar") == "ق رجل مرحبا"


def test_chinese_mixed_segmentation():
    # "，" and "。" are punctuation; each character of U+4E00-U+9FA5 is a token, the runs between
    # them split at whitespace ("2009", "iphone", "3g").
    assert normalize_mlqa("北京大学，中国。2009年iPhone 3G发布", "zh") == "北 京 大 学 中 国 2009 年 iphone 3g 发 布"
    # Extension A (U+3400...) lies outside the script's range: those characters stay one run.
    assert normalize_mlqa("中㐀㐁文", "zh") == "中 㐀㐁 文"


def test_hindi_drops_the_danda_and_keeps_every_word():
    # "।" (danda) is punctuation; Hindi has no article list, so even English "the" stays.
    assert normalize_mlqa("भारत की राजधानी दिल्ली है। The Taj", "hi") == "भारत की राजधानी दिल्ली है the taj"


def test_a_language_the_script_does_not_name_gets_whitespace_tokens_and_no_articles():
    # Greek "Ο" is an article, but only en, es, vi, de and ar have lists.
    assert normalize_mlqa("Ο γιος του, Καρλομάγνος.", "el") == "ο γιος του καρλομάγνος"
    # Thai is written without spaces: one token.
    assert normalize_mlqa("กรุงเทพมหานคร!", "th") == "กรุงเทพมหานคร"


# --- QA scores where the language changes them (SQuAD's English scorer as the contrast) -------


def scores(metric, reference, prediction):
    return metric([[reference]], [prediction])


@pytest.mark.parametrize("language, reference, prediction, ours, english", [
    # "Die" is a German article: MLQA drops it; SQuAD keeps it (F1: P 1, R 2/3 -> 0.8).
    ("de", "Die Berliner Mauer", "Berliner Mauer", (100, 100), (0, 80)),
    # "ال" is dropped in Arabic; for SQuAD "الكتاب" and "كتاب" are different single tokens.
    ("ar", "الكتاب", "كتاب", (100, 100), (0, 0)),
    # Chinese characters are tokens (overlap 2 of 4 and of 2: P 1, R 1/2 -> 2/3); SQuAD sees one
    # token on each side.
    ("zh", "北京大学", "北京", (0, 200 / 3), (0, 0)),
    # the full-width comma is Unicode punctuation, not ASCII.
    ("zh", "北京，中国", "北京中国", (100, 100), (0, 0)),
    # the danda is Unicode punctuation, not ASCII.
    ("hi", "दिल्ली", "दिल्ली।", (100, 100), (0, 0)),
    # Hindi drops no English article (F1: P 1, R 2/3 -> 0.8); SQuAD does.
    ("hi", "the Taj Mahal", "Taj Mahal", (0, 80), (100, 100)),
    ("es", "La Casa Blanca", "Casa Blanca", (100, 100), (0, 80)),
])
def test_language_aware_scores_differ_from_squad(language, reference, prediction, ours, english):
    em, f1 = ours
    assert scores(qa_metric(language), reference, prediction) == {
        "em": pytest.approx(em), "f1": pytest.approx(f1)}
    em, f1 = english
    assert scores(metrics.squad, reference, prediction) == {
        "em": pytest.approx(em), "f1": pytest.approx(f1)}


def test_qa_metric_takes_the_best_reference_and_averages_examples():
    # example 1: "berliner mauer" vs "mauer": P 1/2, R 1 -> 2/3, or an exact match with "Mauer";
    # example 2: no overlap. Means: EM 1/2, F1 1/2.
    result = qa_metric("de")([["Die Berliner Mauer", "die Mauer"], ["Rhein"]], ["Mauer", "Elbe"])
    assert result == {"em": pytest.approx(50), "f1": pytest.approx(50)}


def test_qa_metric_is_named_by_its_language():
    assert qa_metric("de") == qa_metric("de") != qa_metric("ar")
    assert "ar" in repr(qa_metric("ar"))


# mT5's published metric tests: multilingual_t5/evaluation/metrics_test.py in
# google-research/multilingual-t5 (test_same_mlqa, test_different_mlqa, test_article_drop_mlqa,
# test_mlqa_small), with qa_metric(lang) for their metrics.mlqa(..., lang=lang).
MT5_REFERENCE = "this is a string"


@pytest.mark.parametrize("language, targets, predictions, expected", [
    ("en", [["", MT5_REFERENCE], [MT5_REFERENCE, MT5_REFERENCE]], [MT5_REFERENCE, MT5_REFERENCE],
     {"em": 100, "f1": 100}),
    ("en", [[MT5_REFERENCE, MT5_REFERENCE], [MT5_REFERENCE, MT5_REFERENCE]], ["", ""],
     {"em": 0, "f1": 0}),
    ("es", [["this unas a string"]], ["this a string"], {"em": 100, "f1": 100}),
    ("en", [["abc abd", "$$$$"]], ["abd"], {"f1": 100 * 2.0 / 3.0, "em": 0.0}),
], ids=["same", "different", "article_drop", "small"])
def test_mt5_published_mlqa_cases(language, targets, predictions, expected):
    assert qa_metric(language)(targets, predictions) == pytest.approx(expected)


# --- WikiAnn spans: TFDS's wikiann builder is the oracle ------------------------------------------


def wikiann_sentences(path: pathlib.Path) -> list[tuple[list[str], list[str]]]:
    """(tokens, tags) of each sentence of a WikiAnn file: `lang:token<TAB>tag` lines, a blank
    line after each sentence; the token is what follows the first ":" (it may hold ":" itself)."""
    sentences, tokens, tags = [], [], []
    for line in path.read_text(encoding="utf-8").splitlines() + [""]:
        if line.strip():
            prefixed_token, tag = line.split("\t")
            tokens.append(prefixed_token.partition(":")[2])
            tags.append(tag)
        elif tokens:
            sentences.append((tokens, tags))
            tokens, tags = [], []
    return sentences


@pytest.fixture(scope="module")
def wikiann(shared_data):
    """{(language, split): sentences} of every WikiAnn sample file."""
    root = shared_data / "tasks" / "wikiann"
    return {(path.parent.name, path.name): wikiann_sentences(path)
            for path in sorted(root.glob("*/*"))}


def test_spans_of_real_wikiann_sentences_are_tfds_spans(wikiann):
    assert len({language for language, _ in wikiann}) == 40
    sentences = [sentence for file in wikiann.values() for sentence in file]
    assert len(sentences) >= 120
    for tokens, tags in sentences:
        assert spans_of_tags(tokens, tags) == get_spans(tokens, tags)


@pytest.mark.parametrize("tags", [
    ["O", "I-PER", "I-PER", "O"],  # I- without B- starts an entity
    ["I-LOC", "I-LOC"],  # ... at the start of the sentence
    ["B-PER", "B-PER", "I-PER"],  # B- after B- starts another
    ["B-PER", "I-ORG", "I-ORG", "O"],  # a type change inside I- starts another
    ["B-ORG", "I-ORG", "O", "I-ORG"],  # I- after O of the same type starts another
    ["B-PER", "I-PER", "B-LOC", "I-PER"],
    ["O", "O", "O", "B-LOC"],  # an entity ending the sentence
    ["O", "O"],
    [],
])
def test_spans_of_odd_tag_sequences_are_tfds_spans(tags):
    tokens = [f"w{index}" for index in range(len(tags))]
    assert spans_of_tags(tokens, tags) == get_spans(tokens, tags)


@pytest.mark.parametrize("tags", [["X-PER"], ["B-"], ["B"], ["BPER"], [""]])
def test_a_tag_that_is_not_iob2_is_refused(tags):
    with pytest.raises(ValueError, match="IOB2"):
        spans_of_tags(["w"], tags)


def test_tokens_and_tags_must_pair_up():
    with pytest.raises(ValueError, match="1 tokens but 2 tags"):
        spans_of_tags(["w"], ["O", "O"])


# --- span F1 against seqeval (default mode, micro F1 over entities) --------------------------------
# The scorers can differ in two ways, and the cases below are free of both (checked by
# `assert_scorers_comparable`): span F1 matches spans by (type, text), seqeval by (type, position),
# so the same text twice in a sentence with one mispositioned counts right for span F1 only; and
# span F1 ignores a span whose text holds ":" (see the Turkish test below).

SEQEVAL_SENTENCES = [("en", "dev"), ("bg", "test"), ("ko", "train"), ("ta", "train"), ("ja", "dev"),
                     ("hi", "train")]

# Each case: {sentence: {token index: predicted tag}}; every other tag is predicted right.
SEQEVAL_CASES = {
    "perfect": {},
    # Еквадор (LOC) missed
    "missed entity": {("bg", "test"): {6: "O"}},
    # Sioux Falls Arena tagged LOC, not ORG
    "wrong type": {("en", "dev"): {0: "B-LOC", 1: "I-LOC", 2: "I-LOC"}},
    # "Sioux Falls , South Dakota" cut in two at the comma; 서울 이랜드 FC에서 joined to K리그 챌린지의
    "boundary errors": {("en", "dev"): {6: "O", 7: "B-LOC"}, ("ko", "train"): {4: "I-ORG"}},
    # இங்கிருக்கும் tagged LOC; மன்னன் as a second PER after தேவனம்பியதீச (B- after B-)
    "extra entities": {("ta", "train"): {0: "B-LOC", 4: "B-PER"}},
    # 新潟市 missed, 長岡市 extended over the ・ before it, एशिया tagged ORG
    "mixed errors": {("ja", "dev"): {227: "O", 228: "O", 229: "O", 230: "B-LOC", 231: "I-LOC"},
                     ("hi", "train"): {5: "B-ORG"}},
}


def predicted_tags(gold: list[str], edits: dict[int, str]) -> list[str]:
    return [edits.get(index, tag) for index, tag in enumerate(gold)]


def assert_scorers_comparable(tokens, gold, predicted):
    """Span F1 and seqeval agree on this sentence: no span text holds ":", and a predicted span
    whose (type, text) equals a gold span's lies where that gold span lies."""
    def positioned(tags):
        return {(entity, " ".join(tokens[start:end + 1])): (start, end)
                for entity, (start, end) in tags_to_spans(tags)}
    gold_spans, predicted_spans = positioned(gold), positioned(predicted)
    assert not any(":" in text for _, text in (*gold_spans, *predicted_spans))
    for span, position in predicted_spans.items():
        assert gold_spans.get(span, position) == position


@pytest.mark.parametrize("case", [*SEQEVAL_CASES, "empty prediction"])
def test_span_f1_is_seqeval_f1_on_real_sentences(wikiann, case):
    gold_tags, predicted, targets, predictions = [], [], [], []
    for key in SEQEVAL_SENTENCES:
        (tokens, gold), = wikiann[key]
        edits = SEQEVAL_CASES.get(case, {}).get(key, {})
        guess = ["O"] * len(gold) if case == "empty prediction" else predicted_tags(gold, edits)
        assert_scorers_comparable(tokens, gold, guess)
        gold_tags.append(gold)
        predicted.append(guess)
        targets.append(SPAN_SEPARATOR.join(spans_of_tags(tokens, gold)))
        predictions.append(SPAN_SEPARATOR.join(spans_of_tags(tokens, guess)))
    expected = 100 * seqeval_f1(gold_tags, predicted, zero_division=0)
    assert span_f1(targets, predictions)["span_f1"] == pytest.approx(expected, abs=1e-9)
    if case != "perfect":
        assert expected < 100  # each edit is an error seqeval sees


def test_span_f1_ignores_an_entity_holding_a_colon_as_mt5_does(wikiann):
    # Turkish dev: ORG "Yıldız Savaşları : Bölüm II - Klonların Saldırısı" splits into three
    # fields at ":", so mT5's scorer drops it from both sides: nothing is left to match.
    (tokens, tags), = wikiann[("tr", "dev")]
    target = SPAN_SEPARATOR.join(spans_of_tags(tokens, tags))
    assert seqeval_f1([tags], [tags]) == 1.0
    assert span_f1([target], [target]) == {"span_f1": 0.0}


def test_span_f1_counts_a_repeated_gold_span_once_per_occurrence():
    # gold has "PER: rick" twice; predicted three times: 2 right of 3 predicted, 2 of 2 gold
    # -> P 2/3, R 1 -> F1 0.8.
    result = span_f1(["PER: rick $$ PER: rick"], ["PER: rick $$ PER: rick $$ PER: rick"])
    assert result == {"span_f1": pytest.approx(80)}


def test_span_f1_compares_type_and_text_stripped():
    assert span_f1(["PER: rick $$ LOC: earth"], ["PER :rick $$  LOC:earth "]) == {"span_f1": 100.0}


def test_span_f1_is_micro_over_sentences():
    # right 1 + 1, predicted 1 + 2, gold 2 + 1: P 2/3, R 2/3 -> F1 2/3
    result = span_f1(["PER: rick $$ PER: morty", "LOC: earth"],
                     ["PER: rick", "LOC: earth $$ ORG: citadel"])
    assert result == {"span_f1": pytest.approx(200 / 3)}


@pytest.mark.parametrize("malformed", ["PER rick", "", "None", "PER: a: b"])
def test_a_malformed_prediction_counts_as_no_span(malformed):
    # One right span and one sentence predicted with no span: P 1, R 1/2 -> F1 2/3.
    result = span_f1(["PER: rick", "PER: a"], ["PER: rick", malformed])
    assert result == {"span_f1": pytest.approx(200 / 3)}


def test_span_f1_without_spans_is_zero():
    assert span_f1(["None"], ["None"]) == {"span_f1": 0.0}
    assert span_f1(["PER: rick"], ["None"]) == {"span_f1": 0.0}
