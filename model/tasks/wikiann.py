"""WikiAnn named entities (the 40 PAN-X languages of XTREME, Rahimi et al.'s splits) as
multilingual-t5 casts them (its `wikiann` preprocessor): `tag: <tokens joined by spaces>` ->
the entities as `TYPE: tokens`, joined by ` $$ ` (`PER: rick $$ PER: morty`; `None` for a
sentence without one, as TFDS's wikiann spans say), scored by span F1.

Tasks, named as multilingual-t5 registers them:
  mt5_ner_train.<lang>  a language's training split
  mt5_ner_eval.<lang>   its validation and test splits
"""
from __future__ import annotations

from model.tasks import multilingual_metrics, multilingual_sources
from model.tasks.base import (Example, LocalFormat, ReleaseLayout, SequenceLengths, Task,
                              TfdsSplit, training_of)

LANGUAGES = ("af", "ar", "bg", "bn", "de", "el", "en", "es", "et", "eu", "fa", "fi", "fr", "he",
             "hi", "hu", "id", "it", "ja", "jv", "ka", "kk", "ko", "ml", "mr", "ms", "my", "nl",
             "pt", "ru", "sw", "ta", "te", "th", "tl", "tr", "ur", "vi", "yo", "zh")
# multilingual-t5's gin/sequence_lengths/ner.gin.
LENGTHS = SequenceLengths(inputs=1024, targets=1024)


def _preprocess(example: Example) -> dict[str, str]:
    return {"inputs": "tag: " + " ".join(example["tokens"]),
            "targets": multilingual_sources.SPAN_SEPARATOR.join(example["spans"])}


def _task(name: str, language: str, splits: dict[str, str], files: dict[str, str]) -> Task:
    return Task(
        name=name,
        splits={ours: TfdsSplit(f"wikiann/{language}", theirs) for ours, theirs in splits.items()},
        local_format=LocalFormat(f"WikiAnn (PAN-X) token files ({', '.join(files.values())})",
                                 multilingual_sources.read_wikiann),
        preprocess=_preprocess, postprocess=lambda text: text,
        metric_names=("span_f1",), score_postprocessed=multilingual_metrics.span_f1,
        num_train_examples=None,
        **training_of(splits, "a mixture such as mt5_ner_zeroshot"),
        lengths=LENGTHS, eval_splits=tuple(split for split in splits if split != "train"),
        release=ReleaseLayout("wikiann", files), language=language)


TRAIN = {language: _task(f"mt5_ner_train.{language}", language, {"train": "train"},
                         {"train": f"{language}/train"}) for language in LANGUAGES}
EVAL = {language: _task(f"mt5_ner_eval.{language}", language,
                        {"validation": "validation", "test": "test"},
                        {"validation": f"{language}/dev", "test": f"{language}/test"})
        for language in LANGUAGES}

TASKS: tuple[Task, ...] = (*TRAIN.values(), *EVAL.values())
