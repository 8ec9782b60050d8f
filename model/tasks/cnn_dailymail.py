"""CNN/Daily Mail abstractive summarization: `summarize: <article>` -> the highlights, one per
line; scored with ROUGE-1, ROUGE-2 and ROUGE-L (summary level)."""
from __future__ import annotations

from model.tasks import metrics, sources
from model.tasks.base import BEAM_SEARCH, DEFAULT_LENGTHS, Example, LocalFormat, Task, TfdsSplit


def _preprocess(example: Example) -> dict[str, str]:
    return {"inputs": f"summarize: {example['article']}", "targets": example["highlights"]}


CNN_DAILYMAIL = Task(
    name="cnn_dailymail",
    splits={split: TfdsSplit("cnn_dailymail", split) for split in ("train", "validation", "test")},
    local_format=LocalFormat(".story files (a stories folder, optionally a split's URL list)",
                             sources.read_stories),
    preprocess=_preprocess, postprocess=lambda text: text,
    metric_names=metrics.ROUGE_KEYS, score_postprocessed=metrics.rouge, num_train_examples=287_113,
    decoding=BEAM_SEARCH, lengths=DEFAULT_LENGTHS)

TASKS: tuple[Task, ...] = (CNN_DAILYMAIL,)
