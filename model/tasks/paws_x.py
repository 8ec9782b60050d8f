"""PAWS-X as multilingual-t5 casts it (the t5 library's `glue` preprocessor with benchmark
"paws" and the fields in the order sentence1, sentence2): `paws sentence1: ... sentence2: ...`
-> `different_meaning` or `paraphrase`, scored by accuracy.

Tasks, named as multilingual-t5 registers them:
  mt5_paws                          PAWS-X's English training set (x-final/en/train.tsv)
  mt5_pawsx_dev_test.<lang>         validation (dev_2k.tsv) and test (test_2k.tsv), 7 languages
  mt5_pawsx_translate_train.<lang>  the English training set machine-translated, 6 languages.
      Here these are PAWS-X's own translations (x-final/<lang>/translated_train.tsv, TFDS
      paws_x_wiki/<lang>:train): multilingual-t5's tasks of this name read XTREME's (TFDS
      xtreme_pawsx), its `..._translate_train_original` tasks these.
"""
from __future__ import annotations

import functools

from model.tasks import metrics, multilingual_sources, xnli
from model.tasks.base import Example, LocalFormat, ReleaseLayout, Task, TfdsSplit, training_of
from model.tasks.text_format import benchmark_inputs, class_id, label_name

LANGUAGES = ("de", "en", "es", "fr", "ja", "ko", "zh")
LABELS = ("different_meaning", "paraphrase")
ENGLISH_TRAIN_EXAMPLES = 49_401  # paws_x_wiki/en's train split
# multilingual-t5 ships no lengths file for PAWS-X; XNLI's (gin/sequence_lengths/xnli.gin)
# covers its sentence pairs and labels.
LENGTHS = xnli.LENGTHS


def _preprocess(example: Example) -> dict[str, str]:
    return {"inputs": benchmark_inputs("paws", example, ("sentence1", "sentence2")),
            "targets": label_name(example["label"], LABELS)}


def _task(name: str, language: str, splits: dict[str, str], files: dict[str, str],
          num_train_examples: int | None = None) -> Task:
    return Task(
        name=name,
        splits={ours: TfdsSplit(f"paws_x_wiki/{language}", theirs) for ours, theirs in splits.items()},
        local_format=LocalFormat(f"PAWS-X TSV ({', '.join(files.values())})",
                                 multilingual_sources.read_paws_x_tsv),
        preprocess=_preprocess, postprocess=functools.partial(class_id, label_names=LABELS),
        metric_names=("accuracy",), score_postprocessed=metrics.accuracy,
        num_train_examples=num_train_examples,
        **training_of(splits, "a mixture such as mt5_pawsx_zeroshot"),
        lengths=LENGTHS, label_names=LABELS,
        eval_splits=tuple(split for split in splits if split != "train"),
        release=ReleaseLayout("paws_x", files), language=language)


ENGLISH_TRAIN = _task("mt5_paws", "en", {"train": "train"}, {"train": "x-final/en/train.tsv"},
                      ENGLISH_TRAIN_EXAMPLES)
DEV_TEST = {language: _task(f"mt5_pawsx_dev_test.{language}", language,
                            {"validation": "validation", "test": "test"},
                            {"validation": f"x-final/{language}/dev_2k.tsv",
                             "test": f"x-final/{language}/test_2k.tsv"})
            for language in LANGUAGES}
TRANSLATE_TRAIN = {language: _task(f"mt5_pawsx_translate_train.{language}", language,
                                   {"train": "train"},
                                   {"train": f"x-final/{language}/translated_train.tsv"})
                   for language in LANGUAGES if language != "en"}

TASKS: tuple[Task, ...] = (ENGLISH_TRAIN, *DEV_TEST.values(), *TRANSLATE_TRAIN.values())
