"""SuperGLUE and DPR as the T5 library casts them.

BoolQ, CB, COPA, RTE, WiC: `<benchmark> <field>: <value> ...` (fields sorted, WiC's in the order
sentence1, sentence2, word) -> the TFDS label name. MultiRC: `multirc question: ... answer: ...
paragraph: ...` without its HTML markup -> `True`/`False`, scored per question. ReCoRD: `record
query: ... entities: a, b passage: ...` -> an answer entity (one training pair per answer). WSC in
the paper's referent-noun form: `wsc: ... *pronoun* ...` -> the referent noun phrase; trained on
the right referents only (with DPR, same form), scored by whether the predicted noun phrase is the
candidate exactly when the candidate is right.
"""
from __future__ import annotations

import functools
import re
from typing import Any, Callable, Sequence

from model.tasks import metrics, sources
from model.tasks.base import Example, LocalFormat, ReleaseText, SequenceLengths, Task, TfdsSplit
from model.tasks.text_format import UNKNOWN_LABEL, benchmark_inputs, class_id, label_name

# t5/models/gin/sequence_lengths/super_glue_v102_proportional.gin (DPR trains in the same mixture).
SUPER_GLUE_LENGTHS = SequenceLengths(inputs=512, targets=62)

BOOLEAN_LABELS = ("False", "True")
_JSONL = "SuperGLUE JSONL (train.jsonl, val.jsonl, test.jsonl)"
_JSON_FILES = ("**/*.jsonl", "**/*.json")


def _text(config: str, fields: tuple[str, ...], identity: tuple[str, ...] = ()) -> ReleaseText:
    """The text fields of a task's files in its folder, superglue_<config>."""
    return ReleaseText(f"superglue_{config}", _JSON_FILES, fields, identity=identity)


def _splits(config: str) -> dict[str, TfdsSplit]:
    return {split: TfdsSplit(f"super_glue/{config}", split) for split in ("train", "validation")}


def _classification_task(config: str, fields: Sequence[str], label_names: Sequence[str],
                         score: Callable, metric_names: tuple[str, ...], num_train_examples: int,
                         text_fields: tuple[str, ...], other_features: Sequence[str] = ()) -> Task:
    """fields: those the inputs show, in order; text_fields: those of them that hold text a
    page could hold (not COPA's "cause"/"effect", nor WiC's word); other_features: further TFDS
    features."""
    def preprocess(example: Example) -> dict[str, str]:
        return {"inputs": benchmark_inputs(config, example, fields),
                "targets": label_name(example["label"], label_names)}
    return Task(
        name=f"super_glue_{config}", splits=_splits(config),
        local_format=LocalFormat(_JSONL, functools.partial(
            sources.read_superglue_jsonl, features=(*fields, *other_features), label_names=label_names)),
        preprocess=preprocess,
        postprocess=functools.partial(class_id, label_names=label_names),
        metric_names=metric_names, score_postprocessed=score,
        num_train_examples=num_train_examples, benchmark="super_glue", lengths=SUPER_GLUE_LENGTHS,
        label_names=tuple(label_names), text=_text(config, text_fields))


def _cb_score(targets, predictions) -> dict[str, float]:
    return {**metrics.macro_f1(3)(targets, predictions), **metrics.accuracy(targets, predictions)}


_ACCURACY = ("accuracy",)

BOOLQ = _classification_task("boolq", ("passage", "question"), BOOLEAN_LABELS, metrics.accuracy,
                             _ACCURACY, 9_427, ("question", "passage"))
CB = _classification_task("cb", ("hypothesis", "premise"), ("entailment", "contradiction", "neutral"),
                          _cb_score, ("mean_3class_f1", "accuracy"), 250, ("premise", "hypothesis"))
COPA = _classification_task("copa", ("choice1", "choice2", "premise", "question"), ("choice1", "choice2"),
                            metrics.accuracy, _ACCURACY, 400, ("premise", "choice1", "choice2"))
RTE = _classification_task("rte", ("hypothesis", "premise"), ("entailment", "not_entailment"),
                           metrics.accuracy, _ACCURACY, 2_490, ("premise", "hypothesis"))
WIC = _classification_task("wic", ("sentence1", "sentence2", "word"), BOOLEAN_LABELS, metrics.accuracy,
                           _ACCURACY, 5_428, ("sentence1", "sentence2"),
                           other_features=("start1", "start2", "end1", "end2"))


# --- MultiRC ----------------------------------------------------------------------------

_BOLD_TAG = re.compile(r"<(/)?b>")


def _multirc_preprocess(example: Example) -> dict[str, str]:
    inputs = benchmark_inputs("multirc", example, ("question", "answer", "paragraph"))
    inputs = _BOLD_TAG.sub("", inputs.replace("<br>", " "))
    return {"inputs": inputs, "targets": label_name(example["label"], BOOLEAN_LABELS)}


def _multirc_reference(example: Example) -> tuple[tuple[int, int], int]:
    """(the question it answers, its label): MultiRC's exact match is per question."""
    idx = example["idx"]
    return (idx["paragraph"], idx["question"]), example["label"]


def _multirc_target(target: str) -> Any:
    raise ValueError("MultiRC scores per question: pass task.reference(example) as targets, "
                     f"not target strings such as {target!r}")


def _multirc_score(references, predictions) -> dict[str, float]:
    groups = [group for group, _ in references]
    return metrics.multirc(groups, [label for _, label in references], predictions)


MULTIRC = Task(
    name="super_glue_multirc", splits=_splits("multirc"),
    local_format=LocalFormat(_JSONL, sources.read_multirc_jsonl),
    preprocess=_multirc_preprocess,
    postprocess=functools.partial(class_id, label_names=BOOLEAN_LABELS),
    metric_names=("exact_match", "f1"), score_postprocessed=_multirc_score,
    num_train_examples=27_243, reference_of=_multirc_reference, target_to_reference=_multirc_target,
    benchmark="super_glue", lengths=SUPER_GLUE_LENGTHS,
    # An example is an answer option: its question's text is one, named by paragraph and question.
    text=_text("multirc", ("paragraph", "question"), identity=("paragraph", "question")))


# --- ReCoRD -------------------------------------------------------------------------------

_HIGHLIGHT_AFTER_PUNCTUATION = re.compile(r"(\.|\?|\!|\"|')\n@highlight\n")


def _record_inputs(example: Example) -> str:
    # The passage's "@highlight" lines (article summaries) become sentences.
    passage = _HIGHLIGHT_AFTER_PUNCTUATION.sub(r"\1 ", example["passage"])
    passage = passage.replace("\n@highlight\n", ". ")
    return " ".join(["record query:", example["query"], "entities:", ", ".join(example["entities"]),
                     "passage:", passage])


def _record_preprocess(example: Example) -> dict[str, str]:
    answers = example["answers"]
    return {"inputs": _record_inputs(example), "targets": answers[0] if answers else UNKNOWN_LABEL}


def _record_training_pairs(example: Example) -> list[dict[str, str]]:
    inputs = _record_inputs(example)
    return [{"inputs": inputs, "targets": answer} for answer in example["answers"]]


def _identity(text: str) -> str:
    return text


def _single_answer(target: str) -> list[str]:
    return [target]


RECORD = Task(
    name="super_glue_record", splits=_splits("record"),
    local_format=LocalFormat("SuperGLUE JSONL or ReCoRD release JSON", sources.read_record),
    preprocess=_record_preprocess, postprocess=_identity,
    metric_names=("em", "f1"), score_postprocessed=metrics.squad,
    num_train_examples=138_854,  # one example per answer, as trained
    training_pairs_of=_record_training_pairs, reference_of=lambda example: list(example["answers"]),
    target_to_reference=_single_answer, benchmark="super_glue", lengths=SUPER_GLUE_LENGTHS,
    text=_text("record", ("passage", "query")))


# --- WSC and DPR in the referent-noun form -------------------------------------------------

def _mark_pronoun(words: list[str], index: int, pronoun: str) -> list[str]:
    """Words with the pronoun at `index` as `*pronoun*`. Where SuperGLUE's index is off by one or
    the pronoun carries punctuation (two known examples), the nearest word that is the pronoun,
    or the pronoun followed by punctuation, is marked instead."""
    for candidate in sorted(range(len(words)), key=lambda i: abs(i - index)):
        word = words[candidate]
        rest = word[len(pronoun):]
        if word == pronoun or (word.startswith(pronoun) and rest and not any(c.isalnum() for c in rest)):
            marked = f"*{pronoun}*" + (f" {rest}" if rest else "")
            return words[:candidate] + [marked] + words[candidate + 1:]
    raise ValueError(f"pronoun {pronoun!r} not found in {' '.join(words)!r}")


def _wsc_preprocess(example: Example) -> dict[str, str]:
    words = example["text"].split(" ")
    marked = " ".join(_mark_pronoun(words, example["span2_index"], example["span2_text"]))
    return {"inputs": f"wsc: {marked}", "targets": example["span1_text"]}


_DETERMINERS = frozenset({"a", "an", "few", "her", "his", "each", "every", "many", "much", "my", "our",
                          "some", "that", "the", "their", "these", "this", "those", "which", "whose",
                          "your"})


def _content_words(noun_phrase: str) -> str:
    return " ".join(w for w in noun_phrase.strip().lower().split(" ") if w not in _DETERMINERS)


def names_referent(prediction: str, referent: str) -> bool:
    """Whether a predicted noun phrase names the candidate referent: ignoring case and
    determiners, one's words contain the other's ("fuzzy bunny" ~ "bunny"), and both or neither
    are possessives ("Bob" is not "Bob's hat")."""
    prediction, referent = _content_words(prediction), _content_words(referent)
    if ("'" in prediction) != ("'" in referent):
        return False
    predicted_words, referent_words = set(prediction.split(" ")), set(referent.split(" "))
    return predicted_words <= referent_words or referent_words <= predicted_words


def _wsc_score(references, predictions) -> dict[str, float]:
    """Right when the prediction names the candidate exactly when the candidate is the referent."""
    right = [names_referent(prediction, referent) == is_referent
             for (referent, is_referent), prediction in zip(references, predictions)]
    return metrics.accuracy([True] * len(right), right)


def _wsc_training_pairs(example: Example) -> list[dict[str, str]]:
    return [_wsc_preprocess(example)] if example["label"] == 1 else []


WSC = Task(
    name="super_glue_wsc",
    splits={split: TfdsSplit("super_glue/wsc.fixed", split) for split in ("train", "validation")},
    local_format=LocalFormat(_JSONL, functools.partial(
        sources.read_superglue_jsonl, features=("text", "span1_index", "span2_index", "span1_text",
                                                "span2_text"),
        label_names=BOOLEAN_LABELS, span_target=True, fix_spans=True)),
    preprocess=_wsc_preprocess, postprocess=_identity,
    metric_names=("accuracy",), score_postprocessed=_wsc_score,
    num_train_examples=259,  # the right referents of the 554 training examples
    training_pairs_of=_wsc_training_pairs,
    reference_of=lambda example: (example["span1_text"], example["label"] == 1),
    target_to_reference=lambda target: (target, True), benchmark="super_glue",
    lengths=SUPER_GLUE_LENGTHS, text=_text("wsc", ("text",)))


def _dpr_preprocess(example: Example) -> dict[str, str]:
    # The first occurrence of the pronoun as a word is the one to resolve.
    pattern = rf" ({re.escape(example['pronoun'])})( |\.|,)"
    marked = re.sub(pattern, r" *\1*\2", example["sentence"], count=1)
    return {"inputs": f"wsc: {marked}", "targets": example["candidates"][example["label"]]}


DPR = Task(
    name="dpr",
    splits={split: TfdsSplit("definite_pronoun_resolution", split) for split in ("train", "test")},
    local_format=LocalFormat("DPR release text (train.c.txt, test.c.txt)", sources.read_dpr),
    preprocess=_dpr_preprocess, postprocess=_identity,
    metric_names=("accuracy",), score_postprocessed=metrics.accuracy, num_train_examples=1_322,
    lengths=SUPER_GLUE_LENGTHS)


TASKS: tuple[Task, ...] = (BOOLQ, CB, COPA, MULTIRC, RECORD, RTE, WIC, WSC, DPR)
