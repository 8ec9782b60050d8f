"""WMT English to German, French and Romanian, on the data sets the paper used:
`translate English to German: <en>` -> <de>, scored with SacreBLEU.

en-de: the training data of Vaswani et al. (wmt_t2t_translate), validation newstest2013;
en-fr: WMT 2015 training data, validation newstest2014 (the test split of wmt14_translate);
en-ro: WMT 2016 training and validation data.
"""
from __future__ import annotations

import dataclasses

from model.tasks import metrics, sources
from model.tasks.base import (BEAM_SEARCH, DEFAULT_LENGTHS, Example, LocalFormat, ReleaseText, Task,
                              TfdsSplit)

LANGUAGE_NAMES = {"en": "English", "de": "German", "fr": "French", "ro": "Romanian"}


@dataclasses.dataclass(frozen=True)
class Translation:
    target_language: str
    train: TfdsSplit
    validation: TfdsSplit
    num_train_examples: int  # the TFDS train split's size
    # The release files' patterns in the task's folder, and the suffix of the target side's file
    # beside each (newstest's line-aligned NAME.eng and NAME.deu); none: translation JSON lines.
    release_files: tuple[str, ...]
    target_suffix: str = ""

    def preprocess(self, example: Example) -> dict[str, str]:
        prefix = f"translate English to {LANGUAGE_NAMES[self.target_language]}:"
        return {"inputs": f"{prefix} {example['en']}", "targets": example[self.target_language]}


def _task(translation: Translation) -> Task:
    return Task(
        name=f"wmt_en_{translation.target_language}",
        splits={"train": translation.train, "validation": translation.validation},
        local_format=LocalFormat(
            "parallel text (an English file and a line-aligned target file) or translation JSON lines",
            sources.parallel_reader("en", translation.target_language)),
        preprocess=translation.preprocess, postprocess=lambda text: text,
        metric_names=("bleu",), score_postprocessed=metrics.bleu,
        num_train_examples=translation.num_train_examples, final_decoding=BEAM_SEARCH,
        lengths=DEFAULT_LENGTHS,
        text=ReleaseText(f"wmt_en_{translation.target_language}", translation.release_files,
                         ("en", translation.target_language), aligned=translation.target_suffix))


TRANSLATIONS = (
    Translation("de", TfdsSplit("wmt_t2t_translate/de-en", "train"),
                TfdsSplit("wmt_t2t_translate/de-en", "validation"), 4_592_289, ("**/*.eng",),
                ".deu"),
    Translation("fr", TfdsSplit("wmt15_translate/fr-en", "train"),
                TfdsSplit("wmt14_translate/fr-en", "test"), 40_853_298, ("**/*.eng",), ".fra"),
    Translation("ro", TfdsSplit("wmt16_translate/ro-en", "train"),
                TfdsSplit("wmt16_translate/ro-en", "validation"), 610_320, ("**/*.json",)),
)

TASKS: tuple[Task, ...] = tuple(_task(t) for t in TRANSLATIONS)
