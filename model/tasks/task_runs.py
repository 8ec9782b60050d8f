"""The one task loop of every family (`python -m model finetune|eval|decode` with a task,
`run_tasks`): the family plans the run (`TaskPlan`: its features, heads, answers and training),
this module fine-tunes keeping every checkpoint, scores them (model/tasks/evaluation.py, by the
plan's way to score one) and keeps the best; and the checkpoint a command's `--checkpoint` names, the best one
included. Scoring and selection are evaluation.py's; this module trains, deletes and resolves.
"""
from __future__ import annotations

import dataclasses
import json
import os
import pathlib
from typing import Dict, List, Optional, Sequence

import tensorflow.compat.v1 as tf

from model.tasks import Mixture, evaluation
from model.tasks.evaluation import EvalSet, ScoreCheckpoint
from model.tasks.selection import TaskRequest
from model.trainer import checkpoint_state, runs


def trained_steps(run: runs.Run) -> List[int]:
    """The steps of the checkpoints this run trained: after its first step (the warm-start
    checkpoint's, or 0), whose checkpoint holds the weights it started from."""
    first = runs.first_step(run)
    return [step for step in checkpoint_state.checkpoint_steps(run.model_dir) if step > first]


@dataclasses.dataclass(frozen=True)
class Training:
    """What a fine-tuning run trains on: the family's model features (`examples`, made anew
    for each pass) for `steps` past the run's first step (None: TrainConfig.train_steps)."""

    examples: runs.Examples
    steps: Optional[int] = None


@dataclasses.dataclass(frozen=True)
class TaskPlan:
    """What a family supplies for a task run (`ModelFamily.task_plan`): the run as its tasks
    configure it (lengths, a head's config, its batch), the validation sets, how a checkpoint is
    scored on them, what it trains on (fine-tuning only) and the mixture it trains and scores
    (None: one task)."""

    run: runs.Run
    eval_sets: Sequence[EvalSet]
    score: ScoreCheckpoint
    training: Optional[Training] = None
    mixture: Optional[Mixture] = None


TASK_MODES = ("finetune", "eval", "decode")


def check_task_mode(mode: str) -> None:
    if mode not in TASK_MODES:
        raise ValueError(f"{mode} does not run on tasks (finetune, eval or decode do)")


def run_tasks(mode: str, run: runs.Run, request: TaskRequest) -> Dict[str, dict]:
    """The one task loop of every family (`finetune|eval|decode` with `--task` or
    `--mixture`): the run's family plans it (`task_plan`: features, heads, answers, training),
    `task_run` trains and scores. The mode is checked before the family plans."""
    check_task_mode(mode)
    return task_run(mode, run.family.task_plan(run, request, training=mode == "finetune"))


def task_run(mode: str, plan: TaskPlan) -> Dict[str, dict]:
    """`finetune|eval|decode` of a family's `plan`:
    finetune: the run trained on `plan.training`, keeping every checkpoint, then every checkpoint
    scored, the best per task kept with the newest TrainConfig.keep_checkpoint_max; returns the best
    ({"<task>/<split>": {"step", "checkpoint", "scores", "data", "decoding"}});
    eval: the checkpoints not yet scored are scored; returns the best;
    decode: the newest checkpoint is scored; returns {"<task>/<split>": {"step", "scores"}}.
    The candidates are the checkpoints this run trained (`trained_steps`): never the weights it
    started from (T5's warm-start checkpoint, whose step the run continues, is in the model
    directory too; the t5 library would score it, uselessly: it has not seen the task).
    An mT5 setting's mixture also writes its Table 2 row."""
    check_task_mode(mode)
    run, eval_sets, score, mixture = plan.run, plan.eval_sets, plan.score, plan.mixture
    if mode == "finetune":
        if plan.training is None:
            raise ValueError("finetune needs the plan's training")
        keep_all = dataclasses.replace(run, train_config=dataclasses.replace(
            run.train_config, keep_checkpoint_max=0))
        runs.train(keep_all, plan.training.examples, run.vocabulary.vocab_size, plan.training.steps)
    checkpoint_state.require_checkpoints(run.model_dir)
    candidates = trained_steps(run)
    if not candidates:
        raise FileNotFoundError(f"no checkpoint trained by this run in {run.model_dir} (the "
                                f"weights it started from, step {runs.first_step(run)}, are not scored)")
    if mode == "decode":
        newest = max(candidates)
        evaluation.evaluate_checkpoints(run, eval_sets, score, steps=[newest], mixture=mixture)
        return {s.name: {"step": newest,
                         "scores": evaluation.recorded_scores(run.model_dir, s)[newest]}
                for s in eval_sets}
    best = evaluation.evaluate_checkpoints(run, eval_sets, score, steps=candidates, mixture=mixture)
    if mode == "finetune":
        newest = sorted(checkpoint_state.checkpoint_steps(run.model_dir)
                        )[-run.train_config.keep_checkpoint_max:]
        checkpoint_state.keep_only(run.model_dir, set(newest) | {b["step"] for b in best.values()})
    return best


def resolve_checkpoint(model_dir: str, name: str, task: Optional[str] = None) -> str:
    """The checkpoint `--checkpoint NAME` means: "" the newest of `model_dir`; "best" the one
    `model_dir`/eval/best.json names (for `task` where it names several); a path, or a name as
    best.json and the progress lines print it (`model.ckpt-360`) relative to `model_dir`."""
    if not name:
        newest = checkpoint_state.newest_checkpoint(model_dir)
        if not newest:
            raise checkpoint_state.no_checkpoint_error(model_dir)
        return newest
    if name == "best":
        best_file = pathlib.Path(model_dir) / evaluation.EVAL_DIR / evaluation.BEST_NAME
        if not best_file.is_file():
            raise FileNotFoundError(f"--checkpoint best: no {best_file} (python -m model eval "
                                    f"--task T --model_dir {model_dir} writes it)")
        best = json.loads(best_file.read_text())
        named = {entry["checkpoint"] for key, entry in best.items()
                 if not task or key.split("/")[0] == task}
        if len(named) != 1:
            raise ValueError(f"--checkpoint best: {best_file} names {sorted(named) or 'none'}"
                             + (f" for {task}" if task else "; choose one with --task"))
        name = named.pop()
    # The model directory's name first: a same-named checkpoint in the working directory is
    # another run's.
    for candidate in (os.path.join(model_dir, name), name):
        if tf.io.gfile.exists(candidate + ".index"):
            return candidate
    raise FileNotFoundError(f"--checkpoint {name}: no checkpoint {name} (nor in {model_dir})")
