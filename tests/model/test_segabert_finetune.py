"""SegaBERT's fine-tuning inputs for the paper's evaluations beyond GLUE: SQuAD (BERT's span head)
and RACE (BERT's multiple-choice head), indexed as the authors' fine-tuning code (rsvp-ai/
segatron_aaai, transformers/transformers/data/processors/squad.py and
transformers/examples/utils_multiple_choice.py), and both heads through the trainer."""
import json

import numpy as np
import pytest
import tensorflow as tf

from model.families.bert import finetune as bert_tasks
from model.families.bert.wordpiece import LEARNED_IDS
from model.families.segabert import finetune as segabert_finetune, structure

CLS_ID, SEP_ID = LEARNED_IDS.cls, LEARNED_IDS.sep
from model import families
from model.tasks import discriminative, evaluation
from model.trainer import runs
from text.splitters import load_splitter

SQUAD = "tasks/squad/squad_v1_sample.json"
RACE = "tasks/race/RACE/dev"


@pytest.fixture(scope="module")
def vocabulary(shared_data, tmp_path_factory):
    """A small WordPiece vocabulary learned from SQuAD contexts and RACE articles."""
    from model.families.bert import wordpiece
    texts = [raw["context"] + " " + raw["question"]
             for raw in bert_tasks.read_squad_v2(str(shared_data / SQUAD))]
    texts += [raw["article"] + " " + raw["question"] + " " + " ".join(raw["options"])
              for raw in discriminative.read_race(str(shared_data / RACE))]
    path = tmp_path_factory.mktemp("wordpiece") / "vocab.txt"
    return wordpiece.train_vocabulary(texts, str(path), wordpiece.WordPieceSettings(size=1000))


def authors_sentences(text, split):
    """Sentences as lists of words, as the authors' sentence_split gives them to squad.py."""
    return [sentence.split() for sentence in split(text)]


def authors_squad_indices(question, vocabulary, length, doc_stride):
    """The authors' squad_convert_example_to_features (input_type para_sent_token), restated:
    the context's sub-tokens get paragraph 1, the sentence of their word (words counted off
    sentence_split(' '.join(doc_tokens))) and a token index that restarts with each sentence;
    the question paragraph 0, sentence 0, tokens 0, 1, ...; each window is the document's
    arrays from its start (the overflowing tokens keep their indices), framed as
    build_pos_with_special_tokens: [CLS] the question's first, each [SEP] its segment's last
    with the token index after it."""
    split = load_splitter("ours")
    sentence_lengths = [len(words) for words in authors_sentences(" ".join(question.words), split)]
    sentence_index, word_limit, token_index = 0, sentence_lengths[0], 0
    doc = []  # (token, sentence) of every context sub-token
    for word, pieces in enumerate(vocabulary.encode_batch(question.words)):
        for _ in pieces:
            if word >= word_limit:
                sentence_index += 1
                word_limit += sentence_lengths[sentence_index]
                token_index = 0
            doc.append((token_index, sentence_index))
            token_index += 1
    query = question.windows[0].types.count(0) - 2
    spans = bert_tasks.doc_spans(len(doc), length - query - 3, doc_stride)
    windows = []
    for start, size in spans:
        tokens, sentences = zip(*doc[start:start + size])
        para = [0] + [0] * query + [0] + [1] * size + [1]
        sent = [0] + [0] * query + [0] + list(sentences) + [sentences[-1]]
        token = [0] + list(range(query)) + [query] + list(tokens) + [tokens[-1] + 1]
        windows.append([token, sent, para])
    return windows


def test_squad_windows_are_indexed_as_the_authors_squad_processor(shared_data, vocabulary):
    """Every window of the real SQuAD v1.1 sample's questions, in windows of 96 pieces 24 apart
    (most start inside a sentence, some inside a word), has the authors' indices."""
    length, stride = 96, 24
    config = structure.StructureConfig(CLS_ID, SEP_ID, length)
    questions = [bert_tasks.squad_question(raw, vocabulary, length, bert_tasks.SquadConfig(stride))
                 for raw in bert_tasks.read_squad_v2(str(shared_data / SQUAD))]
    indices = segabert_finetune.squad_indices(questions, config)
    windows = [window for question in questions for window in question.windows]
    assert len(windows) > 2 * len(questions)
    expected = [w for q in questions for w in authors_squad_indices(q, vocabulary, length, stride)]
    mid_sentence = 0
    for row, (window, want) in enumerate(zip(windows, expected)):
        n = len(window.tokens)
        got = [indices[key][row, :n].tolist() for key in structure.INDEX_KEYS]
        assert got == want, row
        assert not any(indices[key][row, n:].any() for key in structure.INDEX_KEYS)
        query = window.types.count(0) - 2
        mid_sentence += want[0][query + 2] > 0
    assert mid_sentence > len(windows) // 3


def authors_race_indices(article, second, length, vocabulary, split):
    """The authors' RACE input for one option (utils_multiple_choice.py's
    convert_examples_to_features), restated: the article's lines are paragraphs of sentences,
    each sentence's tokens indexed from 0; text_b (question and option) is split into sentences,
    all in the paragraph after the article's last; the pair cut from the end of the longer
    (longest_first) and framed by build_pos_with_special_tokens."""
    def segment(paragraphs, first_paragraph):
        tokens, para, sent, token = [], [], [], []
        for number, paragraph in enumerate(paragraphs):
            for index, text in enumerate(split(paragraph)):
                ids = vocabulary.encode(text)
                tokens += ids
                para += [first_paragraph + number] * len(ids)
                sent += [index] * len(ids)
                token += list(range(len(ids)))
        return [tokens, para, sent, token]
    # Lines without text are left out (RACE's articles have no blank lines).
    a = segment([line for line in article.split("\n") if line.strip()], 0)
    b = segment([second], a[1][-1] + 1)
    while len(a[0]) + len(b[0]) > length - 3:
        for field in (a if len(a[0]) > len(b[0]) else b):
            field.pop()
    tokens = [CLS_ID] + a[0] + [SEP_ID] + b[0] + [SEP_ID]
    para = [a[1][0]] + a[1] + [a[1][-1]] + b[1] + [b[1][-1]]
    sent = [a[2][0]] + a[2] + [a[2][-1]] + b[2] + [b[2][-1]]
    token = [a[3][0]] + a[3] + [a[3][-1] + 1] + b[3] + [b[3][-1] + 1]
    return tokens, [token, sent, para]


def test_race_choices_are_indexed_as_the_authors_multiple_choice_processor(shared_data,
                                                                         vocabulary):
    """Every option of the real RACE dev sample's questions (at 160 pieces the article is cut;
    11 of the 17 questions are cloze questions, their blank filled by the option): tokens and
    indices as the authors'; B (question and option) starts the paragraph after the article's
    last, which has several paragraphs of several sentences."""
    length = 160
    config = structure.StructureConfig(CLS_ID, SEP_ID, length)
    examples = list(discriminative.examples("race", "validation", [str(shared_data / RACE)]))
    features = segabert_finetune.head_features(examples, discriminative.MULTIPLE_CHOICE,
                                       vocabulary.encode_batch, config)
    assert features["bert_input_tokens"].shape == (len(examples), 4 * length)
    split = load_splitter("ours")
    for row, example in enumerate(examples):
        article, question = example.segments
        for choice, option in enumerate(example.choices):
            # RaceProcessor's text_b: a cloze question's blank filled, else question + option.
            second = (question.replace("_", option) if "_" in question
                      else question + " " + option)
            tokens, want = authors_race_indices(article, second, length, vocabulary, split)
            part = slice(choice * length, choice * length + len(tokens))
            assert features["bert_input_tokens"][row, part].tolist() == tokens
            got = [features[key][row, part].tolist() for key in structure.INDEX_KEYS]
            assert got == want, (row, choice)
    assert features["paragraph_index"].max() >= 3 and features["sentence_index"].max() >= 3
    assert features["labels"][:, 0].tolist() == [example.label for example in examples]


def head_run(model_dir, vocabulary, head, length, batch_sequences, *extra):
    import gin
    gin.clear_config()
    runs.parse_gin(["finetune.gin", "segabert/tiny.gin"], [
        f"DataConfig.vocabulary = '{vocabulary.path}'", f"BertConfig.head = '{head}'",
        f"DataConfig.inputs_length = {length}", "ModelConfig.dropout_rate = 0.0",
        f"TrainConfig.tokens_per_batch = {batch_sequences * length}", "TrainConfig.eval_batch_size = 4",
        "TrainConfig.intra_op_threads = 1", "TrainConfig.inter_op_threads = 1",
        "TrainConfig.save_checkpoints_steps = 1000", *extra])
    return families.configured_run(str(model_dir))


@pytest.mark.parametrize("task, head", [("squad", "span"), ("race", "multiple_choice")])
def test_segabert_heads_train_and_score_with_their_indices(task, head, shared_data, vocabulary,
                                                           tmp_path, clean_gin, monkeypatch):
    """The span head on SQuAD windows and the multiple-choice head on RACE options, through
    segabert's StructuredHeadTask as `--task` runs them: two training steps, then scoring, whose PREDICT
    embeds the indices of the task's features (per choice for RACE), not ones derived from the
    pieces."""
    from model.families.segabert.model import SegaBert
    length = 96 if head == "span" else 48
    path = shared_data / (SQUAD if head == "span" else RACE)
    files = {(task, split): (str(path),) for split in ("train", "validation")}
    extra = ["BertConfig.num_classes = 4"] if head == "multiple_choice" else []
    # A multiple-choice row is its 4 choices' sequences.
    row_length = length if head == "span" else 4 * length
    run = head_run(tmp_path, vocabulary, head, length, 4 * row_length // length, *extra)
    head_task = segabert_finetune.StructuredHeadTask(task, head, vocabulary, length, files)
    features = head_task.features("train")
    assert all(features[key].shape == features["bert_input_tokens"].shape
               for key in structure.INDEX_KEYS)
    assert features["sentence_index"].any() and features["paragraph_index"].any()
    runs.train(run, lambda: bert_tasks.features_dataset(features), vocabulary.vocab_size, 2)
    given = []
    original = SegaBert.position_embedding

    def recording(family, batch):
        given.append(all(key in batch for key in structure.INDEX_KEYS))
        return original(family, batch)
    monkeypatch.setattr(SegaBert, "position_embedding", recording)
    eval_set, answers = head_task.eval_split(run, "validation")
    scored = evaluation.answered({eval_set.name: answers})(tf.train.latest_checkpoint(str(tmp_path)),
                                                           eval_set)
    assert given == [True]
    assert set(scored.scores) == ({"em", "f1"} if head == "span" else {"accuracy"})
