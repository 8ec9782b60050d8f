"""BERT's fine-tuning inputs and outputs: sentence (pair) classification from the task layer's
discriminative views (model/tasks/discriminative.py), and SQuAD v1.1 / v2.0 span question
answering from SQuAD's JSON (v1.1: the task layer's reader, model/tasks/sources.py; v2.0:
`read_squad_v2`, which keeps the impossible questions that reader merges away).

Classification (BERT's run_classifier): `[CLS] A [SEP] B [SEP]`, token types 0 then 1, the pair
trimmed from the end of the longer segment; label = the view's class index.

SQuAD (BERT's run_squad, one window per question): `[CLS] question [SEP] context [SEP]`, the
question cut to `max_query_pieces`; the context is split on white space into words (each
character's word is kept, as run_squad's `char_to_word_offset`), each word tokenised into its
pieces; the answer's first and last words give the start (its first piece) and end (its last
piece). No answer (SQuAD 2.0's impossible questions) is start = end = 0, the [CLS] piece.
Where we differ: one window per question, the context cut at the sequence length, not BERT's
overlapping windows (doc_stride 128); an answer cut off is then "no answer" (v2) or the question
is left out of training (v1). A predicted span is read back as its context words joined by
spaces (the SQuAD metric normalises punctuation and spaces away; BERT's `get_final_text` aligns
the characters more finely).
"""
from __future__ import annotations

import dataclasses
import json
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import gin
import numpy as np
import tensorflow as tf

from model import structure
from model.bert_inputs import CLS_ID, SEP_ID, padded, trimmed_segments
from model.tasks import discriminative
from model.tasks.sources import parse_task_files
from model.wordpiece import WordPieceVocabulary


def pair_input(segments: Sequence[Sequence[int]], length: int) -> Tuple[List[int], List[int]]:
    """`[CLS] A [SEP] (B [SEP])` trimmed to `length` (bert_inputs.trimmed_segments: BERT's
    _truncate_seq_pair), and its token types."""
    tokens, types = [CLS_ID], [0]
    for kind, segment in enumerate(trimmed_segments(segments, length - 1 - len(segments))):
        tokens += list(segment) + [SEP_ID]
        types += [kind] * (len(segment) + 1)
    return tokens, types


def classification_features(examples: Iterable[discriminative.Example],
                            vocabulary: WordPieceVocabulary, length: int
                            ) -> Dict[str, np.ndarray]:
    """[n, length] bert_input_tokens / bert_token_types and [n, 1] labels of the labelled
    examples (test-release examples, label -1, are left out)."""
    examples = [example for example in examples if example.label != -1]
    if any(example.choices for example in examples):
        raise ValueError("multiple-choice examples need a choice head; BERT's heads here are "
                         "classification and span")
    rows = {"bert_input_tokens": [], "bert_token_types": [], "labels": []}
    for example in examples:
        tokens, types = pair_input(vocabulary.encode_batch(list(example.segments)), length)
        rows["bert_input_tokens"].append(padded(tokens, length))
        rows["bert_token_types"].append(padded(types, length))
        rows["labels"].append(np.array([int(example.label)], np.int32))
    return {key: np.stack(values) for key, values in rows.items()}


def task_classification_features(task: str, split: str, vocabulary: WordPieceVocabulary,
                                  length: int, task_files: Optional[Sequence[str]] = None
                                  ) -> Dict[str, np.ndarray]:
    """A task's split through its discriminative view (classification tasks)."""
    view = discriminative.view(task)
    if view.kind != "classification":
        raise ValueError(f"{task} is a {view.kind} task; BERT's classification head takes "
                         "classification tasks")
    return classification_features(discriminative.examples(task, split, task_files),
                                   vocabulary, length)


@dataclasses.dataclass(frozen=True)
class SquadInput:
    """One SQuAD question as BERT reads it, and what is needed to read an answer back."""

    question_id: str
    tokens: List[int]
    types: List[int]
    # The context word of each piece of `tokens` (-1 for [CLS], the question and [SEP]).
    piece_words: List[int]
    words: List[str]
    start: int  # piece positions of the answer; 0, 0: no answer
    end: int
    answers: List[str]  # the reference texts ([] for an impossible question)

    def answer_text(self, start: int, end: int) -> str:
        """The context words of pieces start..end ("" for no answer or a span outside it)."""
        if start == 0 or end < start or end >= len(self.piece_words):
            return ""
        first, last = self.piece_words[start], self.piece_words[end]
        if first < 0 or last < 0:
            return ""
        return " ".join(self.words[first:last + 1])


def _context_words(context: str) -> Tuple[List[str], List[int]]:
    """White-space words and the word of each character (run_squad's char_to_word_offset)."""
    words: List[str] = []
    char_word: List[int] = []
    after_space = True
    for char in context:
        if char.isspace():
            after_space = True
        else:
            if after_space:
                words.append(char)
            else:
                words[-1] += char
            after_space = False
        char_word.append(len(words) - 1)
    return words, char_word


def read_squad_v2(path: str) -> Iterable[dict]:
    """Every question of a SQuAD JSON file (v2.0 or v1.1) in the task reader's form, impossible
    ones with no answers. The task layer's reader (sources.read_squad_json) is v1.1's: it
    merges questions by id, which v2.0 files repeat for an impossible variant of a question."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)["data"]
    for article in data:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                answers = [] if qa.get("is_impossible") else qa["answers"]
                yield {"title": article.get("title", ""), "context": paragraph["context"],
                       "question": qa["question"], "id": qa["id"],
                       "answers": {"answer_start": [a["answer_start"] for a in answers],
                                   "text": [a["text"] for a in answers]}}


def squad_input(raw: dict, vocabulary: WordPieceVocabulary, length: int,
                max_query_pieces: int = 64) -> SquadInput:
    """A question of the task layer's SQuAD reader (v1.1 or v2.0 JSON) as model input."""
    words, char_word = _context_words(raw["context"])
    question = vocabulary.encode(raw["question"])[:max_query_pieces]
    word_pieces = vocabulary.encode_batch(words)
    tokens = [CLS_ID] + question + [SEP_ID]
    piece_words = [-1] * len(tokens)
    word_first: List[int] = []
    word_last: List[int] = []
    for word, pieces in enumerate(word_pieces):
        word_first.append(len(tokens))
        for piece in pieces:
            if len(tokens) < length - 1:
                tokens.append(piece)
                piece_words.append(word)
        word_last.append(len(tokens) - 1)
    tokens.append(SEP_ID)
    piece_words.append(-1)
    types = [0] * (len(question) + 2) + [1] * (len(tokens) - len(question) - 2)
    answers = list(raw["answers"]["text"])
    start = end = 0
    if answers:
        first_char = raw["answers"]["answer_start"][0]
        last_char = first_char + len(answers[0]) - 1
        first_word, last_word = char_word[first_char], char_word[last_char]
        # Every piece of the answer's last word kept (the context is cut at the length), and
        # at least one (a word without pieces has no position).
        kept = word_last[last_word] - word_first[last_word] + 1
        if 0 < kept == len(word_pieces[last_word]):
            start, end = word_first[first_word], word_last[last_word]
    return SquadInput(raw["id"], tokens, types, piece_words, words, start, end, answers)


def squad_features(questions: Sequence[SquadInput], length: int) -> Dict[str, np.ndarray]:
    """[n, length] bert_input_tokens / bert_token_types and [n, 1] start/end positions."""
    return {
        "bert_input_tokens": np.stack([padded(q.tokens, length) for q in questions]),
        "bert_token_types": np.stack([padded(q.types, length) for q in questions]),
        "start_positions": np.array([[q.start] for q in questions], np.int32),
        "end_positions": np.array([[q.end] for q in questions], np.int32),
    }


def features_dataset(features: Dict[str, np.ndarray]) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(features)


def head_outputs(run, features: Dict[str, np.ndarray]) -> np.ndarray:
    """[n, decode_length] outputs of the newest checkpoint of `run` (a BERT head) for the
    [n, length] `bert_input_tokens` of `features`, with SegaBERT's structure indices where
    `features` has them (PREDICT reads them as training did): the class first
    (classification), or start and end (span)."""
    tokens = features["bert_input_tokens"]
    inputs = {"inputs": tokens, **{key: features[key] for key in structure.INDEX_KEYS
                                   if key in features}}
    batch_size = min(len(tokens), run.train_config.eval_batch_size)
    # Whole batches: zero rows after the last (their outputs are dropped).
    filled = {key: np.concatenate([value, np.zeros([-len(tokens) % batch_size, value.shape[1]],
                                                   np.int32)])
              for key, value in inputs.items()}
    predictions = run.estimator(batch_size).predict(
        lambda params: tf.data.Dataset.from_tensor_slices(filled).batch(
            params["batch_size"], drop_remainder=True),
        yield_single_examples=True)
    return np.stack([p["outputs"] for p in predictions])[:len(tokens)]


# ------------------------------------------------------------------------------------------------
# The command line's finetune / eval / decode with --task for BERT's heads.

@dataclasses.dataclass(frozen=True)
class HeadTask:
    """One task for a BERT head: its features and how predictions are scored."""

    name: str
    head: str
    vocabulary: WordPieceVocabulary
    length: int
    files: Dict[Tuple[str, str], Tuple[str, ...]]
    # SegaBERT: each segment a paragraph of its sentences, with the three structure indices
    # (model/structure.py); classification only.
    structured: bool = False

    def questions(self, split: str) -> List[SquadInput]:
        paths = self.files.get((self.name, split))
        if not paths:
            raise ValueError(f"the span head reads SQuAD JSON files: give --task_files "
                             f"{self.name}:{split}=PATH")
        return [squad_input(raw, self.vocabulary, self.length)
                for path in paths for raw in read_squad_v2(path)]

    def features(self, split: str, training: bool) -> Dict[str, np.ndarray]:
        if self.structured:
            return self.structured_features(split)
        if self.head == "span":
            questions = self.questions(split)
            if training:  # v1.1: a question whose answer was cut off teaches nothing true
                questions = [q for q in questions if q.start or not q.answers
                             or self.name.endswith("v2")]
            return squad_features(questions, self.length)
        return task_classification_features(self.name, split, self.vocabulary, self.length,
                                            self.files.get((self.name, split)))

    def structured_features(self, split: str) -> Dict[str, np.ndarray]:
        if self.head != "classification" or discriminative.view(self.name).kind != "classification":
            raise ValueError(f"SegaBERT fine-tunes the classification head on classification "
                             f"tasks here, not the {self.head} head on {self.name}")
        return structure.classification_features(
            discriminative.examples(self.name, split, self.files.get((self.name, split))),
            self.vocabulary.encode_batch, structure.StructureConfig(CLS_ID, SEP_ID, self.length))

    def scores(self, run, split: str) -> Dict[str, float]:
        from model.tasks import metrics

        features = self.features(split, training=False)
        outputs = head_outputs(run, features)
        if self.head == "span":
            questions = self.questions(split)
            predictions = [q.answer_text(int(o[0]), int(o[1])) for q, o in zip(questions, outputs)]
            # An impossible question's one reference is "" (SQuAD 2.0's no-answer).
            return metrics.squad([q.answers or [""] for q in questions], predictions)
        return {"accuracy": 100 * float(np.mean(outputs[:, 0] == features["labels"][:, 0]))}


def checked_task_files(task: str, specs: Sequence[str]) -> Dict[Tuple[str, str], Tuple[str, ...]]:
    """The command line's --task_files, each naming this run's task (a typo would otherwise
    leave the task read from TFDS)."""
    files = parse_task_files(specs)
    others = sorted({name for name, _ in files if name != task})
    if others:
        raise ValueError(f"--task_files names {others}; this run fine-tunes {task!r} alone")
    return files


def run_mode(mode: str, run, args) -> Dict[str, dict]:
    """finetune: train the head on the task's train split for TrainConfig.train_steps (from the
    warm-start checkpoint's step), then score every validation split (GLUE MNLI has two); eval
    / decode: score the newest checkpoint. Returns {"task/split": {"step", "scores"}}."""
    from model import train
    from model.families.bert import BertConfig
    from model.gpt1_finetune import validation_splits

    head = BertConfig().head
    if head not in ("classification", "span"):
        raise ValueError(f"--task needs a BERT fine-tuning head (BertConfig.head "
                         f"'classification' or 'span'), not {head!r}")
    if args.mixture:
        raise ValueError("BERT's heads fine-tune on one --task at a time")
    files = checked_task_files(args.task, args.task_files)
    # The task's local validation files, else its registered validation splits.
    splits = validation_splits(args.task, files)
    if not splits:
        raise ValueError(f"{args.task}: no validation split to score; give --task_files "
                         f"{args.task}:validation=PATH")
    task = HeadTask(args.task, head, run.vocabulary, run.data_config.inputs_length, files,
                    structured=run.model_config.architecture == "segabert")
    if head == "classification":
        # The head's size is the task's (bound in gin, so the operative config records it).
        gin.bind_parameter("BertConfig.num_classes", discriminative.view(args.task).num_classes)
    if mode == "finetune":
        # The schedule counts from the warm-start checkpoint's step over this run's steps, so a
        # user sets only TrainConfig.train_steps (as GPT-1's fine-tuning does).
        gin.bind_parameter("lr.bert_linear.start_step", train.first_step(run.train_config))
        gin.bind_parameter("lr.bert_linear.total_steps", run.train_config.train_steps)
        features = task.features("train", training=True)
        train.train(run, lambda: features_dataset(features).shuffle(
            len(features["bert_input_tokens"]), seed=run.data_config.seed),
            run.vocabulary.vocab_size)
    step = train.checkpoint_step(run.model_dir)
    if not step:
        raise FileNotFoundError(f"no checkpoint to score in {run.model_dir}")
    return {f"{task.name}/{split}": {"step": step, "scores": task.scores(run, split)}
            for split in splits}
