"""What an export says of itself, so that its user need not guess: the task's label names in a
classifier's config.json (`id2label`/`label2id`, MRPC's "not_equivalent" and "equivalent", not
transformers' LABEL_0 and LABEL_1) and a model card, README.md, beside the weights: the run
(family, sizes, the checkpoint's step, the checkpoint it started from), the task, the scores the
run's evaluation recorded for the exported checkpoint, and Python that loads the folder and runs
its head once (each format's `usage`: T5's generate, BERT's heads, GPT-1's multiple-choice
layout, SegaBERT's authors' files).

The task is the one `--task` names (model export), else the one whose evaluation
the run recorded (MODEL_DIR/eval/<task>/<split>/scores.jsonl, model/tasks/evaluation.py); a run
evaluated on several tasks lists each one's scores and names no labels.
"""
from __future__ import annotations

import json
import pathlib
import re
from typing import Any, Dict, Optional, Sequence, Tuple

from model import tasks
from model.tasks.evaluation import EVAL_DIR, SCORES_NAME
from model.trainer import runs

CARD_NAME = "README.md"
CONFIG_FILE = "config.json"
# A scores.jsonl entry's fields that are no metric.
NOT_METRICS = ("step", "data", "decoding")


def checkpoint_step(checkpoint: str) -> Optional[int]:
    """The step in a checkpoint's name (model.ckpt-360), if it has one."""
    found = re.search(r"-(\d+)$", checkpoint)
    return int(found.group(1)) if found else None


def recorded_scores(model_dir: str, step: Optional[int]) -> Dict[str, Dict[str, float]]:
    """{"<task>/<split>": {metric: percent}} that the run's evaluation recorded for `step`."""
    scores = {}
    for path in sorted(pathlib.Path(model_dir, EVAL_DIR).glob(f"*/*/{SCORES_NAME}")):
        for line in path.read_text().splitlines():
            entry = json.loads(line) if line.strip() else {}
            if entry.get("step") == step:
                scores[f"{path.parent.parent.name}/{path.parent.name}"] = {
                    name: value for name, value in entry.items() if name not in NOT_METRICS}
    return scores


def evaluated_tasks(model_dir: str) -> Tuple[str, ...]:
    """The tasks the run's evaluation recorded scores of (any checkpoint)."""
    return tuple(sorted({path.parent.parent.name for path in
                         pathlib.Path(model_dir, EVAL_DIR).glob(f"*/*/{SCORES_NAME}")}))


def run_task(model_dir: str, task: Optional[str]) -> Optional[str]:
    """`task` if given, else the one task the run's evaluation recorded (None for none or
    several)."""
    if task:
        return task
    evaluated = evaluated_tasks(model_dir)
    return evaluated[0] if len(evaluated) == 1 else None


def label_names(task: Optional[str]) -> Optional[Tuple[str, ...]]:
    """A classification task's class names by id (model/tasks: Task.label_names); None for a
    task without (regression, multiple choice, text) or outside the task registry."""
    if not task:
        return None
    try:
        return tasks.get(task).label_names
    except KeyError:  # Story Cloze and RACE: multiple choice, no registry entry
        return None


def name_labels(out: pathlib.Path, names: Optional[Sequence[str]]) -> bool:
    """Writes `names` as the id2label/label2id of the exported classifier's config.json (a
    *ForSequenceClassification of as many labels); whether it did."""
    if not names or not (out / CONFIG_FILE).is_file():
        return False
    from transformers import AutoConfig
    config = AutoConfig.from_pretrained(str(out))
    classifier = any(name.endswith("ForSequenceClassification")
                     for name in config.architectures or [])
    if not classifier or config.problem_type == "regression":
        return False
    if config.num_labels != len(names):
        raise ValueError(f"{out / CONFIG_FILE}: {config.num_labels} labels, the task's "
                         f"{len(names)} ({list(names)})")
    config.id2label = dict(enumerate(names))
    config.label2id = {name: i for i, name in enumerate(names)}
    config.save_pretrained(str(out))
    return True


def _source(run: runs.Run) -> str:
    """Where the run's weights started: its init checkpoint, the import that wrote its gin file,
    or random weights."""
    if run.train_config.init_checkpoint:
        return f"`{run.train_config.init_checkpoint}` (TrainConfig.init_checkpoint)"
    recorded = pathlib.Path(run.model_dir) / runs.OPERATIVE_CONFIG_NAME
    first = recorded.read_text().splitlines()[:1] if recorded.is_file() else []
    if first and first[0].startswith("# Written by `python -m model.convert import` from "):
        return "imported from " + first[0].split(" from ", 1)[1].rstrip(".")
    return "none: trained from random weights"


def card_text(run: runs.Run, checkpoint: str, model_class: str, task: Optional[str],
              labels: Optional[Sequence[str]], scores: Dict[str, Dict[str, float]],
              usage: str, tokenizer: bool) -> str:
    """The model card (see the module's docstring)."""
    config = run.model_config
    step = checkpoint_step(checkpoint)
    rows = [("family", f"{run.family.name} (`ModelConfig.architecture = "
                       f"'{config.architecture}'`)"),
            ("model", f"`{model_class}`"),
            ("size", f"d_model {config.d_model}, d_ff {config.d_ff}, {config.num_layers} "
                     f"layers, {config.num_heads} heads of {config.d_kv}"),
            ("steps", f"{step if step is not None else 'unknown'} (`{checkpoint}`)"),
            ("source checkpoint", _source(run)),
            ("vocabulary", f"`{run.data_config.vocabulary}`" if run.data_config.vocabulary
             else "none recorded (no tokenizer exported)"),
            ("task", f"`{task}`" if task else "none recorded")]
    if labels:
        rows.append(("labels", ", ".join(f"{i} `{name}`" for i, name in enumerate(labels))))
    lines = [f"# {run.family.name} from `{run.model_dir}`", "",
             f"Exported by this project (`{checkpoint}`).", "", "| | |", "|---|---|"]
    lines += [f"| {name} | {value} |" for name, value in rows]
    lines += ["", "## Scores", ""]
    if scores:
        lines += [f"- `{name}`: " + ", ".join(f"{metric} {value:.2f}"
                                              for metric, value in metrics.items())
                  for name, metrics in scores.items()]
    else:
        lines.append("No evaluation of this checkpoint was recorded (`python -m model eval "
                     "--task T --model_dir DIR` records one).")
    lines += ["", "## Use", ""]
    if tokenizer:
        lines += ["```python", usage.rstrip(), "```"]
    else:
        lines += ["The run recorded no vocabulary, so no tokenizer was exported: with token ids "
                  "of the vocabulary it was trained with in place of the tokenizer's,", "",
                  "```text", usage.rstrip(), "```"]
    return "\n".join(lines) + "\n"


def finish_export(run: runs.Run, out: Any, checkpoint: str, model_class: str, usage: str,
                  task: Optional[str] = None) -> Dict[str, Any]:
    """Names a classifier's labels by the run's task and writes the model card into the
    export folder `out`; what it wrote, for the command's result."""
    out = pathlib.Path(out)
    task = run_task(run.model_dir, task)
    names = label_names(task)
    named = name_labels(out, names)
    scores = recorded_scores(run.model_dir, checkpoint_step(checkpoint))
    (out / CARD_NAME).write_text(card_text(run, checkpoint, model_class, task,
                                           names if named else None, scores, usage,
                                           bool(run.data_config.vocabulary)))
    return {"task": task, "labels": list(names) if named else None, "card": str(out / CARD_NAME)}
