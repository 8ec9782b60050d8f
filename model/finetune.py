"""Fine-tuning, evaluation and decoding on the paper's tasks (model/tasks/) from the command line:

    python -m model.train --mode finetune --task glue_rte --model_dir DIR \
        --gin_file sizes/base.gin --gin_param "TrainConfig.init_checkpoint = 'PRETRAINED_DIR'" \
        --gin_param "DataConfig.vocabulary = 'spm.model'"
    python -m model.train --mode finetune --mixture glue ...        (multi-task, Section 3.5.2)
    python -m model.train --mode finetune --mixture all --with_pretraining --mixing_limit 524288 \
        --gin_file pretrain.gin ...   (multi-task pre-training: C4's objective mixed in, from scratch;
                                       the size limit K is 2^21 unless --mixing_limit gives one)
    python -m model.train --mode eval --task glue_rte ...           (every checkpoint not yet scored)
    python -m model.train --mode decode --task glue_rte ...         (the newest checkpoint)

A fine-tuning run (model/gin/finetune.gin: constant learning rate 0.001, 2^18 steps, a checkpoint
every 5,000) warm-starts from the pre-trained checkpoint (the global step continues), trains on
the task's (or the mixture's) training pairs, keeping every checkpoint while it trains; then each
checkpoint is decoded (greedily, as the paper's Section 3; `--gin_file beam_search.gin` for its
final models' beam search on WMT and CNN/DM) and scored on every validation split
(model/evaluation.py), the best per task is reported with the GLUE and SuperGLUE averages, and
only those and the newest `TrainConfig.keep_checkpoint_max` checkpoints are kept.

Sequences are trimmed to the task's lengths, and decoded up to its targets length
(`Task.lengths`, the t5 library's per-task values; a mixture takes the longest of its members),
unless gin binds `DataConfig.inputs_length`, `DataConfig.targets_length` or
`TrainConfig.decode_length` (pretrain.gin, used for multi-task pre-training, binds span
corruption's 512/114): a bound length wins, with a warning when it cuts the tasks' sequences.
The lengths chosen are bound in gin, so `operative_config.gin` records the lengths the run used.
WNLI is never trained on (as in the paper); it can be evaluated.

Task data comes from TFDS (`--tfds_data_dir`, or TFDS's default) unless `--task_files
TASK:SPLIT=PATH[,PATH...]` gives the task's original release files for a split (read by the
task's local reader, so everything runs offline); with local files, the validation splits are
those given.
"""
from __future__ import annotations

import argparse
import dataclasses
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple

import gin
import tensorflow as tf

from model import evaluation, features, inputs, objectives, tasks, train
from model.decoding import DecodingConfig
from model.tasks import Mixing, SequenceLengths, Task, mixtures
from model.tasks import tf_data
from model.tasks.sources import parse_task_files, tfds_version
from model.vocabulary import EOS_ID, Vocabulary

TOKENIZE_BATCH = 64
# Shuffle buffer of the training pairs of each task (the whole task when smaller).
SHUFFLE_BUFFER = 2 ** 16


class _Reread:
    """An iterable that reads its examples again on every iteration (tf.data's from_generator
    iterates once per epoch)."""

    def __init__(self, read: Callable[[], Iterator[dict]]):
        self._read = read

    def __iter__(self) -> Iterator[dict]:
        return iter(self._read())


@dataclasses.dataclass(frozen=True)
class TaskData:
    """Where examples come from: local release files per (task, split), else TFDS."""

    local_files: Mapping[Tuple[str, str], Tuple[str, ...]] = dataclasses.field(default_factory=dict)
    tfds_data_dir: Optional[str] = None

    def examples(self, task: Task, split: str) -> Iterable[dict]:
        paths = self.local_files.get((task.name, split))
        if paths:
            return _Reread(lambda: task.local_examples(*paths))
        return _Reread(lambda: task.examples(split, self.tfds_data_dir))

    def describe(self, task: Task, split: str) -> str:
        """Which data `examples` reads, with its version: what a score was computed on."""
        paths = self.local_files.get((task.name, split))
        if paths:
            return f"local files {', '.join(paths)} ({task.local_format.description})"
        return f"tfds {tfds_version(task.splits[split], self.tfds_data_dir)}"

    def validation_splits(self, task: Task) -> List[str]:
        local = sorted(split for name, split in self.local_files if name == task.name and split != "train")
        if any(name == task.name for name, _ in self.local_files):
            return local
        return [split for split in task.splits if split.startswith("validation")]


@dataclasses.dataclass(frozen=True)
class Selection:
    """The tasks of a run: those trained on, with their mixing rates, and those evaluated."""

    name: str
    rates: Mapping[str, float]  # trained task name -> rate
    evaluated: Tuple[Task, ...]
    lengths: SequenceLengths  # of the tasks trained and evaluated: none of their sequences is cut
    # The share of the pre-training objective over DataConfig.source mixed in (Section 3.5.2's
    # multi-task training with the unsupervised task); the tasks share the rest by `rates`.
    pretraining_rate: float = 0.0

    @property
    def trained(self) -> Tuple[Task, ...]:
        return tuple(tasks.get(name) for name in self.rates)


PRETRAINING = "pretraining"


def select(task: Optional[str] = None, mixture: Optional[str] = None,
           mixing: Mixing | str = Mixing.EXAMPLES_PROPORTIONAL,
           limit: int = mixtures.DEFAULT_SIZE_LIMIT, temperature: float = 1.0,
           with_pretraining: bool = False, training: bool = True) -> Selection:
    """One task (rate 1), or a mixture with the paper's mixing strategy and size limit K
    (model/tasks/mixtures.py); `with_pretraining` mixes in the pre-training objective as one more
    member, whose data set is larger than any limit: it counts K examples, as in the paper. A
    task never trained on (WNLI, as in the paper) is refused for training and has no rate in a
    mixture; it can be evaluated (`training=False`)."""
    if bool(task) == bool(mixture):
        raise ValueError("give one of --task and --mixture")
    if task:
        chosen = tasks.get(task)
        if training and not chosen.trained_on:
            raise ValueError(f"{task} is never trained on (as in the paper: GLUE's WNLI and its "
                             "training set are adversarial); evaluate it with --mode eval")
        mix = tasks.Mixture(task, (chosen,))
    else:
        mix = tasks.get_mixture(mixture)
    if not mix.trained_tasks:
        return Selection(mix.name, {}, mix.tasks, mix.lengths)
    sizes = mix.scaled_sizes()
    if with_pretraining:
        sizes[PRETRAINING] = limit
    rates = mixtures.rates_of(sizes, mixing, limit=limit, temperature=temperature)
    pretraining_rate = rates.pop(PRETRAINING, 0.0)
    return Selection(mix.name, {k: v / (1 - pretraining_rate) for k, v in rates.items()}, mix.tasks,
                     mix.lengths, pretraining_rate)


# The run's lengths that a selection's lengths replace, unless the gin config binds them itself.
_LENGTH_PARAMETERS = {"DataConfig.inputs_length": "inputs", "DataConfig.targets_length": "targets",
                      "TrainConfig.decode_length": "targets"}


def _bound_in_gin(parameter: str) -> bool:
    try:
        gin.query_parameter(parameter)
    except ValueError:  # gin's answer for a parameter that no file or --gin_param binds
        return False
    return True


def with_task_lengths(run: train.Run, lengths: SequenceLengths) -> train.Run:
    """The run trimming and decoding at the tasks' lengths (the decode length is the targets
    length, as in the t5 library). A length that the gin config binds stays as bound (a user's
    explicit choice, e.g. shorter sequences for a quick run), with a warning when it cuts
    sequences that the tasks' lengths would keep. The tasks' lengths are bound in gin and the
    run's data and train configs made again from gin, so that the operative config that
    training writes records the lengths used (not the dataclasses' defaults)."""
    for parameter, key in _LENGTH_PARAMETERS.items():
        needed = getattr(lengths, key)
        if not _bound_in_gin(parameter):
            gin.bind_parameter(parameter, needed)
        elif gin.query_parameter(parameter) < needed:
            train.progress(f"warning: {parameter} = {gin.query_parameter(parameter)} as bound, "
                           f"shorter than the tasks' {key} ({needed} tokens): longer ones are cut")
    return dataclasses.replace(run, data_config=train.DataConfig(), train_config=train.TrainConfig())


def tokenized(pairs: tf.data.Dataset, vocabulary: Vocabulary, lengths: Mapping[str, int]) -> tf.data.Dataset:
    """Text pairs -> token ids, each trimmed to its length - 1 and ended by EOS (T5's
    append_eos_after_trim)."""
    def encode(batch):
        return {key: vocabulary.tf_encode(batch[key]) for key in ("inputs", "targets")}

    def end(example):
        return {key: tf.concat([tf.cast(ids[:lengths[key] - 1], tf.int32), [EOS_ID]], 0)
                for key, ids in example.items()}

    return pairs.batch(TOKENIZE_BATCH).map(encode).unbatch().map(end)


def mixed_pairs(selection: Selection, data: TaskData, seed: int) -> tf.data.Dataset:
    """The training text pairs without end: each task's pairs shuffled epoch after epoch, drawn
    by the mixing rates (one task: all from it). Deterministic for a given seed."""
    streams = []
    for number, task in enumerate(selection.trained):
        pairs = tf_data.dataset(task, data.examples(task, "train"), training=True)
        streams.append(pairs.shuffle(SHUFFLE_BUFFER, seed=seed + number,
                                     reshuffle_each_iteration=True).repeat())
    return tf.data.Dataset.sample_from_datasets(streams, weights=list(selection.rates.values()),
                                                seed=seed)


def token_examples(run: train.Run, selection: Selection, data: TaskData) -> tf.data.Dataset:
    """{"inputs", "targets"} token ids without end: the mixed training pairs, tokenized, with the
    pre-training objective's examples over DataConfig.source mixed in at
    `selection.pretraining_rate`."""
    seed = run.data_config.seed
    lengths = run.data_config.sequence_lengths
    examples = tokenized(mixed_pairs(selection, data, seed), run.vocabulary, lengths)
    if not selection.pretraining_rate:
        return examples
    text = inputs.text_dataset_from_source(run.data_config.source).repeat()
    unsupervised = objectives.apply_objective(inputs.tokenize(text, run.vocabulary),
                                              run.data_config.objective, lengths,
                                              run.vocabulary.token_ids, seed)
    return tf.data.Dataset.sample_from_datasets(
        [unsupervised, examples], weights=[selection.pretraining_rate, 1 - selection.pretraining_rate],
        seed=seed)


def training_examples(run: train.Run, selection: Selection, data: TaskData) -> train.Examples:
    """The model features of `token_examples`, packed."""
    lengths = run.data_config.sequence_lengths
    return lambda: features.convert_features(token_examples(run, selection, data),
                                             run.feature_converter, lengths, pack=True)


def eval_sets(selection: Selection, data: TaskData) -> List[evaluation.EvalSet]:
    """Every validation split of every evaluated task (examples without a label are skipped)."""
    sets = []
    for task in selection.evaluated:
        for split in data.validation_splits(task):
            labelled = [e for e in data.examples(task, split) if e.get("label", 0) != -1]
            sets.append(evaluation.eval_set(task, split, labelled, data.describe(task, split)))
    return sets


def finetune(run: train.Run, selection: Selection, data: TaskData, decoding: DecodingConfig,
             max_steps: Optional[int] = None) -> Dict[str, dict]:
    """Trains (keeping every checkpoint), evaluates every checkpoint (decoded as `decoding`
    says), keeps the best per task and the newest keep_checkpoint_max. Returns
    {"<task>/<split>": best}."""
    if not run.train_config.init_checkpoint:
        train.progress("warning: no TrainConfig.init_checkpoint: fine-tuning from random weights")
    sets = eval_sets(selection, data)
    keep_all = dataclasses.replace(run, train_config=dataclasses.replace(run.train_config,
                                                                          keep_checkpoint_max=0))
    train.train(keep_all, training_examples(run, selection, data), run.vocabulary.vocab_size, max_steps)
    best = evaluation.evaluate_checkpoints(run, sets, decoding)
    newest = sorted(evaluation.checkpoint_steps(run.model_dir))[-run.train_config.keep_checkpoint_max:]
    evaluation.keep_only(run.model_dir, set(newest) | {b["step"] for b in best.values()})
    return best


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("tasks (finetune, eval, decode)")
    group.add_argument("--task", help=f"one task: {', '.join(tasks.names())}")
    group.add_argument("--mixture", help=f"a mixture: {', '.join(tasks.mixture_names())}")
    group.add_argument("--mixing", default=Mixing.EXAMPLES_PROPORTIONAL.value,
                       choices=[m.value for m in Mixing], help="mixing strategy of a mixture")
    group.add_argument("--mixing_limit", type=int, default=mixtures.DEFAULT_SIZE_LIMIT,
                       help="K, the size limit of examples-proportional and temperature mixing "
                            "(default 2^21)")
    group.add_argument("--temperature", type=float, default=1.0, help="temperature-scaled mixing")
    group.add_argument("--with_pretraining", action="store_true",
                       help="mix in the pre-training objective (DataConfig.objective over "
                            "DataConfig.source) as one more member of size K")
    group.add_argument("--task_files", action="append", default=[], metavar="TASK:SPLIT=PATH[,PATH]",
                       help="a task's original release files for a split, instead of TFDS")
    group.add_argument("--tfds_data_dir", help="where the tasks' TFDS datasets are prepared")


def uses_tasks(args: argparse.Namespace) -> bool:
    return bool(args.task or args.mixture)


def task_data(args: argparse.Namespace) -> TaskData:
    files = parse_task_files(args.task_files)
    for name, _ in files:
        tasks.get(name)  # an unknown task fails here
    return TaskData(files, args.tfds_data_dir)


def run_mode(mode: str, run: train.Run, args: argparse.Namespace) -> Dict[str, dict]:
    """finetune: train, evaluate, keep the best; eval: score the checkpoints not yet scored;
    decode: score the newest checkpoint (its predictions are written beside the scores)."""
    selection = select(args.task, args.mixture, args.mixing, args.mixing_limit, args.temperature,
                       args.with_pretraining, training=mode == "finetune")
    data = task_data(args)
    run = with_task_lengths(run, selection.lengths)
    decoding = DecodingConfig()
    if mode == "finetune":
        return finetune(run, selection, data, decoding)
    sets = eval_sets(selection, data)
    if mode == "eval":
        return evaluation.evaluate_checkpoints(run, sets, decoding)
    newest = max(evaluation.checkpoint_steps(run.model_dir) or [0])
    evaluation.evaluate_checkpoints(run, sets, decoding, steps=[newest])
    return {s.name: {"step": newest, "scores": evaluation.recorded_scores(run.model_dir, s)[newest]}
            for s in sets}
