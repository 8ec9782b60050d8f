"""BERT's fine-tuning inputs and outputs: sentence (pair) classification, regression and
multiple choice from the task layer's discriminative views (model/tasks/discriminative.py), and
SQuAD v1.1 / v2.0 span question answering from SQuAD's JSON (v1.1: the task layer's reader,
model/tasks/sources.py; v2.0: `read_squad_v2`, which keeps the impossible questions that reader
merges away).

Classification (BERT's run_classifier): `[CLS] A [SEP] B [SEP]`, token types 0 then 1, the pair
trimmed from the end of the longer segment; label = the view's class index. Regression (the
paper's STS-B): the same input, the label the view's float score, scored by the task's metrics
(Pearson and Spearman). Multiple choice (the paper's SWAG; COPA, Story Cloze, RACE): one input
`[CLS] context [SEP] choice [SEP]` per choice (`choice_segments`), the label the right choice.
The head's kind and size are the view's: `task_plan` derives the run's BertConfig (head,
num_classes) from it, recorded with the run's checkpoints.

SQuAD (BERT's run_squad.py, `SquadConfig`): the context is split on white space into words
(each character's word kept, as run_squad's `char_to_word_offset`), each word tokenised into its
pieces; a question (cut to max_query_length 64 pieces) is read in windows
`[CLS] question [SEP] context pieces [SEP]` of the sequence length (384 in
bert/finetune_squad.gin), each starting doc_stride (128) pieces after the previous one
(`convert_examples_to_features`). A window's label is the answer's start (its first word's first
piece) and end (its last word's last piece) when the answer lies in it, else start = end = 0,
the [CLS] piece (no answer in this window; also every window of a SQuAD 2.0 impossible
question). The span head gives each window's start and end logits; the answer is the best
start + end over all the question's windows (`best_answer`, run_squad's `write_predictions`),
"" only for SQuAD 2.0 (task squad_v2), by the null-score rule.
Where we differ: a predicted span is read back as its context words joined by spaces (the
SQuAD metric normalises punctuation and spaces away; BERT's `get_final_text` aligns the
characters more finely), and the answer's pieces are its whole words (no
`_improve_answer_span`), nor is a training question whose answer text is not found in its words
left out.
"""
from __future__ import annotations

import dataclasses
import json
from typing import Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple, Type, Union

import gin
import numpy as np
import tensorflow as tf

from model import tasks
from model.families.bert.config import bert_part
from model.families.bert.inputs import padded, trimmed_segments
from model.families.bert.wordpiece import SpecialIds, WordPieceVocabulary
from model.tasks import Task, discriminative, evaluation
from model.tasks.selection import TaskRequest, validation_splits
from model.tasks.sources import TaskFiles
from model.tasks.task_runs import TaskPlan, Training
from model.trainer import runs


def pair_input(segments: Sequence[Sequence[int]], length: int, special: SpecialIds
               ) -> Tuple[List[int], List[int]]:
    """`[CLS] A [SEP] (B [SEP])` trimmed to `length` (bert_inputs.trimmed_segments: BERT's
    _truncate_seq_pair), and its token types."""
    tokens, types = [special.cls], [0]
    for kind, segment in enumerate(trimmed_segments(segments, length - 1 - len(segments))):
        tokens += list(segment) + [special.sep]
        types += [kind] * (len(segment) + 1)
    return tokens, types


def choice_segments(example: discriminative.Example, choice: str) -> Tuple[str, str]:
    """A multiple-choice example's input for one choice: the context as segment A, the choice
    (after any further context segment) as B (the paper's SWAG input, `[CLS] context [SEP]
    choice [SEP]`)."""
    return example.segments[0], " ".join(example.segments[1:] + (choice,))


def head_features(examples: Iterable[discriminative.Example], kind: str,
                  vocabulary: WordPieceVocabulary, length: int) -> Dict[str, np.ndarray]:
    """[n, length] bert_input_tokens / bert_token_types (multiple choice: [n, choices *
    length], each choice's input in turn) and [n, 1] labels (float32 for regression) of the
    labelled examples of a `kind` view (test-release examples, label -1, are left out)."""
    rows = {"bert_input_tokens": [], "bert_token_types": [], "labels": []}
    for example in examples:
        if example.label == -1:
            continue
        if kind == discriminative.MULTIPLE_CHOICE:
            inputs = [choice_segments(example, choice) for choice in example.choices]
        else:
            inputs = [example.segments]
        encoded = [pair_input(vocabulary.encode_batch(list(segments)), length,
                              vocabulary.special) for segments in inputs]
        rows["bert_input_tokens"].append(np.concatenate([padded(t, length) for t, _ in encoded]))
        rows["bert_token_types"].append(np.concatenate([padded(t, length) for _, t in encoded]))
        rows["labels"].append(example.label)
    label_type = np.float32 if kind == discriminative.REGRESSION else np.int32
    return {"bert_input_tokens": np.stack(rows["bert_input_tokens"]),
            "bert_token_types": np.stack(rows["bert_token_types"]),
            "labels": np.array(rows["labels"], label_type).reshape([-1, 1])}


@gin.configurable
@dataclasses.dataclass(frozen=True)
class SquadConfig:
    """run_squad.py's flags for windows and answers; the window length (max_seq_length, 384 in
    its examples) is DataConfig.inputs_length."""

    # A context longer than a window is read in windows that start `doc_stride` pieces apart.
    doc_stride: int = 128
    max_query_length: int = 64
    # Candidate answers: the n_best_size best starts and ends of each window.
    n_best_size: int = 20
    max_answer_length: int = 30
    # SQuAD 2.0: no answer when the null score (the least [CLS] start + end over the windows)
    # beats the best span by more than this (run_squad's null_score_diff_threshold, tuned on
    # dev). SQuAD v1.1 always answers (run_squad without version_2_with_negative).
    null_score_diff_threshold: float = 0.0


@dataclasses.dataclass(frozen=True)
class SquadWindow:
    """One window of a question's context (a run_squad InputFeatures)."""

    tokens: List[int]  # [CLS] question [SEP] context pieces [SEP]
    types: List[int]
    # The context word of each context piece, by position (run_squad's token_to_orig_map).
    piece_words: Dict[int, int]
    # The context positions whose widest context is this window (token_is_max_context).
    max_context: FrozenSet[int]
    start: int  # the answer's piece positions in this window; 0, 0: not in it, or no answer
    end: int


@dataclasses.dataclass(frozen=True)
class SquadQuestion:
    """One SQuAD question as BERT reads it: its windows and what reads an answer back."""

    question_id: str
    words: List[str]
    answers: List[str]  # the reference texts ([] for an impossible question)
    windows: List[SquadWindow]
    piece_counts: List[int]  # how many pieces each context word has

    def answer_text(self, window: int, start: int, end: int) -> str:
        """The context words of pieces start..end of a window, joined by spaces."""
        piece_words = self.windows[window].piece_words
        return " ".join(self.words[piece_words[start]:piece_words[end] + 1])

    def labelled_answer(self) -> str:
        """The text of the training label (its first window that has it; "" if none)."""
        return next((self.answer_text(i, w.start, w.end) for i, w in enumerate(self.windows)
                     if w.start), "")


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


def doc_spans(num_pieces: int, max_pieces: int, doc_stride: int) -> List[Tuple[int, int]]:
    """(start, length) of each window over a context of `num_pieces` pieces: at most
    `max_pieces` each, the next starting min(length, doc_stride) later, until one reaches the
    end (run_squad's convert_examples_to_features)."""
    spans = []
    start = 0
    while start < num_pieces:
        length = min(num_pieces - start, max_pieces)
        spans.append((start, length))
        if start + length == num_pieces:
            break
        start += min(length, doc_stride)
    return spans


def _is_max_context(spans: Sequence[Tuple[int, int]], span_index: int, piece: int) -> bool:
    """Whether window `span_index` gives `piece` its widest context: the most of
    min(left, right) context, plus 0.01 x the window's length (run_squad's
    _check_is_max_context)."""
    scores = [min(piece - start, start + length - 1 - piece) + 0.01 * length
              if start <= piece < start + length else None for start, length in spans]
    best = max((score, -index) for index, score in enumerate(scores) if score is not None)
    return -best[1] == span_index


def squad_question(raw: dict, vocabulary: WordPieceVocabulary, length: int,
                   config: SquadConfig = SquadConfig()) -> SquadQuestion:
    """A question of the task layer's SQuAD reader (v1.1 or v2.0 JSON) in windows of `length`
    pieces (run_squad's convert_examples_to_features)."""
    words, char_word = _context_words(raw["context"])
    question = vocabulary.encode(raw["question"])[:config.max_query_length]
    pieces: List[int] = []
    piece_word: List[int] = []
    word_first: List[int] = []
    piece_counts: List[int] = []
    for word, word_pieces in enumerate(vocabulary.encode_batch(words)):
        word_first.append(len(pieces))
        piece_counts.append(len(word_pieces))
        pieces += word_pieces
        piece_word += [word] * len(word_pieces)
    answers = list(raw["answers"]["text"])
    answer = None  # the answer's first and last context piece
    if answers:
        first_char = raw["answers"]["answer_start"][0]
        first_word = char_word[first_char]
        last_word = char_word[first_char + len(answers[0]) - 1]
        last_piece = (word_first[last_word + 1] if last_word + 1 < len(words)
                      else len(pieces)) - 1
        answer = (word_first[first_word], last_piece)
    offset = len(question) + 2
    spans = doc_spans(len(pieces), length - offset - 1, config.doc_stride)
    windows = []
    for index, (span_start, span_length) in enumerate(spans):
        context = range(span_start, span_start + span_length)
        start = end = 0
        if answer and span_start <= answer[0] and answer[1] < span_start + span_length:
            start, end = answer[0] - span_start + offset, answer[1] - span_start + offset
        windows.append(SquadWindow(
            tokens=([vocabulary.special.cls] + question + [vocabulary.special.sep]
                    + [pieces[p] for p in context] + [vocabulary.special.sep]),
            types=[0] * offset + [1] * (span_length + 1),
            piece_words={p - span_start + offset: piece_word[p] for p in context},
            max_context=frozenset(p - span_start + offset for p in context
                                  if _is_max_context(spans, index, p)),
            start=start, end=end))
    return SquadQuestion(raw["id"], words, answers, windows, piece_counts)


def _best_indexes(logits: np.ndarray, n_best_size: int) -> List[int]:
    """The positions of the n best logits, best first (run_squad's _get_best_indexes)."""
    return sorted(range(len(logits)), key=lambda i: logits[i], reverse=True)[:n_best_size]


def best_answer(question: SquadQuestion, logits: Sequence[np.ndarray], version_2: bool,
                config: SquadConfig = SquadConfig()) -> str:
    """The answer to `question` from each window's [2, length] start and end logits, as
    run_squad's write_predictions: candidates are the n best starts x the n best ends of every
    window, both context pieces, the start in its widest window (max context), end >= start,
    at most max_answer_length pieces; the best start + end logit wins. SQuAD 2.0 answers ""
    when the least null score ([CLS] start + end) over the windows beats it by more than
    null_score_diff_threshold; v1.1 never answers "" (only 2.0 has unanswerable questions)."""
    best, best_score = "", None
    null_score = min(float(start[0] + end[0]) for start, end in logits)
    for index, (window, (start, end)) in enumerate(zip(question.windows, logits)):
        for first in _best_indexes(start, config.n_best_size):
            if first not in window.max_context:
                continue
            for last in _best_indexes(end, config.n_best_size):
                if (last in window.piece_words and first <= last
                        and last - first + 1 <= config.max_answer_length):
                    score = float(start[first] + end[last])
                    if best_score is None or score > best_score:
                        best, best_score = question.answer_text(index, first, last), score
    if version_2 and (best_score is None
                      or null_score - best_score > config.null_score_diff_threshold):
        return ""
    return best


def squad_features(questions: Sequence[SquadQuestion], length: int) -> Dict[str, np.ndarray]:
    """[windows, length] bert_input_tokens / bert_token_types and [windows, 1] start/end
    positions of every window of the questions, in order."""
    windows = [window for question in questions for window in question.windows]
    return {
        "bert_input_tokens": np.stack([padded(w.tokens, length) for w in windows]),
        "bert_token_types": np.stack([padded(w.types, length) for w in windows]),
        "start_positions": np.array([[w.start] for w in windows], np.int32),
        "end_positions": np.array([[w.end] for w in windows], np.int32),
    }


def features_dataset(features: Dict[str, np.ndarray]) -> tf.data.Dataset:
    return tf.data.Dataset.from_tensor_slices(features)


def head_outputs(run, features: Dict[str, np.ndarray], checkpoint: Optional[str] = None
                 ) -> np.ndarray:
    """The outputs of a checkpoint (None: the newest) of `run` (a BERT head) for the [n, length]
    `bert_input_tokens` of `features`, with the family's `predict_feature_keys` (SegaBERT's
    structure indices) where `features` has them (PREDICT reads them as training did): [n,
    decode_length], the class first (classification, multiple choice); [n, 1] values
    (regression); [n, 2, length] start and end logits (span)."""
    inputs = {"inputs": features["bert_input_tokens"],
              **{key: features[key] for key in run.family.predict_feature_keys if key in features}}
    return runs.predict(run, inputs, checkpoint)


# ------------------------------------------------------------------------------------------------
# BERT's heads in the one task loop (`task_plan`).

@dataclasses.dataclass(frozen=True)
class HeadTask:
    """One task for a BERT head: its features and how predictions are scored."""

    name: str
    head: str
    vocabulary: WordPieceVocabulary
    length: int
    files: Dict[Tuple[str, str], Tuple[str, ...]]
    # Where the task's TFDS dataset is prepared, for splits that `files` does not give.
    data_dir: Optional[str] = None
    # The span head's windows and answers (the run's, from gin).
    squad: SquadConfig = SquadConfig()

    @property
    def version_2_with_negative(self) -> bool:
        """SQuAD 2.0 (task squad_v2) has unanswerable questions; v1.1 (squad) has none."""
        return self.name.endswith("v2")

    def metrics(self) -> Union[Task, evaluation.Metrics]:
        """The task's metrics (evaluation.head_metrics); SQuAD 2.0, not in the task registry, as
        SQuAD v1.1's (EM and F1, an impossible question's one reference "")."""
        if self.head == "span":
            squad = tasks.get("squad")
            return evaluation.Metrics(self.name, squad.metric_names, squad.score_postprocessed)
        return evaluation.head_metrics(self.name)

    def questions(self, split: str) -> List[SquadQuestion]:
        paths = self.files.get((self.name, split))
        if not paths:
            raise ValueError(f"the span head reads SQuAD JSON files: give --task_files "
                             f"{self.name}:{split}=PATH")
        return [squad_question(raw, self.vocabulary, self.length, self.squad)
                for path in paths for raw in read_squad_v2(path)]

    def examples(self, split: str) -> List[discriminative.Example]:
        """The split's labelled examples through the task's view (test releases have none)."""
        return discriminative.labelled_examples(
            self.name, split, self.files.get((self.name, split)), self.data_dir)

    def example_features(self, examples: Sequence[discriminative.Example]) -> Dict[str, np.ndarray]:
        return head_features(examples, discriminative.view(self.name).kind, self.vocabulary,
                             self.length)

    def features(self, split: str) -> Dict[str, np.ndarray]:
        if self.head == "span":
            return self.span_features(self.questions(split))
        return self.example_features(self.examples(split))

    def span_features(self, questions: Sequence[SquadQuestion]) -> Dict[str, np.ndarray]:
        """The windows' features of `questions`."""
        return squad_features(questions, self.length)

    def eval_split(self, run, split: str) -> Tuple[evaluation.EvalSet, evaluation.Answers]:
        """A validation split ready to score (model/tasks/evaluation.py) and a checkpoint's
        answers to it in the task's label space: the class or the right choice, a regression
        value, or a SQuAD answer's text (`best_answer` over the question's windows)."""
        data = evaluation.data_description(self.name, split, self.files)
        if self.head == "span":
            questions = self.questions(split)  # read once: the features and the answers
            features = self.span_features(questions)
            # An impossible question's one reference is "" (SQuAD 2.0's no-answer).
            references = tuple(q.answers or [""] for q in questions)
            eval_set = evaluation.EvalSet(self.metrics(), split,
                                          tuple({"id": q.question_id} for q in questions),
                                          references, references, data)

            def answers(checkpoint: str) -> List[str]:
                window_logits = iter(head_outputs(run, features, checkpoint))
                return [best_answer(q, [next(window_logits) for _ in q.windows],
                                    self.version_2_with_negative, self.squad) for q in questions]
            return eval_set, answers
        examples = self.examples(split)
        eval_set = evaluation.head_eval_set(self.metrics(), split, examples, data)
        features = self.example_features(examples)
        return eval_set, lambda checkpoint: head_outputs(run, features, checkpoint)[:, 0].tolist()


def checked_task_files(task: str, files: TaskFiles) -> TaskFiles:
    """The command line's --task_files, each naming this run's task (a typo would otherwise
    leave the task read from TFDS)."""
    others = sorted({name for name, _ in files if name != task})
    if others:
        raise ValueError(f"--task_files names {others}; this run fine-tunes {task!r} alone")
    return files


def head_training(run, task: HeadTask) -> Training:
    """What the head trains on: the task's train split, shuffled (DataConfig.seed), for
    TrainConfig.train_steps."""
    features = task.features("train")
    return Training(lambda: features_dataset(features).shuffle(
        len(features["bert_input_tokens"]), seed=run.data_config.seed))


def task_plan(run, request: TaskRequest, training: bool,
              head_task: Type[HeadTask] = HeadTask) -> TaskPlan:
    """BERT's part of a task run (model/tasks/task_runs.py's one loop): the head's config
    derived from the task, its features, each checkpoint's answers on every validation split
    (GLUE MNLI has two) and, when `training`, the head trained on the task's train split for
    TrainConfig.train_steps (from step 0: warm start restores the weights only)."""
    head = bert_part(run.family_config).head
    if head in ("pretraining", "mlm"):
        raise ValueError(f"--task needs a BERT fine-tuning head (BertConfig.head "
                         f"'classification' or 'span'), not {head!r}")
    if head != "span":
        # The head's kind (classification, regression, multiple choice) and size are the
        # task's view's: the run's family config derived (recorded with its checkpoints).
        view = discriminative.view(request.task)
        head = view.kind
        run = run.with_family_config(head=head, num_classes=view.num_classes)
    if request.mixture:
        raise ValueError("BERT's heads fine-tune on one --task at a time")
    files = checked_task_files(request.task, request.task_files)
    # The task's local validation files, else its registered validation splits.
    splits = validation_splits(request.task, files)
    if not splits:
        raise ValueError(f"{request.task}: no validation split to score; give --task_files "
                         f"{request.task}:validation=PATH")
    task = head_task(request.task, head, run.vocabulary, run.data_config.inputs_length, files,
                     request.tfds_data_dir, SquadConfig())
    evaluated = [task.eval_split(run, split) for split in splits]
    return TaskPlan(run, [eval_set for eval_set, _ in evaluated],
                    evaluation.answered({s.name: a for s, a in evaluated}),
                    head_training(run, task) if training else None)
