"""The task layer: registry, local readers (checked against the TFDS builders), the paper's text
formats on real samples, postprocessing and scoring with invalid labels, mixtures, CLI, tf.data."""
import subprocess
import sys

import pytest

from model import tasks
from model.data import mixing
from model.tasks import sources
from model.tasks.glue import stsb_target
from model.tasks.squad import pad_punctuation
from model.tasks.super_glue import names_referent

ISSUE_TASKS = ["glue_cola", "glue_sst2", "glue_mrpc", "glue_stsb", "glue_qqp", "glue_mnli", "glue_qnli",
               "glue_rte", "glue_wnli", "super_glue_boolq", "super_glue_cb", "super_glue_copa",
               "super_glue_multirc", "super_glue_record", "super_glue_rte", "super_glue_wic",
               "super_glue_wsc", "dpr", "cnn_dailymail", "squad", "wmt_en_de", "wmt_en_fr", "wmt_en_ro"]


@pytest.fixture(scope="module")
def task_data(shared_data):
    return shared_data / "tasks"


def first(task_name, *paths):
    return next(iter(tasks.get(task_name).local_examples(*map(str, paths))))


# --- registry -------------------------------------------------------------------------

def test_registry_has_every_task_of_the_issue_and_the_three_mixtures():
    # Then mT5's (tests/model/test_mt5_tasks.py), which the T5 paper's `all` leaves out.
    assert sorted(name for name in tasks.names() if not name.startswith("mt5_")) == sorted(ISSUE_TASKS)
    assert tasks.mixture_names()[:3] == ["glue", "super_glue", "all"]
    assert {t.name for t in tasks.get_mixture("all").tasks} == set(ISSUE_TASKS)


def test_unknown_names_are_clear_errors():
    with pytest.raises(KeyError, match="no task 'glue'.*get_mixture"):
        tasks.get("glue")
    with pytest.raises(KeyError, match="no mixture"):
        tasks.get_mixture("glue_cola")


def test_wnli_is_evaluated_but_never_trained_on():
    glue = tasks.get_mixture("glue")
    assert "glue_wnli" in {t.name for t in glue.tasks}
    assert "glue_wnli" not in glue.rates()
    assert not tasks.get("glue_wnli").trained_on


def test_sources_are_the_data_sets_the_paper_used():
    assert str(tasks.get("glue_cola").splits["train"]) == "glue/cola:train"
    assert set(tasks.get("glue_mnli").splits) == {"train", "validation_matched", "validation_mismatched"}
    assert str(tasks.get("super_glue_boolq").splits["validation"]) == "super_glue/boolq:validation"
    assert str(tasks.get("super_glue_wsc").splits["train"]) == "super_glue/wsc.fixed:train"
    assert str(tasks.get("squad").splits["validation"]) == "squad/v1.1:validation"
    assert str(tasks.get("cnn_dailymail").splits["validation"]) == "cnn_dailymail:validation"
    # newstest2013 (en-de), newstest2014 (en-fr), WMT16 (en-ro): see TFDS's wmt_t2t/wmt14/wmt16.
    assert str(tasks.get("wmt_en_de").splits["validation"]) == "wmt_t2t_translate/de-en:validation"
    assert str(tasks.get("wmt_en_fr").splits["validation"]) == "wmt14_translate/fr-en:test"
    assert str(tasks.get("wmt_en_ro").splits["validation"]) == "wmt16_translate/ro-en:validation"


# --- local readers give what the TFDS builders give ----------------------------------------

@pytest.fixture(scope="module")
def tfds_dir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("tfds"))


def _with_label_ids(builder, examples):
    label = builder.info.features["label"] if "label" in builder.info.features else None
    out = []
    for example in examples:
        example = dict(example)
        if label is not None and isinstance(example["label"], str):
            example["label"] = label.str2int(example["label"])
        elif label is not None and not hasattr(label, "str2int"):
            example["label"] = float(example["label"])  # STS-B's float32 score
        out.append(example)
    return out


GLUE_FILES = [("cola", "glue_cola/train.tsv", "train"), ("cola", "glue_cola/in_domain_dev.tsv", "dev"),
              ("cola", "glue_cola/test.tsv", "test"), ("sst2", "glue_sst2/dev.tsv", "dev"),
              ("sst2", "glue_sst2/test.tsv", "test"), ("qqp", "glue_qqp/dev.tsv", "dev"),
              ("qqp", "glue_qqp/test.tsv", "test"), ("stsb", "glue_stsb/dev.tsv", "dev"),
              ("mnli", "glue_mnli/train.tsv", "train"), ("mnli", "glue_mnli/dev_mismatched.tsv", "dev"),
              ("mnli", "glue_mnli/test_matched.tsv", "test"), ("qnli", "glue_qnli/dev.tsv", "dev"),
              ("rte", "glue_rte/dev.tsv", "dev"), ("rte", "glue_rte/test.tsv", "test"),
              ("wnli", "glue_wnli/dev.tsv", "dev")]


@pytest.mark.parametrize("config,path,split", GLUE_FILES)
def test_glue_tsv_reader_equals_tfds_builder(task_data, tfds_dir, config, path, split):
    import tensorflow_datasets as tfds
    builder = tfds.builder(f"glue/{config}", data_dir=tfds_dir)
    theirs = [e for _, e in builder._generate_examples(data_file=str(task_data / path), split=split)]
    ours = list(tasks.get(f"glue_{config}").local_examples(str(task_data / path)))
    assert ours and ours == _with_label_ids(builder, theirs)


def test_mrpc_reader_equals_tfds_builder(task_data, tfds_dir, tmp_path):
    import tensorflow_datasets as tfds
    builder = tfds.builder("glue/mrpc", data_dir=tfds_dir)
    no_dev_ids = tmp_path / "dev_ids.tsv"
    no_dev_ids.write_text("")
    files = {"dev_ids": str(no_dev_ids), "train": str(task_data / "glue_mrpc/dev.tsv")}
    theirs = list(builder._generate_example_mrpc_files(mrpc_files=files, split="train"))
    assert list(tasks.get("glue_mrpc").local_examples(str(task_data / "glue_mrpc/dev.tsv"))) == theirs


SUPER_GLUE_FILES = [("boolq", "boolq", "superglue_boolq/boolq.jsonl"), ("cb", "cb", "superglue_cb/val.jsonl"),
                    ("copa", "copa", "superglue_copa/train.jsonl"),
                    ("multirc", "multirc", "superglue_multirc/train.jsonl"),
                    ("rte", "rte", "superglue_rte/superglue_rte.jsonl"), ("wic", "wic", "superglue_wic/train.jsonl"),
                    ("wsc", "wsc.fixed", "superglue_wsc/val.jsonl")]


@pytest.mark.parametrize("task,config,path", SUPER_GLUE_FILES)
def test_superglue_jsonl_reader_equals_tfds_builder(task_data, tfds_dir, task, config, path):
    import tensorflow_datasets as tfds
    builder = tfds.builder(f"super_glue/{config}", data_dir=tfds_dir)
    theirs = [e for _, e in builder._generate_examples(data_file=str(task_data / path), split="train")]
    ours = list(tasks.get(f"super_glue_{task}").local_examples(str(task_data / path)))
    assert ours and ours == _with_label_ids(builder, theirs)


def test_record_readers_equal_tfds_builder(task_data, tfds_dir, tmp_path):
    """The ReCoRD release JSON and its SuperGLUE JSONL form give the same examples as TFDS."""
    import json

    import tensorflow_datasets as tfds
    release = json.loads((task_data / "superglue_record/record.json").read_text())
    jsonl = tmp_path / "val.jsonl"
    with jsonl.open("w") as f:
        query_idx = 0
        for passage_idx, row in enumerate(release["data"]):
            qas = []
            for qa in row["qas"]:
                qas.append({"query": qa["query"], "answers": qa["answers"], "idx": query_idx})
                query_idx += 1
            f.write(json.dumps({"source": row["source"], "passage": row["passage"], "qas": qas,
                                "idx": passage_idx}) + "\n")
    builder = tfds.builder("super_glue/record", data_dir=tfds_dir)
    theirs = [e for _, e in builder._generate_examples(data_file=str(jsonl), split="validation")]
    task = tasks.get("super_glue_record")
    assert list(task.local_examples(str(jsonl))) == theirs
    assert list(task.local_examples(str(task_data / "superglue_record/record.json"))) == theirs


def test_squad_reader_equals_tfds_builder(task_data):
    from tensorflow_datasets.question_answering import qa_utils
    path = str(task_data / "squad/squad_v1_sample.json")
    theirs = [e for _, e in qa_utils.generate_squadlike_examples(path)]
    assert theirs and list(tasks.get("squad").local_examples(path)) == theirs


def test_story_parsing_equals_tfds_builder(task_data):
    from tensorflow_datasets.summarization import cnn_dailymail as tfds_cnn
    stories = sorted((task_data / "cnn_dailymail/cnn_stories").glob("*.story"))
    assert stories
    for story in stories:
        expected = tfds_cnn._get_art_abs(str(story))
        assert sources.story_article_and_highlights(story.read_text(encoding="utf-8")) == expected


def test_stories_of_a_split_are_those_its_url_list_names(task_data):
    cnn = tasks.get("cnn_dailymail")
    stories = str(task_data / "cnn_dailymail/cnn_stories")
    every = list(cnn.local_examples(stories))
    test_split = list(cnn.local_examples(stories, str(task_data / "cnn_dailymail/url_lists_abisee/all_test.txt")))
    assert len(every) == 20 and 0 < len(test_split) < len(every)
    test_urls = (task_data / "cnn_dailymail/url_lists_abisee/all_test.txt").read_text().split()
    import hashlib
    hashes = {hashlib.sha1(u.encode()).hexdigest() for u in test_urls}
    assert {e["id"] for e in test_split} == {e["id"] for e in every} & hashes
    assert set(every[0]) == {"article", "highlights", "publisher", "id"}


def test_dpr_reader_equals_tfds_builder(tmp_path, tfds_dir):
    import tensorflow_datasets as tfds
    path = tmp_path / "test.c.txt"
    path.write_text("Bob asked Tom if he can lend some money.\nhe\nBob,Tom\nTom\n\n"
                    "The bee landed on the flower because it had pollen.\nit\nThe bee, the flower\nthe flower\n\n")
    builder = tfds.builder("definite_pronoun_resolution", data_dir=tfds_dir)
    theirs = [e for _, e in builder._generate_examples(filepath=str(path))]
    assert list(tasks.get("dpr").local_examples(str(path))) == theirs


# --- the paper's text formats ---------------------------------------------------------------

def test_issue_example_mnli():
    example = {"premise": "I hate pigeons.", "hypothesis": "My feelings towards pigeons are filled with animosity.",
               "label": 0, "idx": 0}
    assert tasks.get("glue_mnli").preprocess(example) == {
        "inputs": "mnli hypothesis: My feelings towards pigeons are filled with animosity. premise: I hate pigeons.",
        "targets": "entailment"}


def test_unlabelled_examples_get_the_unknown_target(task_data):
    example = first("glue_rte", task_data / "glue_rte/test.tsv")
    assert example["label"] == -1
    assert tasks.get("glue_rte").preprocess(example)["targets"] == "<unk>"


GLUE_SAMPLES = [
    ("glue_cola", "glue_cola/in_domain_dev.tsv",
     "cola sentence: The sailors rode the breeze clear of the rocks.", "acceptable"),
    ("glue_sst2", "glue_sst2/dev.tsv", "sst2 sentence: it 's a charming and often affecting journey . ", "positive"),
    ("glue_mrpc", "glue_mrpc/dev.tsv",
     "mrpc sentence1: He said the foodservice pie business doesn't fit the company's long-term growth strategy. "
     "sentence2: \"The foodservice pie business does not fit our long-term growth strategy.", "equivalent"),
    ("glue_stsb", "glue_stsb/dev.tsv",
     "stsb sentence1: A man with a hard hat is dancing. sentence2: A man wearing a hard hat is dancing.", "5.0"),
    ("glue_qqp", "glue_qqp/dev.tsv",
     "qqp question1: Why are African-Americans so beautiful? question2: Why are hispanics so beautiful?",
     "not_duplicate"),
    # The TSV's hypothesis ends in a space, which TFDS keeps.
    ("glue_mnli", "glue_mnli/dev_matched.tsv",
     "mnli hypothesis: Everyone really likes the newest benefits  premise: The new rights are nice enough", "neutral"),
    ("glue_qnli", "glue_qnli/dev.tsv",
     "qnli question: What came into force after the new constitution was herald? sentence: As of that day, the new "
     "constitution heralding the Second Republic came into force.", "entailment"),
    ("glue_rte", "glue_rte/dev.tsv",
     "rte sentence1: Dana Reeve, the widow of the actor Christopher Reeve, has died of lung cancer at age 44, "
     "according to the Christopher Reeve Foundation. sentence2: Christopher Reeve had an accident.", "not_entailment"),
    ("glue_wnli", "glue_wnli/dev.tsv",
     "wnli sentence1: The drain is clogged with hair. It has to be cleaned. sentence2: The hair has to be cleaned.",
     "not_entailment"),
]

SUPER_GLUE_SAMPLES = [
    ("super_glue_cb", "superglue_cb/val.jsonl",
     "cb hypothesis: Valence was helping premise: Valence the void-brain, Valence the virtuous valet. Why couldn't "
     "the figger choose his own portion of titanic anatomy to shaft? Did he think he was helping?", "contradiction"),
    ("super_glue_copa", "superglue_copa/val.jsonl",
     "copa choice1: The toilet filled with water. choice2: Water flowed from the spout. premise: The man turned on "
     "the faucet. question: effect", "choice2"),
    ("super_glue_rte", "superglue_rte/superglue_rte.jsonl",
     "rte hypothesis: Weapons of Mass Destruction Found in Iraq. premise: No Weapons of Mass Destruction Found in "
     "Iraq Yet.", "not_entailment"),
    ("super_glue_wic", "superglue_wic/val.jsonl",
     "wic sentence1: An emerging professional class. sentence2: Apologizing for losing your temper, even though you "
     "were badly provoked, showed real class. word: class", "False"),
    ("super_glue_wsc", "superglue_wsc/val.jsonl",
     "wsc: Bernard , who had not told the government official that he was less than 21 when he filed for a "
     "homestead claim, did not consider that he had done anything dishonest. Still, anyone who knew that he was 19 "
     "years old could take his claim away from *him* .", "anyone"),
]


@pytest.mark.parametrize("name,path,inputs,targets", GLUE_SAMPLES + SUPER_GLUE_SAMPLES)
def test_preprocess_real_sample(task_data, name, path, inputs, targets):
    assert tasks.get(name).preprocess(first(name, task_data / path)) == {"inputs": inputs, "targets": targets}


def test_boolq_real_sample(task_data):
    pair = tasks.get("super_glue_boolq").preprocess(first("super_glue_boolq", task_data / "superglue_boolq/boolq.jsonl"))
    assert pair["inputs"].startswith("boolq passage: Persian language -- Persian (/ˈpɜːrʒən, -ʃən/), also known")
    assert pair["inputs"].endswith("the Aramaic alphabet. question: do iran and afghanistan speak the same language")
    assert pair["targets"] == "True"


def test_multirc_real_sample_and_markup(task_data):
    task = tasks.get("super_glue_multirc")
    pair = task.preprocess(first("super_glue_multirc", task_data / "superglue_multirc/train.jsonl"))
    assert pair["inputs"].startswith("multirc question: How does Jason react to the stranger who arrives with Susan? "
                                     "answer: He welcomes him with open arm paragraph: A stranger in town meets")
    assert pair["targets"] == "False"
    markup = {"paragraph": "Sent 1: A <b>bold</b> move.<br>Sent 2: Then.", "question": "Q?", "answer": "A",
              "label": 1, "idx": {"paragraph": 0, "question": 0, "answer": 0}}
    assert task.preprocess(markup) == {
        "inputs": "multirc question: Q? answer: A paragraph: Sent 1: A bold move. Sent 2: Then.", "targets": "True"}


def test_record_real_sample_and_highlights(task_data):
    task = tasks.get("super_glue_record")
    example = first("super_glue_record", task_data / "superglue_record/record.json")
    pair = task.preprocess(example)
    assert pair["inputs"].startswith(
        "record query: On October 10, acclaimed comedian and star of the summer box office hit Trainwreck Amy Schumer "
        "will make her SNL debut, followed by @placeholder a week later. entities: Amy Schumer, James, Jimmy Mack, ")
    # "...McNair.\n@highlight\nMorgan, 46, ..." : a highlight after a full stop joins with a space.
    assert "James 'Jimmy Mack' McNair. Morgan, 46, will host third episode of season 41 of SNL airing October 17. " \
           "He tweeted" in pair["inputs"]
    assert [p["targets"] for p in task.training_pairs(example)] == ["Morgan", "Tracy Morgan"]
    assert pair["targets"] == "Morgan"
    # T5's docstring example: one pair per answer, highlights without punctuation get a period.
    bird = {"passage": "This is the passage.\n@highlight\nA highlight\n@highlight\nAnother", "query": "A @placeholder is a bird.",
            "entities": ["penguin", "potato", "pigeon"], "answers": ["penguin", "pigeon"],
            "idx": {"passage": 0, "query": 0}}
    assert task.training_pairs(bird) == [
        {"inputs": "record query: A @placeholder is a bird. entities: penguin, potato, pigeon passage: This is the "
                   "passage. A highlight. Another", "targets": target} for target in ("penguin", "pigeon")]


def test_wsc_trains_on_right_referents_only(task_data):
    task = tasks.get("super_glue_wsc")
    examples = list(task.local_examples(str(task_data / "superglue_wsc/train.jsonl")))
    pairs = [task.training_pairs(e) for e in examples]
    assert all(len(p) == (1 if e["label"] == 1 else 0) for p, e in zip(pairs, examples))
    assert pairs[0] == [{"inputs": "wsc: The actress used to be named Terpsichore , but she changed it to Tina a few "
                                   "years ago, because she figured *it* was easier to pronounce.", "targets": "Tina"}]


def test_wsc_marks_the_pronoun_where_superglue_index_is_off():
    # SuperGLUE's index points at "use"; T5 special-cases this text to mark "it".
    example = {"text": "Some day they might want to use it , but really for now.", "span1_text": "the pebble",
               "span1_index": 0, "span2_text": "it", "span2_index": 6, "label": 1, "idx": 0}
    assert tasks.get("super_glue_wsc").preprocess(example)["inputs"] == \
        "wsc: Some day they might want to use *it* , but really for now."
    # ... and here the pronoun carries the punctuation: "him,\"".
    example = {"text": 'John laughed. "Good for him," he said.', "span1_text": "the boy", "span1_index": 0,
               "span2_text": "him", "span2_index": 4, "label": 1, "idx": 0}
    assert tasks.get("super_glue_wsc").preprocess(example)["inputs"] == \
        'wsc: John laughed. "Good for *him* ," he said.'


def test_dpr_format():
    example = {"sentence": "Bob asked Tom if he can lend some money.", "pronoun": "he", "candidates": ["Bob", "Tom"],
               "label": 1}
    assert tasks.get("dpr").preprocess(example) == {"inputs": "wsc: Bob asked Tom if *he* can lend some money.",
                                                   "targets": "Tom"}


def test_squad_real_sample(task_data):
    pair = tasks.get("squad").preprocess(first("squad", task_data / "squad/squad_v1_sample.json"))
    assert pair["inputs"].startswith(
        "question: To whom did the Virgin Mary allegedly appear in 1858 in Lourdes France ? context: Architecturally , "
        "the school has a Catholic character . Atop the Main Building ' s gold dome is a golden statue of the Virgin "
        "Mary . ")
    assert pair["targets"] == "Saint Bernadette Soubirous"


def test_pad_punctuation_is_ascii_like_re2():
    assert pad_punctuation("U.S. café\n(x)") == "U . S . caf é ( x ) "


def test_cnn_dailymail_real_sample(task_data):
    example = first("cnn_dailymail", task_data / "cnn_dailymail/cnn_stories")
    pair = tasks.get("cnn_dailymail").preprocess(example)
    assert pair["inputs"].startswith("summarize: WASHINGTON (CNN) -- As he awaits a crucial progress report on Iraq, ")
    assert pair["targets"].startswith("President Bush to address the Veterans of Foreign Wars on Wednesday.\nBush ")


@pytest.mark.parametrize("name,files,inputs,targets", [
    ("wmt_en_de", ("wmt_en_de/newssyscomb2009.eng", "wmt_en_de/newssyscomb2009.deu"),
     "translate English to German: Right-wing populists triumph in Austria, have total of 29 percent",
     "Triumph der Rechtspopulisten in Österreich, insgesamt kommen sie auf 29 Prozent"),
    ("wmt_en_fr", ("wmt_en_fr/newssyscomb2009.eng", "wmt_en_fr/newssyscomb2009.fra"),
     "translate English to French: Right-wing populists triumph in Austria, have total of 29 percent",
     "Triomphe des populistes de droite en Autriche, ils ont 29 pour cent au total"),
    ("wmt_en_ro", ("wmt_en_ro/sample.json",),
     "translate English to Romanian: Membership of Parliament: see Minutes",
     "Componenţa Parlamentului: a se vedea procesul-verbal"),
])
def test_wmt_real_sample(task_data, name, files, inputs, targets):
    task = tasks.get(name)
    examples = list(task.local_examples(*(str(task_data / f) for f in files)))
    assert task.preprocess(examples[0]) == {"inputs": inputs, "targets": targets}
    assert len(examples) == (502 if len(files) == 2 else len((task_data / files[0]).read_text().splitlines()))


def test_parallel_files_of_different_lengths_are_an_error(tmp_path):
    (tmp_path / "a.en").write_text("one\ntwo\n")
    (tmp_path / "a.de").write_text("eins\n")
    with pytest.raises(ValueError, match="2 lines"):
        list(tasks.get("wmt_en_de").local_examples(str(tmp_path / "a.en"), str(tmp_path / "a.de")))


@pytest.mark.parametrize("score,target", [(5.0, "5.0"), (0.0, "0.0"), (4.75, "4.8"), (1.8, "1.8"),
                                          (0.5, "0.4"), (0.7, "0.8"), (3.9, "4.0"), (3.7, "3.6"), (2.1, "2.0")])
def test_stsb_targets_round_to_nearest_fifth_half_to_even(score, target):
    assert stsb_target(score) == target


# --- postprocess and score -------------------------------------------------------------------

def test_invalid_labels_score_as_wrong():
    mnli = tasks.get("glue_mnli")
    assert mnli.postprocess("maybe") == -1
    scores = mnli.score(["entailment", "neutral", "contradiction"], ["entailment", "maybe", "neutral"])
    assert scores == {"accuracy": pytest.approx(100 / 3)}
    # MRPC: an invalid prediction is flipped to the wrong class for F1. targets 1,1,0,0;
    # predictions 1,(invalid -> 0),0,1: TP 1, FP 1, FN 1 -> F1 0.5; accuracy 2/4.
    mrpc = tasks.get("glue_mrpc").score(["equivalent", "equivalent", "not_equivalent", "not_equivalent"],
                                        ["equivalent", "yes", "not_equivalent", "equivalent"])
    assert mrpc == {"f1": pytest.approx(50.0), "accuracy": pytest.approx(50.0)}


def test_cola_scores_matthews_correlation():
    # targets 1,1,0,0; predictions 1,0,0,0: (TP*TN - FP*FN) / sqrt(...) = 2 / sqrt(1*2*2*3)
    scores = tasks.get("glue_cola").score(["acceptable", "acceptable", "unacceptable", "unacceptable"],
                                          ["acceptable", "unacceptable", "unacceptable", "unacceptable"])
    assert scores == {"matthews_corrcoef": pytest.approx(100 * 2 / 12 ** 0.5)}


def test_stsb_scores_an_unparsable_prediction_as_minus_one():
    # targets 1,2,3 vs predictions 1,2,-1: Pearson -6/sqrt(84); Spearman 1 - 6*6/(3*8) = -0.5.
    scores = tasks.get("glue_stsb").score(["1.0", "2.0", "3.0"], ["1.0", "2.0", "banana"])
    assert scores == {"pearson_corrcoef": pytest.approx(-600 / 84 ** 0.5), "spearman_corrcoef": pytest.approx(-50.0)}


def test_cb_scores_macro_f1_and_accuracy():
    # class F1: entailment 2/3, contradiction 2/3, neutral 0 -> 4/9; accuracy 2/4.
    scores = tasks.get("super_glue_cb").score(["entailment", "contradiction", "neutral", "entailment"],
                                              ["entailment", "contradiction", "contradiction", "nonsense"])
    assert scores == {"mean_3class_f1": pytest.approx(400 / 9), "accuracy": pytest.approx(50.0)}


def test_multirc_scores_per_question_from_references():
    task = tasks.get("super_glue_multirc")

    def option(question, label):
        return {"paragraph": "P", "question": "Q", "answer": "A", "label": label,
                "idx": {"paragraph": 0, "question": question, "answer": 0}}
    examples = [option(1, 1), option(1, 0), option(2, 1), option(2, 1)]
    # question 1 all right; question 2 has an invalid prediction -> EM 50. F1 over all answers:
    # predictions 1,0,1,(invalid -> 0): TP 2, FP 0, FN 1 -> 0.8.
    scores = task.score([task.reference(e) for e in examples], ["True", "False", "True", "Maybe"])
    assert scores == {"exact_match": pytest.approx(50.0), "f1": pytest.approx(80.0)}
    with pytest.raises(ValueError, match="per question"):
        task.score(["True"], ["True"])


def test_record_and_squad_take_the_best_reference():
    record = tasks.get("super_glue_record")
    example = {"passage": "p", "query": "q", "entities": ["Morgan", "Tracy Morgan"], "answers": ["Morgan", "Tracy Morgan"],
               "idx": {"passage": 0, "query": 0}}
    assert record.score([record.reference(example)], ["tracy morgan."]) == {"em": 100.0, "f1": 100.0}
    squad = tasks.get("squad")
    example = {"question": "Who?", "context": "c", "id": "x", "title": "t",
               "answers": {"text": ["the U.S. Army", "Army"], "answer_start": [0, 9]}}
    assert squad.reference(example) == ["the U . S . Army", "Army"]
    # "U . S . Army" normalises like the first reference: exact. "army corps": F1 2*(1/2*1)/(1/2+1) vs "Army".
    assert squad.score([squad.reference(example)] * 2, ["U . S . Army", "army corps"]) == {
        "em": pytest.approx(50.0), "f1": pytest.approx(100 * (1 + 2 / 3) / 2)}


def test_wsc_scores_whether_the_prediction_names_the_candidate_exactly_when_it_is_right():
    task = tasks.get("super_glue_wsc")

    def example(candidate, label):
        return {"text": "x it y", "span1_text": candidate, "span1_index": 0, "span2_text": "it", "span2_index": 1,
                "label": label, "idx": 0}
    references = [task.reference(example("the dog", 1)), task.reference(example("the cat", 0)),
                  task.reference(example("Bob", 1)), task.reference(example("the bird", 0))]
    # right, wrong (names a wrong candidate), wrong (possessive), right (names another noun)
    assert task.score(references, ["dog", "The cat", "Bob's hat", "the worm"]) == {"accuracy": 50.0}
    assert names_referent("fuzzy bunny", "the bunny") and not names_referent("Bob", "Bob's hat")


def test_generation_tasks_score_text():
    assert tasks.get("wmt_en_de").score(["Das ist gut."], ["Das ist gut."]) == {"bleu": pytest.approx(100.0)}
    rouge = tasks.get("cnn_dailymail").score(["the cat sat"], ["the cat ran"])
    assert rouge == {"rouge1": pytest.approx(200 / 3), "rouge2": pytest.approx(50.0),
                     "rougeLsum": pytest.approx(200 / 3)}
    assert tasks.get("dpr").score(["Tom", "Bob"], ["Tom", "Tom"]) == {"accuracy": 50.0}


def test_score_needs_one_prediction_per_target():
    with pytest.raises(ValueError, match="2 targets but 1 predictions"):
        tasks.get("glue_sst2").score(["positive", "negative"], ["positive"])


def test_every_task_scores_its_own_targets_perfectly(task_data):
    """The whole text loop on real samples: preprocess, targets as predictions, postprocess, score."""
    samples = {name: path for name, path, *_ in GLUE_SAMPLES + SUPER_GLUE_SAMPLES}
    samples.update({"super_glue_boolq": "superglue_boolq/boolq.jsonl",
                    "super_glue_multirc": "superglue_multirc/train.jsonl",
                    "super_glue_record": "superglue_record/record.json", "squad": "squad/squad_v1_sample.json",
                    "cnn_dailymail": "cnn_dailymail/cnn_stories", "wmt_en_ro": "wmt_en_ro/test.json"})
    for name, path in samples.items():
        task = tasks.get(name)
        examples = list(task.local_examples(str(task_data / path)))[:40]
        if name == "super_glue_wsc":
            examples = [e for e in examples if e["label"] == 1]  # a wrong candidate is not the answer
        predictions = [task.preprocess(e)["targets"] for e in examples]
        scores = task.score([task.reference(e) for e in examples], predictions)
        assert set(scores) == set(task.metric_names), name
        perfect = {key: value for key, value in scores.items() if "corrcoef" not in key}
        if name == "glue_qqp":
            perfect.pop("f1")  # the sample has no duplicate pair: F1 is undefined (sklearn says 0)
        assert all(value == pytest.approx(100.0) for value in perfect.values()), (name, scores)


# --- mixtures ------------------------------------------------------------------------------

def test_mixing_rates_by_hand():
    sizes = {"a": 100, "b": 300, "c": 600}
    assert mixing.examples_proportional(sizes) == {"a": 0.1, "b": 0.3, "c": 0.6}
    # K = 200: 100, 200, 200
    assert mixing.examples_proportional(sizes, limit=200) == {"a": 0.2, "b": 0.4, "c": 0.4}
    # T = 2: sqrt(0.1), sqrt(0.3), sqrt(0.6) renormalized
    roots = [0.1 ** 0.5, 0.3 ** 0.5, 0.6 ** 0.5]
    expected = {name: root / sum(roots) for name, root in zip("abc", roots)}
    assert mixing.temperature_scaled(sizes, temperature=2) == pytest.approx(expected)
    assert mixing.temperature_scaled(sizes, temperature=1) == pytest.approx({"a": 0.1, "b": 0.3, "c": 0.6})
    assert mixing.equal(sizes) == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})


def test_mixture_rates_use_task_sizes_or_given_ones():
    glue = tasks.get_mixture("glue")
    rates = glue.rates("examples_proportional")
    assert rates["glue_mnli"] / rates["glue_rte"] == pytest.approx(392_702 / 2_490)
    assert sum(rates.values()) == pytest.approx(1.0)
    big = tasks.get_mixture("all").rates("temperature", temperature=1)
    # K = 2**21 caps the two big translation sets at the same rate.
    assert big["wmt_en_de"] == pytest.approx(big["wmt_en_fr"])
    sized = tasks.get_mixture("super_glue").rates("equal", sizes={"dpr": 5})
    assert len(sized) == 9 and sized["dpr"] == pytest.approx(1 / 9)
    local = glue.rates(sizes={name: 10 for name in tasks.names()})
    assert list(local.values()) == pytest.approx([1 / 8] * 8)
    with pytest.raises(ValueError):
        glue.rates("no_such_mixing")


def _t5_rate_num_examples(size: int, maximum: int, temperature: float = 1.0, scale: float = 1.0) -> float:
    """The t5 library's `rate_num_examples` (t5/data/utils.py) restated: the size times the
    scale, then limited, then raised to 1 / T."""
    return min(size * scale, maximum) ** (1.0 / temperature)


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_all_mixture_halves_both_rte_tasks_and_always_limits_sizes(temperature):
    """t5/data/mixtures.py's `all_proportional`: every supervised task by `rate_num_examples`,
    the two RTE tasks at scale 0.5 (`_dedupe`), with the size limit K. Without a limit `all` drew
    WMT En-Fr 85.9% of the time; K is now always applied, 2^21 unless given (the paper's K)."""
    mixing = "examples_proportional" if temperature == 1.0 else "temperature"
    mixture = tasks.get_mixture("all")
    weights = {task.name: _t5_rate_num_examples(task.num_train_examples, 2 ** 21, temperature,
                                                0.5 if task.name in ("glue_rte", "super_glue_rte") else 1.0)
               for task in mixture.trained_tasks}
    expected = {name: weight / sum(weights.values()) for name, weight in weights.items()}
    assert mixture.rates(mixing, temperature=temperature) == pytest.approx(expected, rel=1e-12)
    assert expected["glue_rte"] == pytest.approx(expected["super_glue_rte"])
    if temperature == 1.0:
        assert expected["glue_rte"] / expected["glue_mnli"] == pytest.approx(1_245 / 392_702)
        assert expected["wmt_en_fr"] == pytest.approx(2 ** 21 / sum(weights.values()))
        assert expected["wmt_en_fr"] < 0.45
    # The glue mixture (as the library's glue_v002_proportional) does not halve RTE.
    glue = tasks.get_mixture("glue").rates()
    assert glue["glue_rte"] / glue["glue_mnli"] == pytest.approx(2_490 / 392_702)
    with pytest.raises(ValueError, match="positive"):
        mixture.rates(limit=0)


def test_a_scale_applies_before_the_size_limit():
    """rate_num_examples multiplies by `scale`, then limits: MNLI at scale 1/2 with K = 100,000
    counts min(392,702 / 2, K) = K (not min(392,702, K) / 2), RTE its 2,490."""
    mixture = tasks.Mixture("m", (tasks.get("glue_mnli"), tasks.get("glue_rte")), scales={"glue_mnli": 0.5})
    assert mixture.rates(limit=100_000) == pytest.approx({"glue_mnli": 100_000 / 102_490,
                                                          "glue_rte": 2_490 / 102_490})


# --- CLI and tf.data -------------------------------------------------------------------------

def test_cli_lists_tasks_and_mixtures_with_sources_and_metrics():
    result = subprocess.run([sys.executable, "-m", "model.tasks"], capture_output=True, text=True, check=True)
    for name in ISSUE_TASKS:
        assert f"| {name} |" in result.stdout
    assert "| glue_mnli | train: glue/mnli:train; validation_matched: glue/mnli:validation_matched" in result.stdout
    assert "mean_3class_f1, accuracy" in result.stdout and "never trained on" in result.stdout
    assert "| all |" in result.stdout


def test_tf_dataset_of_text_pairs(task_data):
    from model.tasks import tf_data
    task = tasks.get("super_glue_record")
    examples = list(task.local_examples(str(task_data / "superglue_record/record.json")))
    training = [{k: v.decode() for k, v in pair.items()}
                for pair in tf_data.dataset(task, examples, training=True).as_numpy_iterator()]
    assert training == [pair for e in examples for pair in task.training_pairs(e)]
    assert len(training) > len(examples)
    evaluation = list(tf_data.dataset(task, examples, training=False).as_numpy_iterator())
    assert len(evaluation) == len(examples)


@pytest.mark.parametrize("name,split", [("glue_mnli", "validation_mismatched"), ("glue_stsb", "train"),
                                        ("super_glue_multirc", "validation"), ("super_glue_record", "validation"),
                                        ("squad", "validation"), ("wmt_en_fr", "validation"), ("dpr", "train")])
def test_tfds_examples_are_plain_python_that_preprocess_takes(name, split):
    """TFDS (mocked from the builders' feature specs: no data, no network) gives plain dicts."""
    import tensorflow_datasets as tfds
    task = tasks.get(name)
    with tfds.testing.mock_data(num_examples=2, policy=tfds.testing.MockPolicy.USE_CODE):
        examples = list(task.examples(split))
    assert len(examples) == 2

    def plain(value):
        if isinstance(value, dict):
            return all(isinstance(k, str) and plain(v) for k, v in value.items())
        if isinstance(value, list):
            return all(plain(v) for v in value)
        return type(value) in (str, int, float, bool)
    assert all(plain(e) for e in examples)
    pair = task.preprocess(examples[0])
    assert set(pair) == {"inputs", "targets"} and all(isinstance(v, str) for v in pair.values())
    with pytest.raises(KeyError, match="no split"):
        task.examples("no_such_split")


def test_benchmark_average_over_the_registry_tasks():
    """The paper's Table 14 baseline through the registry: GLUE 83.28 (WNLI left out)."""
    glue = {"glue_cola": {"mcc": 53.84}, "glue_sst2": {"acc": 92.68}, "glue_mrpc": {"f1": 92.07, "acc": 88.92},
            "glue_stsb": {"p": 88.02, "s": 87.94}, "glue_qqp": {"f1": 88.67, "acc": 91.56},
            "glue_mnli": {"matched": 84.24, "mismatched": 84.57}, "glue_qnli": {"acc": 90.48},
            "glue_rte": {"acc": 76.28}, "glue_wnli": {"acc": 0.0}}
    assert tasks.benchmark_average("glue", glue) == pytest.approx(83.28, abs=0.005)
    del glue["glue_rte"]
    with pytest.raises(ValueError, match="glue_rte"):
        tasks.benchmark_average("glue", glue)
    with pytest.raises(ValueError, match="super_glue_wsc"):
        tasks.benchmark_average("super_glue", {"super_glue_boolq": {"acc": 1.0}})
    with pytest.raises(KeyError):
        tasks.benchmark_average("squad", {})


def test_unlabelled_superglue_lines_get_label_minus_one(task_data, tmp_path):
    import json
    rows = [json.loads(line) for line in (task_data / "superglue_cb/val.jsonl").read_text().splitlines()[:2]]
    multirc = json.loads((task_data / "superglue_multirc/train.jsonl").read_text().splitlines()[0])
    for row in rows:
        del row["label"]
    for question in multirc["passage"]["questions"]:
        for answer in question["answers"]:
            del answer["label"]
    (tmp_path / "cb.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "multirc.jsonl").write_text(json.dumps(multirc) + "\n")
    cb = list(tasks.get("super_glue_cb").local_examples(str(tmp_path / "cb.jsonl")))
    options = list(tasks.get("super_glue_multirc").local_examples(str(tmp_path / "multirc.jsonl")))
    assert [e["label"] for e in cb] == [-1, -1] and {e["label"] for e in options} == {-1}
    assert tasks.get("super_glue_cb").preprocess(cb[0])["targets"] == "<unk>"


# --- sequence lengths ------------------------------------------------------------------------

def test_task_lengths_are_the_t5_librarys_and_a_mixture_covers_its_members():
    """t5/models/gin/sequence_lengths/: GLUE 512/84, SuperGLUE 512/62, SQuAD 512/97, CNN/DM and
    WMT 512/512 (the library's default)."""
    expected = {"glue_": (512, 84), "super_glue_": (512, 62), "dpr": (512, 62), "squad": (512, 97),
                "cnn_dailymail": (512, 512), "wmt_": (512, 512),
                # multilingual-t5's gin/sequence_lengths/ (xnli.gin, xquad.gin, ner.gin; PAWS-X
                # has none and takes XNLI's)
                "mt5_xnli": (1024, 128), "mt5_paws": (1024, 128), "mt5_ner": (1024, 1024),
                "mt5_squad": (1024, 512), "mt5_xquad": (1024, 512), "mt5_mlqa": (1024, 512),
                "mt5_tydiqa": (1024, 512)}
    for name in tasks.names():
        (lengths,) = [value for prefix, value in expected.items() if name.startswith(prefix)]
        assert (tasks.get(name).lengths.inputs, tasks.get(name).lengths.targets) == lengths, name
    assert tasks.get_mixture("glue").lengths == tasks.SequenceLengths(512, 84)
    assert tasks.get_mixture("all").lengths == tasks.SequenceLengths(512, 512)
    with pytest.raises(ValueError, match="at least one token and EOS"):
        tasks.SequenceLengths(512, 1)


# Validation samples of ../shared/data/tasks (SuperGLUE MultiRC and SQuAD: the files there).
VALIDATION_SAMPLES = {name: (path,) for name, path, *_ in GLUE_SAMPLES + SUPER_GLUE_SAMPLES}
VALIDATION_SAMPLES.update({
    "super_glue_boolq": ("superglue_boolq/boolq.jsonl",),
    "super_glue_multirc": ("superglue_multirc/train.jsonl",),
    "super_glue_record": ("superglue_record/record.json",),
    "squad": ("squad/squad_v1_sample.json",),
    "cnn_dailymail": ("cnn_dailymail/cnn_stories",), "wmt_en_ro": ("wmt_en_ro/test.json",),
    "wmt_en_de": ("wmt_en_de/newssyscomb2009.eng", "wmt_en_de/newssyscomb2009.deu"),
    "wmt_en_fr": ("wmt_en_fr/newssyscomb2009.eng", "wmt_en_fr/newssyscomb2009.fra")})


def test_no_validation_target_of_the_samples_is_cut_at_the_tasks_lengths(shared_data, task_data):
    """Every real validation target, tokenized with EOS by the tests' 1,000-piece vocabulary (which
    cuts text into more pieces than T5's 32,000), fits its task's targets length; the old single
    default of 114 tokens cut translations and summaries."""
    from tests.support.trained_vocab import trained_vocabulary
    vocabulary = trained_vocabulary(shared_data)
    # No DPR sample in the data; mT5's tasks: tests/model/test_mt5_tasks.py.
    assert set(VALIDATION_SAMPLES) == {n for n in tasks.names() if not n.startswith("mt5_")} - {"dpr"}
    longest = {}
    for name, paths in VALIDATION_SAMPLES.items():
        task = tasks.get(name)
        examples = task.local_examples(*(str(task_data / path) for path in paths))
        targets = [task.preprocess(example)["targets"] for example in examples]
        longest[name] = max(len(vocabulary.encode(target)) + 1 for target in targets)
        assert longest[name] <= task.lengths.targets, (name, longest[name])
    generation = ("cnn_dailymail", "wmt_en_de", "wmt_en_fr", "wmt_en_ro")
    assert all(longest[name] > 114 for name in generation)
