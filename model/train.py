"""Pre-train, fine-tune, evaluate and decode with one command line and gin configuration.

    python -m model.train --mode pretrain --model_dir DIR \
        --gin_file sizes/base.gin --gin_file architectures/encoder_decoder.gin \
        --gin_file pretrain.gin --gin_param "DataConfig.source = 'tfds:t5_c4/en@/data/tfds'"

Gin files are looked up in model/gin/ (see model/TRAINING.md). Training runs through
TPUEstimator: on CPU with `use_tpu=False` and a PlacementMeshImpl mesh, on TPU with SimdMeshImpl,
with the same model function (model/model_fn.py).
"""
from __future__ import annotations

import os
import sys

VERBOSITY_FLAG = "--verbosity"


def quiet_libraries(verbosity: int) -> None:
    """Keeps TensorFlow's start-up and deprecation messages off stderr unless `verbosity` asks:
    0 errors only, 1 also library warnings, 2 also library info. Must run before TensorFlow is
    imported for its C++ log level to apply."""
    os.environ["TF_CPP_MIN_LOG_LEVEL"] = {0: "3", 1: "1"}.get(verbosity, "0")
    import logging
    import warnings
    level = {0: logging.ERROR, 1: logging.WARNING}.get(verbosity, logging.INFO)
    logging.getLogger("tensorflow").setLevel(level)
    logging.getLogger("absl").setLevel(level)
    if verbosity == 0:
        warnings.simplefilter("ignore")


def _verbosity(argv) -> int:
    for i, word in enumerate(argv):
        if word == VERBOSITY_FLAG and i + 1 < len(argv) and argv[i + 1].isdigit():
            return int(argv[i + 1])
        if word.startswith(VERBOSITY_FLAG + "=") and word.split("=", 1)[1].isdigit():
            return int(word.split("=", 1)[1])
    return 0


if __name__ == "__main__":
    quiet_libraries(_verbosity(sys.argv[1:]))
    # Run as the module `model.train`, not `__main__`: the modules that import it (model.finetune)
    # then share its gin configurables instead of registering a second copy.
    from model import train as _train_module
    sys.exit(_train_module.main())

import argparse  # noqa: E402  (after the log levels above)
import dataclasses  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
from typing import Callable, Dict, List, Optional, Sequence, Tuple  # noqa: E402

import gin  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402
from tensorflow.core.protobuf import rewriter_config_pb2  # noqa: E402
from tensorflow_estimator.python.estimator.tpu import tpu_config, tpu_estimator  # noqa: E402

from model import (bert_inputs, bert_tasks, families, hooks, input_position,  # noqa: E402
                   inputs, structure, warm_start)
from model.finetune_methods import FineTuningMethod  # noqa: E402
from model.architectures import ModelConfig  # noqa: E402
from model.decoding import strip_after_eos  # noqa: E402
from model.mesh import MeshConfig  # noqa: E402
from model.model_fn import (ModelFnSetup, OptimizationConfig, PrecisionConfig,  # noqa: E402
                            make_model_fn)
from model.vocabulary import EOS_ID, Vocabulary  # noqa: E402
from model.wordpiece import WordPieceVocabulary  # noqa: E402

GIN_DIR = pathlib.Path(__file__).resolve().parent / "gin"
MODES = ("pretrain", "finetune", "eval", "decode", "export")

Examples = Callable[[], tf.data.Dataset]


@gin.configurable
@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where text comes from and how it becomes examples (see model/inputs.py for `source`).

    `eval_source` defaults to the validation split of a `tfds:` source."""

    source: str = ""
    eval_source: str = ""
    vocabulary: str = ""
    objective: str = "span_corruption"
    inputs_length: int = 512
    targets_length: int = 114
    seed: int = 0
    # Pre-training rows shuffled within blocks of this many packing windows (model/inputs.py
    # PretrainingStream); 0 keeps document order, as T5's. gpt1/pretrain.gin sets it.
    shuffle_windows: int = 0

    @property
    def sequence_lengths(self) -> Dict[str, int]:
        return {"inputs": self.inputs_length, "targets": self.targets_length}


@gin.configurable
@dataclasses.dataclass(frozen=True)
class TrainConfig:
    """Steps, batch and checkpointing. The batch is given in tokens, as in the paper (2^16).

    `train_steps` counts this run's steps: from 0 when pre-training, from the warm-start
    checkpoint's step when fine-tuning (the global step continues, as in T5)."""

    tokens_per_batch: int = 65536
    train_steps: int = 524288
    save_checkpoints_steps: int = 5000
    keep_checkpoint_max: int = 5
    eval_steps: Optional[int] = None  # None: the whole validation set
    eval_batch_size: int = 128
    decode_length: int = 114
    iterations_per_loop: int = 100
    use_tpu: bool = False
    tpu: str = ""
    # 0 lets TensorFlow choose; the benchmark and tests pin them for stable timings.
    intra_op_threads: int = 0
    inter_op_threads: int = 0
    init_checkpoint: Optional[str] = None
    # Regular expressions of variables that warm start may leave freshly initialised.
    warm_start_fresh: Tuple[str, ...] = ()
    # Graph-level seed: the same initial weights (and dropout masks) in every run of a config.
    random_seed: int = 0


def checkpoint_step(model_dir: str) -> int:
    """Global step of the newest checkpoint in `model_dir` (0 when there is none)."""
    latest = tf.train.latest_checkpoint(model_dir)
    return int(tf.train.load_variable(latest, tf.GraphKeys.GLOBAL_STEP)) if latest else 0


def feature_length(dataset: tf.data.Dataset) -> int:
    """The longest feature of one (unbatched) example: what a token budget is divided by."""
    return max(int(spec.shape[0]) for spec in dataset.element_spec.values())


def batch_size_for(train_config: TrainConfig, length: int) -> int:
    batch = train_config.tokens_per_batch // length
    if batch < 1:
        raise ValueError(f"tokens_per_batch {train_config.tokens_per_batch} is less than one "
                         f"sequence of {length} tokens")
    return batch


def run_config(train_config: TrainConfig, model_dir: str, cluster=None) -> tpu_config.RunConfig:
    """TPUEstimator's RunConfig, as T5's `utils.get_estimator` makes it on TPU: one core per
    replica (Mesh TensorFlow's SIMD lowering needs the model replicated on every core, each
    receiving the whole batch: BROADCAST), and TensorFlow's meta-optimizer off (slow start-up,
    little gain on TPU)."""
    session_config = tf.ConfigProto(
        intra_op_parallelism_threads=train_config.intra_op_threads,
        inter_op_parallelism_threads=train_config.inter_op_threads,
        allow_soft_placement=True)
    if train_config.use_tpu:
        session_config.graph_options.rewrite_options.disable_meta_optimizer = (
            rewriter_config_pb2.RewriterConfig.ON)
    return tpu_config.RunConfig(
        cluster=cluster,
        model_dir=model_dir,
        session_config=session_config,
        tf_random_seed=train_config.random_seed,
        # Checkpoints come from the model function's saver hook (it copies mesh slices first).
        save_checkpoints_steps=None,
        save_checkpoints_secs=None,
        save_summary_steps=None,
        log_step_count_steps=None,
        tpu_config=tpu_config.TPUConfig(
            iterations_per_loop=train_config.iterations_per_loop,
            num_cores_per_replica=1,
            per_host_input_for_training=tpu_config.InputPipelineConfig.BROADCAST))


def make_estimator(model_config: ModelConfig, mesh_config: MeshConfig,
                   optimization: OptimizationConfig, train_config: TrainConfig, model_dir: str,
                   vocab_size: int, batch_size: int,
                   precision: PrecisionConfig = PrecisionConfig(),
                   fine_tuning: FineTuningMethod = FineTuningMethod(), beam_size: int = 1,
                   alpha: float = 0.6) -> tpu_estimator.TPUEstimator:
    setup = ModelFnSetup(
        model_config=model_config, mesh_config=mesh_config, optimization=optimization,
        vocab_size=vocab_size, model_dir=model_dir,
        save_checkpoints_steps=train_config.save_checkpoints_steps,
        keep_checkpoint_max=train_config.keep_checkpoint_max,
        decode_length=train_config.decode_length, use_tpu=train_config.use_tpu,
        precision=precision, init_checkpoint=train_config.init_checkpoint,
        warm_start_fresh=tuple(train_config.warm_start_fresh), fine_tuning=fine_tuning,
        beam_size=beam_size, alpha=alpha)
    cluster = None
    if train_config.use_tpu:
        cluster = tf.distribute.cluster_resolver.TPUClusterResolver(train_config.tpu)
    return tpu_estimator.TPUEstimator(
        model_fn=make_model_fn(setup), config=run_config(train_config, model_dir, cluster),
        use_tpu=train_config.use_tpu, train_batch_size=batch_size, eval_batch_size=batch_size,
        predict_batch_size=batch_size)


@dataclasses.dataclass
class Run:
    """One configured run: the gin-bound configs plus the vocabulary."""

    model_config: ModelConfig
    mesh_config: MeshConfig
    optimization: OptimizationConfig
    data_config: DataConfig
    train_config: TrainConfig
    model_dir: str
    precision: PrecisionConfig = PrecisionConfig()
    fine_tuning: FineTuningMethod = FineTuningMethod()

    @property
    def feature_converter(self) -> str:
        return families.family_class(self.model_config.architecture).converter

    @property
    def vocabulary(self) -> Vocabulary:
        if not self.data_config.vocabulary:
            raise ValueError("DataConfig.vocabulary (a SentencePiece .model path) is not set")
        if self.feature_converter == "bert":
            # BERT reads a WordPiece vocab.txt (model/wordpiece.py).
            return WordPieceVocabulary(self.data_config.vocabulary)
        return Vocabulary(self.data_config.vocabulary)

    def bert_stream(self, source: str) -> bert_inputs.BertPretrainingStream:
        # SegaBERT (a BERT) reads structured windows with their indices instead of NSP pairs.
        stream = (structure.SegaBertStream if self.model_config.architecture == "segabert"
                  else bert_inputs.BertPretrainingStream)
        return stream(source, self.vocabulary, self.data_config.inputs_length,
                      self.data_config.seed, bert_inputs.BertDataConfig())

    def examples(self, split: str) -> tf.data.Dataset:
        """Packed model features of the training or validation text."""
        source = self.data_config.source
        if not source:
            raise ValueError("DataConfig.source is not set (a tfds:NAME@DIR spec or a file path)")
        if self.feature_converter == "bert":
            if split != "train" and not self.data_config.eval_source:
                raise ValueError("BERT evaluates on DataConfig.eval_source; it is not set")
            return self.bert_stream(source if split == "train" else self.data_config.eval_source)()
        if split == "train":
            text = inputs.text_dataset_from_source(source)
        elif self.data_config.eval_source:
            text = inputs.text_dataset_from_source(self.data_config.eval_source)
        elif source.startswith("tfds:"):
            name, _, data_dir = source[len("tfds:"):].partition("@")
            text = inputs.tfds_text_dataset(name, "validation", data_dir or None)
        else:
            raise ValueError("DataConfig.eval_source is needed when the source is not tfds:")
        return inputs.pretraining_dataset(
            text, self.vocabulary, self.data_config.objective,
            self.data_config.sequence_lengths, self.feature_converter,
            seed=self.data_config.seed, pack=True)

    def training_examples(self) -> inputs.PretrainingStream:
        """The training text's examples, epoch after epoch, resumable at a recorded position."""
        if not self.data_config.source:
            raise ValueError("DataConfig.source is not set (a tfds:NAME@DIR spec or a file path)")
        if self.feature_converter == "bert":
            return self.bert_stream(self.data_config.source)
        return inputs.PretrainingStream(
            self.data_config.source, self.vocabulary, self.data_config.objective,
            self.data_config.sequence_lengths, self.feature_converter, seed=self.data_config.seed,
            shuffle_windows=self.data_config.shuffle_windows)

    def estimator(self, batch_size: int, beam_size: int = 1, alpha: float = 0.6
                  ) -> tpu_estimator.TPUEstimator:
        return make_estimator(self.model_config, self.mesh_config, self.optimization,
                              self.train_config, self.model_dir,
                              self.vocabulary.vocab_size, batch_size, self.precision,
                              self.fine_tuning, beam_size, alpha)


def first_step(run: Run) -> int:
    """The global step a run starts from: the warm-start checkpoint's when the run's family
    continues training from it (T5), else 0."""
    family = families.family_class(run.model_config.architecture)
    return warm_start.first_step(run.train_config.init_checkpoint,
                                 family.warm_start_continues_training)


def train(run: Run, examples: Examples, vocab_size: int, max_steps: Optional[int] = None) -> int:
    """Trains `max_steps` steps (default TrainConfig.train_steps) past the first step (0, or the
    warm-start checkpoint's), resuming from the newest checkpoint with the same data position.
    Returns the final global step. The operative gin config is written once the model is built."""
    pathlib.Path(run.model_dir).mkdir(parents=True, exist_ok=True)
    base_step = first_step(run)
    start_step = checkpoint_step(run.model_dir) or base_step
    batch_size = batch_size_for(run.train_config, feature_length(examples()))
    estimator = make_estimator(run.model_config, run.mesh_config, run.optimization,
                               run.train_config, run.model_dir, vocab_size, batch_size,
                               run.precision, run.fine_tuning)
    target = base_step + (max_steps or run.train_config.train_steps)
    if start_step < target:
        progress(f"training {run.model_config.architecture} in {run.model_dir}: "
                 f"step {start_step} -> {target}, {batch_size} sequences per batch")
        try:
            # The input resumes at the position recorded with the checkpoint (model/input_position.py).
            every = run.train_config.save_checkpoints_steps
            is_checkpoint_step = lambda step: (base_step + step) % every == 0 or base_step + step == target
            estimator.train(lambda params: input_position.training_batches(
                examples, params["batch_size"], start_step - base_step, run.model_dir, is_checkpoint_step),
                max_steps=target)
        except tf.errors.InvalidArgumentError as error:
            if hooks.is_non_finite_loss(error):
                raise hooks.error_for_failed_step(run.model_dir) from None
            raise
        except tf.train.NanLossDuringTrainingError:
            # Estimator's own NaN check, should it see the loss first: the same message.
            raise hooks.error_for_failed_step(run.model_dir) from None
    return checkpoint_step(run.model_dir)


def progress(message: str) -> None:
    """A progress line for the person at the terminal (stderr; results go to stdout)."""
    print(message, file=sys.stderr, flush=True)


def evaluate(run: Run, examples: Examples, vocab_size: int) -> Dict[str, float]:
    """Validation loss and token accuracy of the newest checkpoint (also in TensorBoard)."""
    if not tf.train.latest_checkpoint(run.model_dir):
        raise FileNotFoundError(f"no checkpoint to evaluate in {run.model_dir}")
    batch_size = min(run.train_config.eval_batch_size, max(1, run.train_config.tokens_per_batch
                                                            // feature_length(examples())))
    estimator = make_estimator(run.model_config, run.mesh_config, run.optimization,
                               run.train_config, run.model_dir, vocab_size, batch_size,
                               run.precision)
    progress(f"evaluating {tf.train.latest_checkpoint(run.model_dir)}")
    results = estimator.evaluate(
        lambda params: examples().batch(params["batch_size"], drop_remainder=True),
        steps=run.train_config.eval_steps, name="validation")
    if "token_loss" in results:
        metrics = {"loss": float(results["token_loss"]),
                   "token_accuracy": float(results["token_accuracy"])}
    else:  # a family with other metrics (BERT's masked_lm_*, next_sentence_*)
        metrics = {name: float(value) for name, value in results.items()
                   if name not in ("loss", "global_step")}
    metrics["step"] = int(results["global_step"])
    return metrics


def encode_inputs(texts: Sequence[str], vocabulary: Vocabulary, length: int) -> np.ndarray:
    """Token ids + EOS, truncated and zero padded to `length`: the decode mode's input."""
    rows = np.zeros([len(texts), length], np.int32)
    for row, text in zip(rows, texts):
        ids = vocabulary.encode(text)[:length - 1] + [EOS_ID]
        row[:len(ids)] = ids
    return rows


def decode(run: Run, texts: Sequence[str], inputs_length: int) -> List[str]:
    """Greedy decodes of `texts` by the newest checkpoint."""
    if not tf.train.latest_checkpoint(run.model_dir):
        raise FileNotFoundError(f"no checkpoint to decode with in {run.model_dir}")
    if not texts:
        return []
    vocabulary = run.vocabulary
    ids = encode_inputs(texts, vocabulary, inputs_length)
    batch_size = min(len(texts), run.train_config.eval_batch_size)
    padded = np.concatenate([ids, np.zeros([-len(ids) % batch_size, inputs_length], np.int32)])
    estimator = run.estimator(batch_size)
    predictions = estimator.predict(
        lambda params: tf.data.Dataset.from_tensor_slices({"inputs": padded}).batch(
            params["batch_size"], drop_remainder=True),
        yield_single_examples=True)
    outputs = [vocabulary.decode(strip_after_eos(p["outputs"])) for p in predictions]
    return outputs[:len(texts)]


def parse_gin(gin_files: Sequence[str], gin_params: Sequence[str]) -> None:
    """Parses gin files (paths, or names relative to model/gin/) and bindings."""
    paths = []
    for name in gin_files:
        path = pathlib.Path(name) if pathlib.Path(name).is_file() else GIN_DIR / name
        if not path.is_file():
            raise FileNotFoundError(f"gin file {name} not found (nor under {GIN_DIR})")
        paths.append(str(path))
    gin.parse_config_files_and_bindings(paths, gin_params, finalize_config=False)


OPERATIVE_CONFIG_NAME = "operative_config.gin"  # hooks.py's GinConfigSaverHook writes it
# Modes that work on a trained run: they read its recorded settings (recorded_bindings).
MODES_ON_A_RUN = ("eval", "decode", "export")
# Where a run ran rather than what it trained: a later command takes these from its own flags.
MACHINE_SETTINGS = frozenset({"TrainConfig.use_tpu", "TrainConfig.tpu",
                              "TrainConfig.intra_op_threads", "TrainConfig.inter_op_threads",
                              "MeshConfig.mesh_shape", "MeshConfig.layout"})
# The sequence lengths a task run takes from its tasks (model/finetune.py with_task_lengths).
SEQUENCE_LENGTH_SETTINGS = frozenset({"DataConfig.inputs_length", "DataConfig.targets_length",
                                      "TrainConfig.decode_length"})


def recorded_bindings(model_dir: str, for_tasks: bool = False) -> Dict[str, object]:
    """The bindings a run's operative config records (the model and its sizes, family configs,
    vocabulary and lengths, schedule...), by gin key, with the mode scope it trained in
    (`finetune/`, `pretrain/`) dropped so they hold in any mode; a mode-scoped binding wins over
    an unscoped one of the same key, as it did in the run. The machine's settings are left out
    (MACHINE_SETTINGS), and so are macros (the bindings hold their values). `for_tasks` (a
    command with --task or --mixture): sequence lengths recorded outside fine-tuning (a
    pre-training run's) are left out too, for the tasks to set; a fine-tuning run's are its
    tasks'. {} without a config."""
    path = pathlib.Path(model_dir) / OPERATIVE_CONFIG_NAME
    if not path.is_file():
        return {}
    parser = gin.config_parser.ConfigParser(path.read_text(),
                                            gin.config.ParserDelegate(skip_unknown=True))
    bindings: Dict[str, object] = {}
    for statement in parser:
        if not isinstance(statement, gin.config_parser.BindingStatement) or not statement.arg_name:
            continue
        scopes = [s for s in statement.scope.split("/") if s] if statement.scope else []
        kept = [s for s in scopes if s not in MODES]
        name = f"{statement.selector}.{statement.arg_name}"
        if name in MACHINE_SETTINGS or (for_tasks and name in SEQUENCE_LENGTH_SETTINGS
                                        and "finetune" not in scopes):
            continue
        key = "/".join(kept + [name])
        if len(kept) < len(scopes) or key not in bindings:
            bindings[key] = statement.value
    return bindings


def apply_recorded_bindings(model_dir: str, for_tasks: bool = False) -> Dict[str, object]:
    """Binds what `model_dir`'s run recorded (recorded_bindings); returns what was bound. A
    setting this code no longer has is skipped with a warning."""
    applied = {}
    for key, value in recorded_bindings(model_dir, for_tasks).items():
        try:
            gin.bind_parameter(key, value)
        except ValueError as error:
            progress(f"warning: the run's recorded {key} is not a setting here, skipped ({error})")
            continue
        applied[key] = value
    return applied


def warn_overrides(recorded: Dict[str, object], model_dir: str) -> None:
    """Says on stderr which recorded settings the command line's gin files and bindings changed."""
    for key, value in recorded.items():
        given = gin.query_parameter(key)
        if given != value:
            progress(f"warning: {key} = {given!r} overrides {value!r} recorded in "
                     f"{pathlib.Path(model_dir) / OPERATIVE_CONFIG_NAME}")


def configured_run(model_dir: str) -> Run:
    """The run that the parsed gin bindings describe (gin fills the dataclass fields)."""
    run = Run(ModelConfig(), MeshConfig(), OptimizationConfig(), DataConfig(), TrainConfig(),
              model_dir, PrecisionConfig(), FineTuningMethod())
    families.family_class(run.model_config.architecture)  # an unknown architecture fails here
    run.fine_tuning.check(run.model_config.adapter_size)
    return run


def resolve_checkpoint(model_dir: str, name: str, task: Optional[str] = None) -> str:
    """The checkpoint `--checkpoint NAME` means: "" the newest of `model_dir`; "best" the one
    `model_dir`/eval/best.json names (for `task` where it names several); a path, or a name as
    best.json and the progress lines print it (`model.ckpt-360`) relative to `model_dir`."""
    from model import evaluation  # it imports this module
    if not name:
        newest = tf.train.latest_checkpoint(model_dir)
        if not newest:
            raise FileNotFoundError(f"no checkpoint in {model_dir}")
        return newest
    if name == "best":
        best_file = pathlib.Path(model_dir) / evaluation.EVAL_DIR / evaluation.BEST_NAME
        if not best_file.is_file():
            raise FileNotFoundError(f"--checkpoint best: no {best_file} (--mode eval --task T "
                                    "writes it)")
        best = json.loads(best_file.read_text())
        named = {entry["checkpoint"] for key, entry in best.items()
                 if not task or key.split("/")[0] == task}
        if len(named) != 1:
            raise ValueError(f"--checkpoint best: {best_file} names {sorted(named) or 'none'}"
                             + (f" for {task}" if task else "; choose one with --task"))
        name = named.pop()
    for candidate in (name, os.path.join(model_dir, name)):
        if tf.io.gfile.exists(candidate + ".index"):
            return candidate
    raise FileNotFoundError(f"--checkpoint {name}: no checkpoint {name} (nor in {model_dir})")


def main(argv: Optional[Sequence[str]] = None) -> int:
    from model import export_hf, finetune, gpt1_finetune  # they import this module
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=MODES, required=True)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--gin_file", action="append", default=[])
    parser.add_argument("--gin_param", action="append", default=[])
    parser.add_argument("--input_file", help="decode: one input text per line")
    parser.add_argument("--output_file", help="decode: where the decodes go (default stdout)")
    parser.add_argument("--export_dir", help="export: where the Hugging Face model goes")
    parser.add_argument("--checkpoint", default="",
                        help="export: the checkpoint, a path or a name in --model_dir "
                             "(model.ckpt-360), or 'best' (eval/best.json's; with --task for "
                             "one task's); default the newest")
    finetune.add_arguments(parser)
    parser.add_argument(VERBOSITY_FLAG, type=int, default=0, choices=(0, 1, 2),
                        help="library messages on stderr: 0 errors only (default), 1 also "
                             "warnings, 2 also TensorFlow's info log")
    args = parser.parse_args(argv)
    quiet_libraries(args.verbosity)
    try:
        default_gin = {"pretrain": ["pretrain.gin"], "finetune": ["finetune.gin"]}
        # eval, decode and export take the run's own settings; flags given again override them.
        recorded = (apply_recorded_bindings(args.model_dir, finetune.uses_tasks(args))
                    if args.mode in MODES_ON_A_RUN else {})
        parse_gin(default_gin.get(args.mode, []) + args.gin_file, args.gin_param)
        warn_overrides(recorded, args.model_dir)
        # In the mode's gin scope: a binding may hold for one mode alone (T5.1.1's
        # `pretrain/ModelConfig.dropout_rate = 0.0`).
        with gin.config_scope(args.mode):
            run = configured_run(args.model_dir)
        if args.mode == "export":
            if not args.export_dir:
                raise ValueError("--mode export needs --export_dir")
            checkpoint = resolve_checkpoint(args.model_dir, args.checkpoint, args.task)
            progress(f"exporting {checkpoint}")
            print(json.dumps(export_hf.export(run, args.export_dir, checkpoint, args.task)))
        elif finetune.uses_tasks(args) and gpt1_finetune.uses_gpt1_head(run):
            print(json.dumps(gpt1_finetune.run_mode(args.mode, run, args)))
        elif finetune.uses_tasks(args) and run.feature_converter == "bert":
            print(json.dumps(bert_tasks.run_mode(args.mode, run, args)))
        elif finetune.uses_tasks(args):
            print(json.dumps(finetune.run_mode(args.mode, run, args)))
        elif args.mode in ("pretrain", "finetune"):
            step = train(run, run.training_examples(), run.vocabulary.vocab_size)
            print(json.dumps({"step": step}))
        elif args.mode == "eval":
            print(json.dumps(evaluate(run, lambda: run.examples("validation"),
                                      run.vocabulary.vocab_size)))
        else:
            if not args.input_file:
                raise ValueError("--mode decode needs --input_file")
            texts = pathlib.Path(args.input_file).read_text().splitlines()
            decodes = decode(run, texts, run.data_config.inputs_length)
            out = "\n".join(decodes) + "\n"
            if args.output_file:
                pathlib.Path(args.output_file).write_text(out)
            else:
                sys.stdout.write(out)
    # Gin reports unknown names as ValueError/KeyError and malformed files as SyntaxError.
    except (ValueError, KeyError, SyntaxError, FileNotFoundError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0

