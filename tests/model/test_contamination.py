"""The contamination study (text/contamination.py, model/tasks/contamination.py): the
normalisation, both methods on small texts, the index's file, and the command on a corpus
folder into which known examples of shared tasks are planted at known rates. Expected values
are literals or computed here (tests/support/contamination_reference.py), never read from the
modules."""
import csv
import gzip
import json
import pathlib
import shutil
import unicodedata

import pytest

from model.tasks import contamination as command
from tests.support.contamination_reference import ngram_set, reference_words
from text.contamination import ContaminationIndex, ExampleKey, IndexStats, normalize

LONG = ("the committee met on a rainy tuesday to discuss the budget for the new library "
        "building and its many shelves")  # 19 words
# GPT-3's 13-gram (Brown et al. 2020, Appendix C) and its least N, 8 words, the exact method's
# minimum; GPT-4's 50 characters (OpenAI 2023, Appendix C) for scripts without spaces.
NGRAM = 13
MIN_EXACT = 8
NGRAM_CHARACTERS = 50
CAT = "The cat sat on the mat by the door."  # 9 words: long enough for the exact method


@pytest.mark.parametrize("raw, normalized", [
    ("Hello, World!", "hello world"),
    ("  several\t\nkinds   of\u00a0space ", "several kinds of space"),
    ("U.S. don't", "us dont"),  # deleted, not made a space
    ("\u201cQuoted\u201d \u2014 dash \u00bfqu\u00e9?", "quoted dash qué"),
    ("$5 + 3 = 8 \U0001F600", "5 3 8"),  # symbols go with punctuation
    ("soft\u00adhyphen zero\u200bwidth", "softhyphen zerowidth"),  # invisible format characters
    ("ÉCOLE Straße", "école straße"),
    ("", ""),
    ("!!! ...", ""),
])
def test_normalize_lowercases_deletes_punctuation_and_collapses_space(raw, normalized):
    assert normalize(raw) == normalized


def _index(*rows):
    return ContaminationIndex.build(rows)


def test_an_exact_match_is_found_whatever_its_case_punctuation_and_spacing():
    index = _index(("glue_cola", "sentence", "7", CAT))
    found = index.matches("Yesterday, THE CAT -- sat on\nthe mat by... the DOOR!! Then it left.")
    assert found.exact == {ExampleKey("glue_cola", "sentence", "7")}
    assert found.ngram13 == set()  # nine words: too short for a 13-gram


@pytest.mark.parametrize("page", [
    "The cat sat on a mat by the door.",  # one word differs
    "The cat sat on the mat by the doorway.",  # the last word is longer: not at a word boundary
    "Bathe cat sat on the mat by the door.",  # nor the first
    "The cat sat. On the table: the mat by the door.",  # the words apart
])
def test_a_near_miss_is_not_an_exact_match(page):
    index = _index(("glue_cola", "sentence", "7", CAT))
    assert index.matches(page).exact == set()


def test_long_examples_with_one_beginning_are_told_apart_by_their_whole_text():
    common = "In the beginning of the long report the authors say that "
    first, second = common + "rain fell.", common + "the sun shone all week."
    index = _index(("a", "f", "1", first), ("a", "f", "2", second))
    page = f"{common} nothing at all. Later: {second.lower()} And {common.upper()} rain"
    assert index.matches(page).exact == {ExampleKey("a", "f", "2")}
    assert index.matches(f"{common} rain fellows").exact == set()  # no word boundary
    assert index.matches(f"x {common} rain fell").exact == {ExampleKey("a", "f", "1")}


def test_a_13_gram_is_found_across_case_and_punctuation_and_12_words_are_not():
    key = ExampleKey("xsum", "document", "3")
    index = _index((*key, LONG + ". It was long."))
    words = LONG.split()
    thirteen = " ".join(words[2:2 + NGRAM]).upper().replace(" ", ", ")
    found = index.matches(f"Intro text. {thirteen}!! Outro.")
    assert found.ngram13 == {key} and found.exact == set()
    twelve = " ".join(words[2:2 + NGRAM - 1])
    assert index.matches(f"Intro text. {twelve} outro words follow here.").ngram13 == set()


def test_fields_under_13_words_are_counted_by_the_exact_method_only():
    nine = "one two three four five six seven eight nine"
    index = _index(("t", "short", "1", nine), ("t", "long", "1", LONG), ("t", "empty", "1", "?!"))
    assert [key.field for key in index.keys] == ["short", "long"]  # no text, not an example
    assert index.too_short["ngram13"] == [True, False]
    assert index.stats.too_short_for_ngrams == 1
    both = index.matches(f"{nine} and {LONG}")
    assert both.exact == set(index.keys) and both.ngram13 == {index.keys[1]}


def test_examples_with_one_normalised_text_are_all_found():
    index = _index(("glue_rte", "sentence1", "dev:0", "A same text, said in eight words here."),
                   ("super_glue_rte", "premise", "val:0", "a same text said in eight words here"))
    page = "It is A SAME text said in eight words here indeed"
    assert index.matches(page).exact == set(index.keys)


THIRTEEN = "one two three four five six seven eight nine ten eleven twelve thirteen"


def test_an_example_of_exactly_13_words_is_found_by_13_grams_and_one_of_12_is_not():
    twelve = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    index = _index(("t", "thirteen", "1", THIRTEEN), ("t", "twelve", "1", twelve))
    found = index.matches(f"Before. {THIRTEEN.upper()}; and {twelve}, after.")
    assert found.ngram13 == {ExampleKey("t", "thirteen", "1")}
    assert found.exact == {ExampleKey("t", "thirteen", "1"), ExampleKey("t", "twelve", "1")}


@pytest.mark.parametrize("example, found", [
    ("Good.", False),  # WMT's one-word segment
    ("Real life.", False),  # WiC's
    ("one two three four five six seven", False),  # 7 words
    ("one two three four five six seven eight", True),  # 8 words: GPT-3's least N
])
def test_the_exact_method_leaves_out_examples_under_8_words(example, found):
    index = _index(("wmt", "en", "1", example))
    page = f"It was good. Real life. {example} Nothing else: one two three four five six seven."
    assert (index.matches(page).exact == {ExampleKey("wmt", "en", "1")}) is found


def _xquad_fields(shared_data, language: str, field: str) -> list:
    """(task, field, id, text) of one field of every question of an XQuAD file, read here."""
    found = sorted(shared_data.glob(f"tasks/xquad/**/xquad.{language}.json"))
    assert len(found) == 1, found
    data = json.loads(found[0].read_text(encoding="utf-8"))
    rows = []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                text = paragraph["context"] if field == "context" else qa["question"]
                rows.append(("xquad", field, f"{language}:{qa['id']}", text))
    return rows


def _spaceless(text: str) -> str:
    return "".join(reference_words(text))


@pytest.mark.parametrize("language, questions, measurable", [
    ("zh", 1190, 1175),  # 861 too short when words were split on spaces
    ("th", 153, 153),
])
def test_the_contexts_of_scripts_without_spaces_are_measured_in_characters(
        shared_data, language, questions, measurable):
    contexts = _xquad_fields(shared_data, language, "context")
    assert len(contexts) == questions
    assert sum(len(_spaceless(text)) >= NGRAM_CHARACTERS for *_, text in contexts) == measurable
    index = ContaminationIndex.build(contexts)
    assert index.stats.too_short_for_ngrams == questions - measurable


@pytest.mark.parametrize("language", ["zh", "th"])
def test_a_planted_context_of_a_script_without_spaces_is_found_and_no_other(shared_data, language):
    rows = _xquad_fields(shared_data, language, "context")
    by_text = {text: row for row in rows for text in [row[3]]}  # one example per paragraph
    (planted, other, filler) = sorted(by_text.values(), key=lambda row: row[2])[:3]
    index = ContaminationIndex.build([planted, other])
    middle = planted[3][len(planted[3]) // 3:len(planted[3]) // 3 + 80]  # cut inside words
    page = f"{filler[3][:200]}{middle}{filler[3][200:400]}"
    assert len(_spaceless(middle)) >= NGRAM_CHARACTERS
    found = index.matches(page)
    assert found.ngram13 == {ExampleKey(*planted[:3])}
    assert found.exact == set()
    whole = index.matches(f"{filler[3][:100]}{planted[3]}{filler[3][100:200]}")  # no spaces around
    assert whole.exact == whole.ngram13 == {ExampleKey(*planted[:3])}
    assert index.matches(filler[3]) == ((set(), set()))


def _letters(first: int, count: int) -> str:
    """`count` letters of the block that starts at `first`, in a scrambled order (no repeated
    run), as text of a script without spaces could be."""
    letters = [chr(code) for code in range(first, first + 128)
               if unicodedata.category(chr(code)).startswith("L")]
    return "".join(letters[(i * 7 + i // len(letters)) % len(letters)] for i in range(count))


@pytest.mark.parametrize("first", [
    0x0E01, 0x0E81, 0x1000, 0x1780, 0x3041, 0x30A1, 0x4E00, 0xAC00,
], ids=["Thai", "Lao", "Myanmar", "Khmer", "Hiragana", "Katakana", "Han", "Hangul (spaces)"])
def test_each_script_without_spaces_is_measured_in_characters(first):
    """80 letters, a space every 20 (Thai's spaces end phrases, not words): a page holding 55
    of them from inside a phrase shares a 50-gram; one holding the whole text with no space
    around it holds it exactly. Korean is written with spaces: measured in words."""
    text = " ".join(_letters(first, 80)[i:i + 20] for i in range(0, 80, 20))
    key = ExampleKey("t", "f", "1")
    index = _index((*key, text))
    spaced = first == 0xAC00
    middle = text.replace(" ", "")[15:70]
    assert index.matches(f"Some words {middle} and more.").ngram13 == (set() if spaced else {key})
    assert index.matches(f"x{text.replace(' ', '')}y").exact == (set() if spaced else {key})


@pytest.mark.parametrize("characters, exact, ngram", [
    (30, False, False), (31, True, False), (49, True, False), (50, True, True)])
def test_the_minimums_in_characters(characters, exact, ngram):
    """GPT-4's 50 characters for an n-gram, and 31 (8/13 of 50) for the exact method."""
    text = _letters(0x4E00, characters)
    key = ExampleKey("t", "f", "1")
    index = _index((*key, text))
    found = index.matches(f"前文{text}后文")
    assert (found.exact == {key}, found.ngram13 == {key}) == (exact, ngram)
    assert index.too_short == {"exact": [not exact], "ngram13": [not ngram]}


@pytest.mark.parametrize("changed", range(13))
def test_a_13_gram_with_any_one_word_changed_is_not_found(changed):
    index = _index(("t", "f", "1", THIRTEEN))
    words = THIRTEEN.split()
    words[changed] = "other"
    assert index.matches(f"before {' '.join(words)} after").ngram13 == set()


def test_a_page_holding_examples_of_both_kinds_finds_both():
    chinese = _letters(0x4E00, 40)
    index = _index(("t", "en", "1", CAT), ("t", "zh", "1", chinese))
    found = index.matches(f"{CAT} 前文{chinese}后文")
    assert found.exact == {ExampleKey("t", "en", "1"), ExampleKey("t", "zh", "1")}


def test_an_index_of_no_example_finds_nothing():
    index = _index()
    assert index.stats == IndexStats(examples=0, in_characters=0, too_short_for_exact=0,
                                      too_short_for_ngrams=0, ngrams=0)
    assert index.matches(f"{LONG} {CAT}") == (set(), set())


def test_keys_and_texts_of_different_lengths_are_refused():
    with pytest.raises(ValueError, match="^2 example keys but 1 texts$"):
        ContaminationIndex([ExampleKey("t", "f", "1"), ExampleKey("t", "f", "2")], ["one text"])


def test_the_index_round_trips_through_a_file(tmp_path):
    index = _index(("a", "f", "1", "Alpha beta gamma."), ("b", "g", "x/2", LONG),
                   ("c", "h", "3", "Unicode: café, naïve"))
    path = tmp_path / "index.json.gz"
    index.save(str(path))
    loaded = ContaminationIndex.load(str(path))
    assert loaded.keys == index.keys and loaded.texts == index.texts
    assert loaded.stats == index.stats
    for page in ("alpha beta GAMMA", f"x {LONG.upper()} y", "cafe naive", "unicode cafe naive",
                 " ".join(LONG.split()[1:15]), "UNICODE CAFÉ NAÏVE!"):
        assert loaded.matches(page) == index.matches(page)


# Named, and gzipped without a time: pytest-xdist's workers must collect the same test ids.
@pytest.mark.parametrize("content, message", [
    (b"not gzip at all", "is not a contamination index"),
    (gzip.compress(b'{"format": "something else"}', mtime=0), "is not a contamination index"),
    (gzip.compress(json.dumps({"format": "t5-c4 contamination index", "version": 0,
                               "method": {}, "examples": []}).encode(), mtime=0),
     r"another version of the method \(version 0\)"),
    (gzip.compress(json.dumps({"format": "t5-c4 contamination index", "version": 2,
                               "method": {"ngram_words": 13}, "examples": []}).encode(), mtime=0),
     r"another version of the method \(version 2\)"),
], ids=["not gzip", "another format", "another version", "another method"])
def test_loading_a_file_that_is_no_index_of_this_method_is_refused(tmp_path, content, message):
    path = tmp_path / "index.json.gz"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        ContaminationIndex.load(str(path))



def test_an_index_of_another_version_with_the_same_method_is_refused(tmp_path):
    """The version alone decides too: a file `save` wrote, its method unchanged, its version
    rewritten to 1, is refused, the message naming the file's version."""
    path = tmp_path / "index.json.gz"
    _index(("a", "f", "1", "Alpha beta gamma.")).save(str(path))
    document = json.loads(gzip.decompress(path.read_bytes()))
    path.write_bytes(gzip.compress(json.dumps(dict(document, version=1)).encode(), mtime=0))
    with pytest.raises(ValueError) as refused:
        ContaminationIndex.load(str(path))
    assert str(refused.value) == (f"{path} was written by another version of the method "
                                  "(version 1); rebuild it")


# --- the command on planted data ---------------------------------------------------------------

PLANTED_TASKS = ("xsum", "super_glue_boolq", "glue_qnli", "super_glue_copa")
FILLER = ("Zorblat quinties vex the marmoset plinth.", "Nobody flurbs a gazunder on Wednesdays.")


def _write_shard(path: pathlib.Path, texts):
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for number, text in enumerate(texts):
            f.write(json.dumps({"text": text, "url": f"https://example.com/{path.stem}/{number}",
                                "timestamp": "2019-04-18T00:00:00Z"}) + "\n")


def _disguised(text: str) -> str:
    """The same normalised text, written otherwise: ASCII letters upper-cased, commas made
    semicolons, quotes and exclamation marks added, spaces made line breaks and tabs."""
    upper = "".join(c.upper() if c.isascii() else c for c in text)
    return "\u00ab" + upper.replace(",", ";").replace(" ", " \n\t") + "!!\u00bb"


def _window(text: str) -> str | None:
    """16 words from inside a text of 20 words or more (13 or more after normalisation, and
    never the whole text): shares a 13-gram with it without being it."""
    words = text.split()
    window = " ".join(words[2:18])
    if len(reference_words(text)) < 20 or len(reference_words(window)) < NGRAM:
        return None
    return window


@pytest.fixture(scope="module")
def planted(shared_data, tmp_path_factory):
    """A corpus folder (train and validation shards, and a language folder as mC4 has) whose
    pages hold, one per page among filler: every 4th example's field whole and disguised, and
    of the others every 4th (one after) a 16-word window of a long field."""
    tasks_dir = str(shared_data / "tasks")
    rows, _ = command.task_examples(tasks_dir, [command.source_of(t) for t in PLANTED_TASKS], True)
    by_field = {}
    for task, field, example_id, text in rows:
        by_field.setdefault((task, field), {}).setdefault(example_id, text)
    pages, exact, window = [], set(), set()
    for (task, field), examples in sorted(by_field.items()):
        for position, (example_id, text) in enumerate(sorted(examples.items())):
            if position % 4 == 0:
                pages.append(_disguised(text))
                exact.add((task, field, example_id))
            elif position % 4 == 1 and _window(text):
                pages.append(_disguised(_window(text)))
                window.add((task, field, example_id))
    texts = [f"{FILLER[i % 2]}\n{planted}\n{FILLER[(i + 1) % 2]}" for i, planted in enumerate(pages)]
    texts += list(FILLER)  # pages with nothing planted
    out = tmp_path_factory.mktemp("planted")
    shard_files = ["train-00000-of-00002.jsonl.gz", "train-00001-of-00002.jsonl.gz",
                   "validation-00000-of-00001.jsonl.gz", "de/train-00000-of-00001.jsonl.gz"]
    for number, name in enumerate(shard_files):
        _write_shard(out / name, texts[number::len(shard_files)])
    return {"out": out, "tasks": tasks_dir, "by_field": by_field, "exact": exact,
            "window": window, "texts": texts, "shards": len(shard_files)}


def _run(capsys, *argv):
    command.main([str(arg) for arg in argv])
    return capsys.readouterr()


@pytest.fixture(scope="module")
def planted_report(planted):
    argv = [str(planted["out"]), "--tasks", planted["tasks"],
            "--index", str(planted["out"] / "new" / "folder" / "index.json.gz")]
    for task in PLANTED_TASKS:
        argv += ["--task", task]
    command.main(argv)
    return json.loads((planted["out"] / "report" / "contamination.json").read_text())


def test_the_planted_shares_are_found_by_both_methods(planted, planted_report):
    assert planted_report["corpus"]["pages"] == len(planted["texts"])
    assert planted_report["corpus"]["shards"] == planted["shards"]
    assert set(planted_report["tasks"]) == set(PLANTED_TASKS)
    for (task, field), examples in planted["by_field"].items():
        row = planted_report["tasks"][task][field]
        lengths = {i: len(reference_words(text)) for i, text in examples.items()}
        short = sum(length < NGRAM for length in lengths.values())
        short_for_exact = sum(length < MIN_EXACT for length in lengths.values())
        exact = sum((task, field, i) in planted["exact"] and lengths[i] >= MIN_EXACT
                    for i in examples)
        # A whole example planted has all its 13-grams in the corpus; a window has one.
        by_ngrams = sum((task, field, i) in planted["window"] or (task, field, i) in planted["exact"]
                        and lengths[i] >= NGRAM for i in examples)
        assert row["examples"] == len(examples), (task, field)
        assert row["too_short_for_ngrams"] == short, (task, field)
        assert row["too_short_for_exact"] == short_for_exact, (task, field)
        assert (row["exact"], row["exact_share"]) == (
            exact, exact / (len(examples) - short_for_exact)
            if len(examples) > short_for_exact else None), (task, field)
        assert row["ngram13"] == by_ngrams, (task, field)
        assert row["ngram13_share"] == (by_ngrams / (len(examples) - short)
                                        if len(examples) > short else None), (task, field)


def test_the_report_agrees_with_a_brute_force_search_of_the_pages(planted, planted_report):
    """Every example found, and no other, by Python's `in` and sets of word tuples."""
    pages = [reference_words(text) for text in planted["texts"]]
    joined = [f" {' '.join(words)} " for words in pages]
    page_ngrams = set().union(*(ngram_set(words, NGRAM) for words in pages))
    for (task, field), examples in planted["by_field"].items():
        texts = [reference_words(text) for text in examples.values()]
        row = planted_report["tasks"][task][field]
        assert row["exact"] == sum(len(t) >= MIN_EXACT and any(f" {' '.join(t)} " in page
                                                               for page in joined) for t in texts)
        assert row["ngram13"] == sum(bool(ngram_set(t, NGRAM) & page_ngrams) for t in texts)


def test_the_reader_counts_the_release_files_examples(shared_data, planted_report):
    with open(shared_data / "tasks/xsum/sample.json", encoding="utf-8") as f:
        xsum = [json.loads(line) for line in f if line.strip()]
    assert planted_report["tasks"]["xsum"]["summary"]["examples"] == len(xsum)
    qnli = 0
    for path in sorted((shared_data / "tasks/glue_qnli").glob("*.tsv")):
        with open(path, encoding="utf-8", newline="") as f:
            qnli += len(list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))) - 1
    assert planted_report["tasks"]["glue_qnli"]["question"]["examples"] == qnli


def test_the_written_index_finds_what_the_command_found(planted, planted_report):
    index = ContaminationIndex.load(str(planted["out"] / "new" / "folder" / "index.json.gz"))
    found = set()
    for text in planted["texts"]:
        found |= index.matches(text).exact
    long_enough = {(task, field, i) for (task, field), examples in planted["by_field"].items()
                   for i, text in examples.items() if len(reference_words(text)) >= MIN_EXACT}
    assert {tuple(key) for key in found} >= planted["exact"] & long_enough
    assert len(found) == sum(row["exact"] for fields in planted_report["tasks"].values()
                             for row in fields.values())


def test_the_report_has_its_documented_schema(planted_report, planted, capsys):
    assert set(planted_report) == {"method", "tasks", "corpus", "skipped_tasks"}
    assert planted_report["method"]["ngram_words"] == NGRAM
    assert {"pages", "shards", "lines_skipped", "damaged_shards", "folder"} <= set(planted_report["corpus"])
    row_keys = {"examples", "in_characters", "exact", "exact_share", "too_short_for_exact",
                "ngram13", "ngram13_share", "too_short_for_ngrams"}
    assert all(set(row) == row_keys for fields in planted_report["tasks"].values() for row in fields.values())
    printed = _run(capsys, planted["out"], "--tasks", planted["tasks"], "--task", "xsum",
                   "--json", planted["out"] / "xsum.json").out
    assert "xsum" in printed and "summary" in printed and "report written to" in printed


# --- bad inputs ----------------------------------------------------------------------------------

def test_the_study_at_the_boundary_and_no_share_above_one(tmp_path):
    """A 13-word field is measured by 13-grams, a 12-word one is not; an example on many pages,
    thrice on one, repeated in its file, or sharing its text with another counts once."""
    twelve = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    tasks = tmp_path / "tasks" / "xsum"
    tasks.mkdir(parents=True)
    lines = [{"id": "a", "document": THIRTEEN, "summary": twelve},
             {"id": "b", "document": LONG, "summary": twelve},
             {"id": "a", "document": THIRTEEN, "summary": twelve}]  # a again: one example
    (tasks / "sample.json").write_text("".join(json.dumps(line) + "\n" for line in lines))
    pages = [f"{FILLER[0]} {THIRTEEN}."] * 5 + [f"{THIRTEEN}. {THIRTEEN}! {twelve}; {THIRTEEN}"
                                                 f" {twelve}"]
    _write_shard(tmp_path / "out" / "train-00000-of-00001.jsonl.gz", pages)
    json_path = tmp_path / "report.json"
    command.main([str(tmp_path / "out"), "--tasks", str(tmp_path / "tasks"), "--task", "xsum",
                  "--json", str(json_path)])
    rows = json.loads(json_path.read_text())["tasks"]["xsum"]
    assert rows["document"] == {"examples": 2, "in_characters": 0, "exact": 1, "exact_share": 0.5,
                                "too_short_for_exact": 0, "ngram13": 1, "ngram13_share": 0.5,
                                "too_short_for_ngrams": 0}
    assert rows["summary"] == {"examples": 2, "in_characters": 0, "exact": 2, "exact_share": 1.0,
                               "too_short_for_exact": 0, "ngram13": 0, "ngram13_share": None,
                               "too_short_for_ngrams": 2}


def test_a_missing_tasks_folder_or_corpus_is_an_error(planted, tmp_path):
    with pytest.raises(SystemExit, match="no tasks folder"):
        command.main([str(planted["out"]), "--tasks", str(tmp_path / "nowhere")])
    with pytest.raises(SystemExit, match="no corpus folder"):
        command.main([str(tmp_path / "nowhere"), "--tasks", planted["tasks"], "--task", "xsum"])
    with pytest.raises(SystemExit, match="no shards"):
        command.main([str(tmp_path), "--tasks", planted["tasks"], "--task", "xsum"])
    with pytest.raises(SystemExit, match="no task 'glue_nothing'"):
        command.main([str(planted["out"]), "--task", "glue_nothing"])


def test_a_report_that_cannot_be_written_is_an_error(planted, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    with pytest.raises(SystemExit, match=f"cannot write {blocker}"):
        command.main([str(planted["out"]), "--tasks", planted["tasks"], "--task", "xsum",
                      "--json", str(blocker / "report.json")])


def test_a_missing_task_is_left_out_unless_asked_for(planted, tmp_path, capsys):
    tasks = tmp_path / "tasks"
    (tasks / "xsum").mkdir(parents=True)
    (tasks / "xsum" / "sample.json").write_text(json.dumps({"document": LONG, "summary": "s"}) + "\n")
    with pytest.raises(SystemExit, match="glue_rte: no folder"):
        command.main([str(planted["out"]), "--tasks", str(tasks), "--task", "glue_rte"])
    json_path = tmp_path / "report.json"
    command.main([str(planted["out"]), "--tasks", str(tasks), "--json", str(json_path)])
    result = json.loads(json_path.read_text())
    assert list(result["tasks"]) == ["xsum"]
    assert set(result["skipped_tasks"]) == {source.name for source in command.SOURCES} - {"xsum"}
    assert "left out (no files)" in capsys.readouterr().out


def test_an_unreadable_task_file_is_an_error_naming_it(planted, tmp_path):
    broken = tmp_path / "tasks" / "xsum" / "sample.json"
    broken.parent.mkdir(parents=True)
    broken.write_text('{"document": "fine", "summary": "fine"}\n{"document": "cut sh\n')
    with pytest.raises(SystemExit, match=f"cannot read {broken}"):
        command.main([str(planted["out"]), "--tasks", str(tmp_path / "tasks"), "--task", "xsum"])


def test_a_corrupt_shard_and_bad_records_are_counted_and_named(planted, tmp_path):
    """A record without a text is skipped and counted; a shard cut short, or with a line that
    is not JSON, keeps the pages before the damage and is named."""
    out = tmp_path / "out"
    page = f"{FILLER[0]} {LONG}"
    _write_shard(out / "train-00000-of-00003.jsonl.gz", [page, page])
    whole = gzip.compress(("".join(json.dumps({"text": page}) + "\n" for _ in range(2000))).encode())
    (out / "train-00001-of-00003.jsonl.gz").write_bytes(whole[:len(whole) // 2])  # cut short
    with gzip.open(out / "train-00002-of-00003.jsonl.gz", "wt") as f:
        f.write(json.dumps({"text": page}) + "\nnot json\n" + json.dumps({"text": page}) + "\n")
    with gzip.open(out / "validation-00000-of-00001.jsonl.gz", "wt") as f:
        f.write(json.dumps({"text": page}) + "\n" + json.dumps({"url": "no text"}) + "\n[1, 2]\n")
    tasks = tmp_path / "tasks" / "xsum"
    tasks.mkdir(parents=True)
    (tasks / "sample.json").write_text(json.dumps({"document": LONG, "summary": "unseen words"}) + "\n")
    json_path = tmp_path / "report.json"
    command.main([str(out), "--tasks", str(tmp_path / "tasks"), "--json", str(json_path), "--task", "xsum"])
    result = json.loads(json_path.read_text())
    corpus = result["corpus"]
    assert sorted(corpus["damaged_shards"]) == [str(out / "train-00001-of-00003.jsonl.gz"),
                                                str(out / "train-00002-of-00003.jsonl.gz")]
    assert corpus["lines_skipped"] == 2 and corpus["shards"] == 4
    assert 4 < corpus["pages"] < 2004  # the pages before the damage count
    assert result["tasks"]["xsum"]["document"]["exact"] == 1
    assert result["tasks"]["xsum"]["summary"]["exact"] == 0


def test_a_runs_exclusions_beside_its_shards_are_no_part_of_the_corpus(planted, tmp_path):
    """`--exclusions OUT/exclusions` keeps the dropped pages in the output folder: their text
    (here every planted page again) is not read as the corpus's."""
    out = tmp_path / "out"
    shutil.copytree(planted["out"], out, ignore=shutil.ignore_patterns("report", "new"))
    lines = "".join(json.dumps({"text": text}) + "\n" for text in planted["texts"])
    for name in ("exclusions/exclusions-00000-of-00001.jsonl.gz",
                 "exclusions/kept-00000-of-00001.jsonl.gz"):
        (out / name).parent.mkdir(exist_ok=True)
        (out / name).write_bytes(gzip.compress(lines.encode()))
    read = [pathlib.Path(path).relative_to(out).as_posix() for path in command.shards(str(out))]
    assert read == sorted(
        path.relative_to(planted["out"]).as_posix() for path in planted["out"].rglob("*.jsonl.gz"))


# --- the tasks come from the registry ----------------------------------------------------------

def _squad_questions(path: pathlib.Path) -> int:
    data = json.loads(path.read_text(encoding="utf-8"))["data"]
    return sum(len(paragraph["qas"]) for article in data for paragraph in article["paragraphs"])


def test_squad_is_its_v1_1_file_and_never_a_v2_file(shared_data, tmp_path):
    """The shared SQuAD folder holds a v1.1 sample and a 2.0 one beside it: the study reads
    the v1.1 file's 5 questions only (read here with json), and a 2.0 file named as v1.1's is
    refused, the error naming it."""
    squad = shared_data / "tasks" / "squad"
    assert _squad_questions(squad / "squad_v1_sample.json") == 5
    assert _squad_questions(squad / "squad_v2_sample.json") == 6
    rows, _ = command.task_examples(str(shared_data / "tasks"), [command.source_of("squad")], True)
    assert sorted({row[1] for row in rows}) == ["context", "question"]
    assert len([row for row in rows if row[1] == "question"]) == 5
    assert {row[2].partition(":")[0] for row in rows} == {"squad_v1_sample.json"}
    disguised = tmp_path / "squad" / "dev-v1.1.json"
    disguised.parent.mkdir()
    shutil.copy(squad / "squad_v2_sample.json", disguised)
    with pytest.raises(SystemExit, match=f"cannot read {disguised}: .*SQuAD 2.0"):
        command.main(["--tasks", str(tmp_path), "--task", "squad", "--index",
                      str(tmp_path / "index.json.gz")])


def test_every_registered_task_with_text_is_measured_by_its_declared_fields():
    """The study's tasks are the registry's that declare their text, with those fields, and
    the benchmarks outside it; none twice."""
    from model import tasks
    declared = {name: tasks.get(name).text.fields for name in tasks.names() if tasks.get(name).text}
    assert {"glue_rte", "super_glue_multirc", "squad", "cnn_dailymail", "wmt_en_de",
            "mt5_xquad_test.zh"} <= set(declared)
    assert declared["glue_rte"] == ("sentence1", "sentence2")
    assert declared["super_glue_copa"] == ("premise", "choice1", "choice2")
    names = [source.name for source in command.SOURCES]
    assert len(names) == len(set(names))
    assert {name: command.source_of(name).text.fields for name in declared} == declared
    assert {"xsum", "snli", "race", "story_cloze"} <= set(names) - set(tasks.names())


# --- corpora as the pipeline writes them -------------------------------------------------------

def _records(path: pathlib.Path) -> list:
    """A shard's records, read without the project's code."""
    import pyarrow.parquet as pq
    if path.name.endswith(".parquet"):
        return pq.read_table(path).to_pylist()
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [json.loads(line) for line in lines]


@pytest.fixture(scope="module")
def pipeline_corpora(one_job):
    """mC4 runs of the pipeline on the shared samples (language folders), as JSON lines and as
    Parquet (`--format parquet`): the session's references (tests/conftest.py)."""
    return {name: one_job("multilingual", extra=("--format", name))
            for name in ("jsonl", "parquet")}


@pytest.mark.parametrize("shard_format, suffix", [("jsonl", ".jsonl.gz"), ("parquet", ".parquet")])
def test_a_pipeline_corpus_is_read_in_the_format_it_was_written(
        pipeline_corpora, shared_data, tmp_path, shard_format, suffix):
    """Every shard of the run (its language folders' splits) is read, each page once: the pages
    counted are the records of its shard files, read here without the project's code."""
    out = pipeline_corpora[shard_format]
    files = sorted(path for path in out.rglob(f"*{suffix}")
                   if path.name.startswith(("train-", "validation-")))
    assert files and all(path.parent != out for path in files)  # in language folders
    json_path = tmp_path / "report.json"
    command.main([str(out), "--tasks", str(shared_data / "tasks"), "--task", "xsum",
                  "--json", str(json_path)])
    corpus = json.loads(json_path.read_text())["corpus"]
    assert corpus["shards"] == len(files)
    assert corpus["pages"] == sum(len(_records(path)) for path in files) > 0
    assert corpus["lines_skipped"] == 0 and corpus["damaged_shards"] == {}


def test_a_json_lines_and_a_parquet_corpus_of_one_run_report_the_same(
        pipeline_corpora, shared_data, tmp_path):
    reports = {}
    for name, out in pipeline_corpora.items():
        json_path = tmp_path / f"{name}.json"
        command.main([str(out), "--tasks", str(shared_data / "tasks"), "--task", "xsum",
                      "--task", "glue_rte", "--json", str(json_path)])
        reports[name] = json.loads(json_path.read_text())
        reports[name]["corpus"].pop("folder")
    assert reports["jsonl"] == reports["parquet"]


def test_only_the_shards_the_runs_stats_list_are_read(pipeline_corpora, shared_data, tmp_path):
    """Another run's shards beside the run's (another number of files) are no part of it."""
    out = tmp_path / "out"
    shutil.copytree(pipeline_corpora["jsonl"], out)
    listed = json.loads((out / "stats.json").read_text())["shards"]
    language, _, split = sorted(listed)[0].rpartition("/")
    stray = out / language / f"{split}-00000-of-00099.jsonl.gz"
    _write_shard(stray, [f"{FILLER[0]} {LONG}"])
    assert str(stray) not in command.shards(str(out))
    assert len(command.shards(str(out))) == sum(listed.values())
