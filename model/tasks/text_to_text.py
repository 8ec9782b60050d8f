"""Fine-tuning, evaluation and decoding on the paper's tasks text to text: the task run of every
family with a feature converter (T5's; model/families/base.py's default `task_plan`):

    python -m model finetune --task glue_rte --model_dir DIR \
        --gin_file sizes/base.gin --gin_param "TrainConfig.init_checkpoint = 'PRETRAINED_DIR'" \
        --gin_param "DataConfig.vocabulary = 'spm.model'"
    python -m model finetune --mixture glue ...        (multi-task, Section 3.5.2)
    python -m model finetune --mixture all --with_pretraining --mixing_limit 524288 \
        --gin_file pretrain.gin ...   (multi-task pre-training: C4's objective mixed in, from scratch;
                                       the size limit K is 2^21 unless --mixing_limit gives one)
    python -m model eval --task glue_rte ...           (every checkpoint not yet scored)
    python -m model decode --task glue_rte ...         (the newest checkpoint)

A fine-tuning run (model/gin/finetune.gin: constant learning rate 0.001, 2^18 steps, a checkpoint
every 5,000) warm-starts from the pre-trained checkpoint (the global step continues), trains on
the task's (or the mixture's) training pairs, keeping every checkpoint while it trains; then each
checkpoint is decoded (greedily, as the paper's Section 3; `--gin_file beam_search.gin` for its
final models' beam search on WMT and CNN/DM) and scored on every validation split
(model/tasks/evaluation.py), the best per task is reported with the GLUE and SuperGLUE averages, and
only those and the newest `TrainConfig.keep_checkpoint_max` checkpoints are kept.

Sequences are trimmed to the task's lengths, and decoded up to its targets length
(`Task.lengths`, the t5 library's per-task values; a mixture takes the longest of its members),
unless gin binds `DataConfig.inputs_length`, `DataConfig.targets_length` or
`TrainConfig.decode_length` (pretrain.gin, used for multi-task pre-training, binds span
corruption's 512/114): a bound length wins, with a warning when it cuts the tasks' sequences.
The lengths taken from the tasks are derived into the run's configs (gin is not rebound) and
recorded with its checkpoints in `run_settings.json` (runs.recorded_settings).
WNLI is never trained on (as in the paper); it can be evaluated.

Task data comes from TFDS (`--tfds_data_dir`, or TFDS's default) unless `--task_files
TASK:SPLIT=PATH[,PATH...]` gives the task's original release files for a split (read by the
task's local reader, so everything runs offline); with local files, the validation splits are
those given.
"""
from __future__ import annotations

import dataclasses
from typing import List, Mapping

import tensorflow as tf

from model.data import features, inputs, objectives
from model.data.vocabulary import EOS_ID, Vocabulary
from model.tasks import SequenceLengths, evaluation, tf_data
from model.tasks.selection import Selection, TaskData, TaskRequest
from model.tasks.task_runs import TaskPlan, Training
from model.trainer import runs
from model.trainer.decoding import DecodingConfig

TOKENIZE_BATCH = 64
# Shuffle buffer of the training pairs of each task (the whole task when smaller).
SHUFFLE_BUFFER = 2 ** 16


# The run's lengths that a selection's lengths replace, unless the gin config binds them itself:
# {gin key: (the config of the run it is in, its field, the tasks' length it takes)}.
_LENGTH_PARAMETERS = {"DataConfig.inputs_length": ("data_config", "inputs_length", "inputs"),
                      "DataConfig.targets_length": ("data_config", "targets_length", "targets"),
                      "TrainConfig.decode_length": ("train_config", "decode_length", "targets")}


def with_task_lengths(run: runs.Run, lengths: SequenceLengths) -> runs.Run:
    """The run trimming and decoding at the tasks' lengths (the decode length is the targets
    length, as in the t5 library). A length that the gin config binds stays as bound (a user's
    explicit choice, e.g. shorter sequences for a quick run), with a warning when it cuts
    sequences that the tasks' lengths would keep. The lengths taken from the tasks are the
    run's derived settings, recorded with its checkpoints (runs.RUN_SETTINGS_NAME)."""
    derived = {}
    for parameter, (config, field, key) in _LENGTH_PARAMETERS.items():
        needed, bound = getattr(lengths, key), runs.gin_value(parameter)
        if bound is None:
            derived[parameter] = needed
            run = dataclasses.replace(run, **{config: dataclasses.replace(
                getattr(run, config), **{field: needed})})
        elif bound < needed:
            runs.progress(f"warning: {parameter} = {bound} as bound, "
                           f"shorter than the tasks' {key} ({needed} tokens): longer ones are cut")
    return run.with_derived(derived)


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


def token_examples(run: runs.Run, selection: Selection, data: TaskData) -> tf.data.Dataset:
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


def training_examples(run: runs.Run, selection: Selection, data: TaskData) -> runs.Examples:
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
    if not sets:
        raise ValueError(f"{selection.name}: no split of its tasks to evaluate")
    return sets


def plan(run: runs.Run, selection: Selection, data: TaskData, decoding: DecodingConfig,
         training: bool) -> TaskPlan:
    """The task run of `selection`: every checkpoint decoded (as `decoding` says) and scored on
    every validation split; `training`: trained on the mixed training pairs, through the run's
    feature converter."""
    sets = eval_sets(selection, data)
    trained_on = None
    if training:
        if not run.train_config.init_checkpoint:
            runs.progress("warning: no TrainConfig.init_checkpoint: fine-tuning from random weights")
        trained_on = Training(training_examples(run, selection, data))
    return TaskPlan(run, sets, evaluation.decoded(run, decoding, sets), trained_on,
                    selection.mixture)


def task_plan(run: runs.Run, request: TaskRequest, training: bool) -> TaskPlan:
    """The text-to-text task run of the request's task or mixture (every family with a feature
    converter, unless it supplies its own): trimmed and decoded at the tasks' lengths, decoded as
    DecodingConfig says."""
    selection = request.selection(training=training)
    return plan(with_task_lengths(run, selection.lengths), selection, request.data(),
                DecodingConfig(), training)
