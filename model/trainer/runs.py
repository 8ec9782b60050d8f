"""A run: its gin-bound configs, its family, and what the trainer does with it (train, evaluate,
decode), plus how a later command recovers a run's recorded settings.

Training runs through TPUEstimator: on CPU with `use_tpu=False` and a PlacementMeshImpl mesh, on
TPU with SimdMeshImpl, with the same model function (model/trainer/model_fn.py). The run's family
(`Run.family`, a class of model/trainer/family.py's `Family` protocol, chosen by the command line
from the registry of model/families/) supplies the vocabulary, the data and the model; nothing here names a family.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import posixpath
import tokenize
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import gin
import numpy as np
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2
from tensorflow_estimator.python.estimator.tpu import tpu_config, tpu_estimator

from model.data import input_position
from model.data.features import FeatureConverter
from model.data.vocabulary import EOS_ID, Vocabulary
from model.trainer import checkpoint_state, hooks, run_paths, warm_start
from model.trainer.family import Family, config_parts, default_family_config, replaced_config
from model.trainer.decoding import strip_after_eos
from model.trainer.finetune_methods import FineTuningMethod
from model.trainer.gin_files import binding_syntax_error, file_syntax_error, gin_path
from model.trainer.mesh import MeshConfig
from model.trainer.model_config import ModelConfig
from model.trainer.model_fn import ModelFnSetup, OptimizationConfig, PrecisionConfig, make_model_fn
from model.trainer.verbosity import progress

MODES = ("pretrain", "finetune", "eval", "decode", "export")
TRAINING_MODES = ("pretrain", "finetune")

Examples = Callable[[], tf.data.Dataset]


@gin.configurable
@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where text comes from and how it becomes examples (see model/data/inputs.py for `source`).

    `eval_source` defaults to the validation split of a `tfds:` source."""

    source: str = ""
    eval_source: str = ""
    vocabulary: str = ""
    objective: str = "span_corruption"
    inputs_length: int = 512
    targets_length: int = 114
    seed: int = 0
    # Pre-training rows shuffled within blocks of this many packing windows (model/data/inputs.py
    # PretrainingStream); 0 keeps document order, as T5's. gpt1/pretrain.gin sets it.
    shuffle_windows: int = 0
    # A `languages:ROOT` source (model/data/language_mixture.py): the languages mixed (none:
    # every one with training text but und) and mT5's exponent, p(L) proportional to |L|^exponent.
    languages: Tuple[str, ...] = ()
    language_exponent: float = 0.3

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
    # A line on stderr every this many steps: steps per second and the time left (0: none).
    progress_steps: int = 100
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


@dataclasses.dataclass
class Run:
    """One configured run: the gin-bound configs and the family (a class of
    model/trainer/family.py's protocol) that reads its data and builds its model."""

    family: "type[Family]"
    model_config: ModelConfig
    mesh_config: MeshConfig
    optimization: OptimizationConfig
    data_config: DataConfig
    train_config: TrainConfig
    model_dir: str
    precision: PrecisionConfig = PrecisionConfig()
    fine_tuning: FineTuningMethod = FineTuningMethod()
    # The family's own config (its `config_class`: BertConfig, GPT1Config; None: the family has
    # none, or its defaults), built once from gin by configured_run; a task run derives its own
    # (with_family_config), recorded with the checkpoints (RUN_SETTINGS_NAME).
    family_config: Any = None
    # {path setting: value} of the paths this run took from its operative config (a later
    # command's: recorded_paths), for the error when one is not there.
    recorded_paths: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # {gin key: value} of the settings this run derived from its tasks rather than took from
    # gin (a task run's sequence lengths), recorded with the checkpoints (RUN_SETTINGS_NAME).
    derived: Mapping[str, Any] = dataclasses.field(default_factory=dict)

    def with_family_config(self, **changes: Any) -> "Run":
        """The run with its family config derived: `changes` replace fields of it (a
        fine-tuning head's kind and size)."""
        config = self.family_config
        if config is None:
            config = default_family_config(self.family.config_class)
        return dataclasses.replace(self, family_config=replaced_config(config, changes))

    def with_derived(self, settings: Mapping[str, Any]) -> "Run":
        """The run with `settings` ({gin key: value}) recorded as derived; the caller puts
        them in the run's configs."""
        return dataclasses.replace(self, derived={**self.derived, **settings})

    @property
    def feature_converter(self) -> "type[FeatureConverter]":
        return self.family.converter

    def checked_path(self, setting: str, value):
        """`value` of a path setting (run_paths.PATH_SETTINGS); one the run's operative config
        recorded that is not there is an error naming the config and the override."""
        if value and self.recorded_paths.get(setting) == value and not run_paths.exists(
                setting, value):
            raise run_paths.missing_recorded_path(
                setting, value, str(pathlib.Path(self.model_dir) / OPERATIVE_CONFIG_NAME))
        return value

    @property
    def vocabulary(self) -> Vocabulary:
        if not self.data_config.vocabulary:
            raise ValueError("DataConfig.vocabulary (the vocabulary file) is not set")
        return self.family.vocabulary(self.checked_path(run_paths.VOCABULARY,
                                                        self.data_config.vocabulary))

    @property
    def model_vocabulary(self) -> Optional[Vocabulary]:
        """The vocabulary the family's model is given (None: the run names none, as a run of
        synthetic examples)."""
        return self.vocabulary if self.data_config.vocabulary else None

    def training_examples(self):
        """The training text's examples, epoch after epoch, resumable at a recorded position
        (model/data/input_position.py)."""
        if not self.data_config.source:
            raise ValueError("DataConfig.source is not set (a tfds:NAME@DIR spec or a file path)")
        self.checked_path(run_paths.SOURCE, self.data_config.source)
        return self.family.training_stream(self)

    def validation_examples(self) -> tf.data.Dataset:
        """Packed model features of the validation text."""
        if not self.data_config.source:
            raise ValueError("DataConfig.source is not set (a tfds:NAME@DIR spec or a file path)")
        self.checked_path(run_paths.EVAL_SOURCE, self.data_config.eval_source)
        if not self.data_config.eval_source:
            self.checked_path(run_paths.SOURCE, self.data_config.source)
        return self.family.validation_examples(self)

    def estimator(self, batch_size: int, vocab_size: Optional[int] = None, beam_size: int = 1,
                  alpha: float = 0.6, session_start: int = 0) -> tpu_estimator.TPUEstimator:
        """The run's estimator, the one way one is built: training it trains
        TrainConfig.train_steps from the run's first step, in a session that starts at
        `session_start` (ModelFnSetup); `vocab_size` by default its vocabulary's, the family
        given that vocabulary (none where the run names none)."""
        train_config = self.train_config
        setup = ModelFnSetup(
            family_class=self.family, model_config=self.model_config, mesh_config=self.mesh_config,
            optimization=self.optimization,
            vocab_size=self.vocabulary.vocab_size if vocab_size is None else vocab_size,
            model_dir=self.model_dir, save_checkpoints_steps=train_config.save_checkpoints_steps,
            keep_checkpoint_max=train_config.keep_checkpoint_max,
            progress_steps=train_config.progress_steps,
            decode_length=train_config.decode_length, train_steps=train_config.train_steps,
            session_start=session_start, use_tpu=train_config.use_tpu,
            precision=self.precision, init_checkpoint=train_config.init_checkpoint,
            warm_start_fresh=tuple(train_config.warm_start_fresh), fine_tuning=self.fine_tuning,
            beam_size=beam_size, alpha=alpha, vocabulary=self.model_vocabulary,
            family_config=self.family_config)
        cluster = None
        if train_config.use_tpu:
            cluster = tf.distribute.cluster_resolver.TPUClusterResolver(train_config.tpu)
        return tpu_estimator.TPUEstimator(
            model_fn=make_model_fn(setup), config=run_config(train_config, self.model_dir, cluster),
            use_tpu=train_config.use_tpu, train_batch_size=batch_size, eval_batch_size=batch_size,
            predict_batch_size=batch_size)


def first_step(run: Run) -> int:
    """The global step a run starts from: the warm-start checkpoint's when the run's family
    continues training from it (T5), else 0."""
    return warm_start.first_step(
        run.checked_path(run_paths.INIT_CHECKPOINT, run.train_config.init_checkpoint),
        run.family.warm_start_continues_training)


def recorded_settings(run: Run) -> Dict[str, Dict[str, Any]]:
    """{gin configurable: {parameter: value}} of what a run's checkpoints record beside the
    operative config: the family's config in full (each gin-configurable part of it) and the
    settings the run derived (`Run.derived`)."""
    settings: Dict[str, Dict[str, Any]] = {}
    for part in config_parts(run.family_config):
        settings[type(part).__name__] = dataclasses.asdict(part)
    for key, value in run.derived.items():
        configurable, parameter = key.rsplit(".", 1)
        settings.setdefault(configurable, {})[parameter] = value
    return settings


def record_settings(run: Run) -> None:
    """Writes `recorded_settings` to the run's RUN_SETTINGS_NAME (once its folder exists)."""
    path = pathlib.Path(run.model_dir) / RUN_SETTINGS_NAME
    path.write_text(json.dumps(recorded_settings(run), indent=1, sort_keys=True) + "\n")


def train(run: Run, examples: Examples, vocab_size: int, max_steps: Optional[int] = None) -> int:
    """Trains `max_steps` steps (default TrainConfig.train_steps) past the first step (0, or the
    warm-start checkpoint's), resuming from the newest checkpoint with the same data position;
    the learning-rate schedule spans these steps. Returns the final global step. The operative
    gin config is written once the model is built."""
    # Before the model directory is made: a warm-start checkpoint that is not there leaves no
    # new, empty folder behind (first_step reads it only where the family continues its step).
    if run.train_config.init_checkpoint:
        warm_start.checkpoint_path(run.checked_path(run_paths.INIT_CHECKPOINT,
                                                    run.train_config.init_checkpoint))
    base_step = first_step(run)
    pathlib.Path(run.model_dir).mkdir(parents=True, exist_ok=True)
    record_settings(run)
    start_step = checkpoint_step(run.model_dir) or base_step
    batch_size = batch_size_for(run.train_config, feature_length(examples()))
    train_config = dataclasses.replace(run.train_config,
                                       train_steps=max_steps or run.train_config.train_steps)
    estimator = dataclasses.replace(run, train_config=train_config).estimator(
        batch_size, vocab_size, session_start=start_step)
    target = base_step + train_config.train_steps
    if start_step < target:
        progress(f"training {run.model_config.architecture} in {run.model_dir}: "
                 f"step {start_step} -> {target}, {batch_size} sequences per batch")
        # Where the saver writes checkpoints and the progress lines come (model_fn.py).
        checkpoints = hooks.CheckpointSteps(train_config.save_checkpoints_steps, start_step,
                                            target)
        try:
            # The input resumes at the position recorded with the checkpoint
            # (model/data/input_position.py); its steps count from the run's first step.
            estimator.train(lambda params: input_position.training_batches(
                examples, params["batch_size"], start_step - base_step, run.model_dir,
                lambda step: base_step + step in checkpoints),
                max_steps=target)
        except tf.errors.InvalidArgumentError as error:
            if hooks.is_non_finite_loss(error):
                raise hooks.error_for_failed_step(run.model_dir) from None
            raise
        except tf.train.NanLossDuringTrainingError:
            # Estimator's own NaN check, should it see the loss first: the same message.
            raise hooks.error_for_failed_step(run.model_dir) from None
    return checkpoint_step(run.model_dir)


def evaluate(run: Run, examples: Examples, vocab_size: int,
             checkpoint: Optional[str] = None) -> Dict[str, float]:
    """Validation loss and token accuracy of one checkpoint (None: the newest; also in
    TensorBoard)."""
    checkpoint = checkpoint or checkpoint_state.newest_checkpoint(run.model_dir)
    if not checkpoint:
        raise checkpoint_state.no_checkpoint_error(run.model_dir)
    batch_size = min(run.train_config.eval_batch_size, max(1, run.train_config.tokens_per_batch
                                                            // feature_length(examples())))
    estimator = run.estimator(batch_size, vocab_size)
    progress(f"evaluating {checkpoint}")
    results = estimator.evaluate(
        lambda params: examples().batch(params["batch_size"], drop_remainder=True),
        steps=run.train_config.eval_steps, checkpoint_path=checkpoint, name="validation")
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


def predict(run: Run, features: Dict[str, np.ndarray], checkpoint: Optional[str] = None,
            beam_size: int = 1, alpha: float = 0.6) -> np.ndarray:
    """The family's PREDICT outputs ([rows, ...]) of one checkpoint (None: the newest) for the
    rows of `features`: "inputs", and those of the family's `predict_feature_keys` it gives
    (greedy, or beam search of `beam_size` with length penalty `alpha`). In whole batches of at
    most TrainConfig.eval_batch_size rows: zero rows after the last, whose outputs are dropped."""
    count = len(features["inputs"])
    batch_size = min(count, run.train_config.eval_batch_size)
    filled = {key: np.concatenate([value, np.zeros((-count % batch_size,) + value.shape[1:], value.dtype)])
              for key, value in features.items()}
    predictions = run.estimator(batch_size, beam_size=beam_size, alpha=alpha).predict(
        lambda params: tf.data.Dataset.from_tensor_slices(filled).batch(
            params["batch_size"], drop_remainder=True),
        checkpoint_path=checkpoint, yield_single_examples=True)
    return np.stack([p["outputs"] for p in predictions])[:count]


def decode(run: Run, texts: Sequence[str], inputs_length: int, checkpoint: Optional[str] = None,
           beam_size: int = 1, alpha: float = 0.6) -> List[str]:
    """Decodes of `texts` by one checkpoint (None: the newest), greedy or by beam search."""
    checkpoint = checkpoint or checkpoint_state.newest_checkpoint(run.model_dir)
    if not checkpoint:
        raise checkpoint_state.no_checkpoint_error(run.model_dir)
    if not texts:
        return []
    vocabulary = run.vocabulary
    outputs = predict(run, {"inputs": encode_inputs(texts, vocabulary, inputs_length)},
                      checkpoint, beam_size, alpha)
    return [vocabulary.decode(strip_after_eos(row)) for row in outputs]


# The flag of the exports that writes a run's untrained checkpoint all the same.
ALLOW_UNTRAINED = "--allow_untrained"
ALLOW_UNTRAINED_HELP = ("export: write a training run's checkpoint of the step it started from "
                        "(its weights before any training step), refused otherwise")


def starting_step(run: "Run") -> int:
    """The step of the checkpoint holding the weights `run` started from, which the trainer
    saves before its first step: `first_step`, or 0 where the warm-start checkpoint it names is
    no longer there to tell its step."""
    try:
        return first_step(run)
    except (FileNotFoundError, warm_start.WarmStartError):
        return 0


def require_trained(run: "Run", checkpoint: str, allowed: bool) -> None:
    """Refuses (unless `allowed`) a training run's checkpoint at the step it started from (a
    run whose folder holds the trainer's RUN_SETTINGS_NAME): the weights as initialised or
    warm started, before any step trained, as a run stopped right after it started leaves them.
    An import's step-0 checkpoint (a released model) has no such file and passes."""
    model_dir = run.model_dir
    if allowed or not tf.io.gfile.exists(posixpath.join(model_dir, RUN_SETTINGS_NAME)):
        return
    with checkpoint_state.naming_damage(checkpoint):
        step = checkpoint_state.step_of(checkpoint)
    if step == starting_step(run):
        raise ValueError(
            f"{checkpoint} is step {step} of the run in {model_dir}, the step it started from: "
            f"its weights before any training step (a run stopped right after it started "
            f"leaves only this one). Train the run further, export a trained checkpoint with "
            f"--checkpoint, or give {ALLOW_UNTRAINED} to export this one as it is")


def gin_value(name: str):
    """The value gin binds to `name`, or None when it is not bound."""
    try:
        return gin.query_parameter(name)
    except ValueError:  # gin's answer for a parameter that no file or --gin_param binds
        return None


def parse_gin(gin_files: Sequence[str], gin_params: Sequence[str]) -> None:
    """Parses gin files (paths, or names relative to model/gin/), then bindings, as gin's
    parse_config_files_and_bindings; a syntax error names the file and line, or the binding
    (gin_files.py)."""
    for name in gin_files:
        path = gin_path(name)
        try:
            gin.parse_config_file(str(path))
        except (SyntaxError, tokenize.TokenError) as error:
            raise file_syntax_error(path, error) from None
    for binding in gin_params:
        try:
            gin.parse_config(binding)
        except (SyntaxError, tokenize.TokenError) as error:
            raise binding_syntax_error(binding, error) from None


OPERATIVE_CONFIG_NAME = "operative_config.gin"  # hooks.py's GinConfigSaverHook writes it
# Beside it, what gin's record may not hold as the run used it: the family's config as data and
# the settings a task run derived (recorded_settings). Runs written before it hold both in their
# operative config (fine-tuning bound them in gin), which is read as before.
RUN_SETTINGS_NAME = "run_settings.json"
# Modes that work on a trained run: they read its recorded settings (recorded_bindings).
MODES_ON_A_RUN = ("eval", "decode", "export")
# Where a run ran rather than what it trained: a later command takes these from its own flags.
MACHINE_SETTINGS = frozenset({"TrainConfig.use_tpu", "TrainConfig.tpu",
                              "TrainConfig.intra_op_threads", "TrainConfig.inter_op_threads",
                              "MeshConfig.mesh_shape", "MeshConfig.layout"})
# The sequence lengths a task run takes from its tasks (model/tasks/text_to_text.py with_task_lengths).
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
    # The values the run used: over what its operative config says gin gave.
    for configurable, parameters in read_settings(path.with_name(RUN_SETTINGS_NAME)).items():
        for parameter, value in parameters.items():
            bindings[f"{configurable}.{parameter}"] = value
    return bindings


def read_settings(path: pathlib.Path) -> Dict[str, Dict[str, Any]]:
    """A run's recorded settings (record_settings' file; {} where there is none), or a
    ValueError naming the file when it is not what record_settings writes."""
    if not path.is_file():
        return {}
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} is not a run's settings ({error}); it is rewritten when the "
                         f"run trains, or remove it to read the run's operative config alone") from None
    if not (isinstance(settings, dict) and all(isinstance(fields, dict) for fields in settings.values())):
        raise ValueError(f"{path} is not a run's settings: it must map each configurable to "
                         f"its {{parameter: value}}")
    return settings


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


def recorded_paths(recorded: Mapping[str, object]) -> Dict[str, str]:
    """{path setting: value} of the recorded bindings (apply_recorded_bindings') that name
    files or folders and that the command line left as recorded: a Run's `recorded_paths`."""
    return {key: value for key, value in recorded.items()
            if key in run_paths.PATH_SETTINGS and gin.query_parameter(key) == value}


def configured_run(model_dir: str, family_of: "Callable[[str], type[Family]]") -> Run:
    """The run that the parsed gin bindings describe (gin fills the dataclass fields), with the
    family that `family_of` (the registry's lookup) gives for its architecture."""
    model_config = ModelConfig()
    family = family_of(model_config.architecture)
    run = Run(family, model_config, MeshConfig(), OptimizationConfig(), DataConfig(),
              TrainConfig(), model_dir, PrecisionConfig(), FineTuningMethod(),
              family.configured_family_config())
    run.fine_tuning.check(run.model_config.adapter_size)
    return run
