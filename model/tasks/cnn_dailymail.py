"""CNN/Daily Mail abstractive summarization: `summarize: <article>` -> the highlights, one per
line; scored with ROUGE-1, ROUGE-2 and ROUGE-L (summary level, each summary split into sentences:
metrics.sentence_per_line)."""
from __future__ import annotations

from model.tasks import metrics, sources
from model.tasks.base import (BEAM_SEARCH, DEFAULT_LENGTHS, Example, LocalFormat, ReleaseText, Task,
                              TfdsSplit)


def _preprocess(example: Example) -> dict[str, str]:
    return {"inputs": f"summarize: {example['article']}", "targets": example["highlights"]}


CNN_DAILYMAIL = Task(
    name="cnn_dailymail",
    splits={split: TfdsSplit("cnn_dailymail", split) for split in ("train", "validation", "test")},
    # Read as TFDS cnn_dailymail 3.x makes the examples: highlights one per line.
    local_format=LocalFormat(".story files (a stories folder, optionally a split's URL list), "
                             "read as cnn_dailymail 3.4.0", sources.read_stories),
    preprocess=_preprocess, postprocess=lambda text: text,
    metric_names=metrics.ROUGE_KEYS, score_postprocessed=metrics.rouge, num_train_examples=287_113,
    final_decoding=BEAM_SEARCH, lengths=DEFAULT_LENGTHS,
    text=ReleaseText("cnn_dailymail", ("**/*_stories",), ("article", "highlights")))

TASKS: tuple[Task, ...] = (CNN_DAILYMAIL,)
