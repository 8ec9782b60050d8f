"""The papers' numbers, pinned: one table, one test (issue 26).

Every number that a paper or a reference implementation states and that a default of ours
carries (schedules, warm-ups, strides, lengths, rates, sizes) is a row of TABLE: what it is, the
value, the source that states it, and every place the code takes it from. Each place is read
where the code really reads it:

- a gin file of model/gin/: its literal bindings, parsed by gin's own parser
  (model/trainer/gin_files.py `literal_bindings`, no trainer import), merged in the order the
  trainer loads them (`--mode pretrain` loads pretrain.gin first, then the family's files);
- a dataclass field's default (`dataclasses.fields`, never an instance, which gin would fill);
- a function's default (`inspect.signature`), or one set in its body, read by calling it with
  every argument given (a few eager TensorFlow scalars, no graph);
- a module constant, or a value the code computes from the above (a batch, a schedule's length).

A gin file that binds a number and the default under it are separate places, so a change to
either fails the row for that place. Where the project departs from the source on purpose
(model/families/*/README.md, "where it departs"; pipelines/README.md), the row pins the
project's value and its source says "ours" and why. Every number bound in model/gin/'s paper
settings must be pinned by a row or listed in NOT_FROM_A_SOURCE with its reason
(test_every_number_of_the_gin_files_is_pinned), and the table is checked not to be vacuous:
a changed copy of a gin file, or a changed default, fails its row.

Papers: T5, Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a Unified
Text-to-Text Transformer" (JMLR); GPT-1, Radford et al. 2018, "Improving Language Understanding
by Generative Pre-Training"; BERT, Devlin et al. 2019, "BERT: Pre-training of Deep Bidirectional
Transformers for Language Understanding"; SegaBERT, Bai et al. 2021, "Segatron: Segment-Aware
Transformer for Language Modeling and Understanding" (AAAI), run as the authors' code
(rsvp-ai/segatron_aaai) runs it.
"""
from __future__ import annotations

import dataclasses
import fnmatch
import importlib
import inspect
import math
import numbers
import pathlib
import shutil
import types
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Set, Tuple

import pytest

from model.trainer.gin_files import GIN_DIR, Unresolved, literal_bindings

REPO = pathlib.Path(__file__).resolve().parents[2]


# ------------------------------------------------------------------------------------------
# Where a value is read from. Every reader takes the gin folder (model/gin/, or a copy of it),
# so that a check can point a row at a changed copy; Python objects are looked up by name when
# read, so that a check can monkeypatch them.

class GinFiles:
    """A gin folder's literal bindings; remembers which (file, binding) pairs rows read."""

    def __init__(self, root: pathlib.Path = GIN_DIR):
        self.root = pathlib.Path(root)
        self.read: Set[Tuple[str, str]] = set()

    def bindings(self, file: str) -> Dict[str, Any]:
        return literal_bindings(self.root / file)

    def value(self, files: Sequence[str], binding: str) -> Any:
        """`binding` as gin resolves it after loading `files` in order: the last file binding
        it wins."""
        for file in reversed(files):
            bindings = self.bindings(file)
            if binding in bindings:
                self.read.add((file, binding))
                return bindings[binding]
        raise KeyError(f"{binding} is bound in none of {list(files)}")


@dataclasses.dataclass(frozen=True)
class Where:
    location: str
    read: Callable[[GinFiles], Any]
    reads_gin: bool = False

    def __str__(self) -> str:
        return self.location


def _resolve(target: str) -> Any:
    """'package.module:Name.attribute' -> the object, imported when read."""
    module, _, attributes = target.partition(":")
    value = importlib.import_module(module)
    for attribute in attributes.split("."):
        value = getattr(value, attribute)
    return value


def _source_file(target: str) -> str:
    module = pathlib.Path(*target.partition(":")[0].split("."))
    return str(module.with_suffix(".py") if (REPO / module).with_suffix(".py").is_file()
               else module / "__init__.py")


def _one_or_tuple(values: Sequence[Any]) -> Any:
    return values[0] if len(values) == 1 else tuple(values)


def gin(file: str, *bindings: str) -> Where:
    """Literal bindings of one gin file (a tuple when several are named)."""
    return Where(f"model/gin/{file}: {', '.join(bindings)}",
                 lambda g: _one_or_tuple([g.value((file,), b) for b in bindings]), reads_gin=True)


def gin_run(files: Sequence[str], what: str, compute: Callable[[Callable[[str], Any]], Any]
            ) -> Where:
    """A value the code computes from the bindings of `files`, loaded in that order."""
    files = tuple(files)
    return Where(f"model/gin/{' + '.join(files)}: {what}",
                 lambda g: compute(lambda binding: g.value(files, binding)), reads_gin=True)


def default(target: str, *names: str) -> Where:
    """Field defaults of a dataclass (`dataclasses.fields`: the class's, not gin's)."""
    cls = target.partition(":")[2]

    def read(_: GinFiles) -> Any:
        fields = {field.name: field for field in dataclasses.fields(_resolve(target))}
        for name in names:
            if fields[name].default is dataclasses.MISSING:
                raise ValueError(f"{cls}.{name} has no plain default")
        return _one_or_tuple([fields[name].default for name in names])

    return Where(f"{_source_file(target)}: {cls}.{'/'.join(names)} default", read)


def param(target: str, name: str) -> Where:
    """A parameter's default (`inspect.signature`; gin's wrapper keeps the function's)."""
    function = target.partition(":")[2]
    return Where(f"{_source_file(target)}: {function}({name}=...) default",
                 lambda _: inspect.signature(_resolve(target)).parameters[name].default)


def const(target: str) -> Where:
    return Where(f"{_source_file(target)}: {target.partition(':')[2]}", lambda _: _resolve(target))


def computed(target: str, what: str, compute: Callable[[], Any]) -> Where:
    """A value the code computes (`target` names the module whose code computes it)."""
    return Where(f"{_source_file(target)}: {what}", lambda _: compute())


# ------------------------------------------------------------------------------------------
# Values the code computes, as it computes them.

def _schedules():
    return importlib.import_module("model.trainer.schedules")


def _batch(tokens_per_batch: int, longest_feature: int) -> int:
    """Sequences per batch: runs.batch_size_for (the token budget over the longest feature)."""
    runs = importlib.import_module("model.trainer.runs")
    return runs.batch_size_for(types.SimpleNamespace(tokens_per_batch=tokens_per_batch),
                               longest_feature)


def _t5_batch(b):  # span corruption: inputs and targets, the longer is the inputs
    return _batch(b("TrainConfig.tokens_per_batch"),
                  max(b("DataConfig.inputs_length"), b("DataConfig.targets_length")))


def _targets_batch(b):  # GPT-1's `lm` objective: targets only
    return _batch(b("TrainConfig.tokens_per_batch"), b("DataConfig.targets_length"))


def _inputs_batch(b):  # BERT and SegaBERT: one sequence of inputs_length pieces
    return _batch(b("TrainConfig.tokens_per_batch"), b("DataConfig.inputs_length"))


def _schedule_span(b):
    """The schedule a run follows from step 0 (schedules.span, as the trainer places it)."""
    return _schedules().span(0, b("TrainConfig.train_steps"),
                             b("OptimizationConfig.schedule_part"))


def _bert_warmup_steps(b):
    span = _schedule_span(b)
    return _schedules().warmup_length("bert_linear", span.total_steps, None,
                                      b("lr.bert_linear.warmup_fraction"))


def _default_warmup_steps(name: str) -> float:
    """Steps of the warm-up that schedule `name` takes when none is given (set in its body):
    at step 1 of a 1M-step schedule with peak 1 the rate is 1 / warm-up."""
    import tensorflow as tf

    def rate():
        return getattr(_schedules(), name)(tf.constant(1), total_train_steps=10 ** 6, peak=1.0,
                                           warmup_steps=None, warmup_fraction=None,
                                           total_steps=None)

    if tf.executing_eagerly():
        return round(1.0 / float(rate()))
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:  # eager switched off
        return round(1.0 / float(session.run(rate())))


def _span_corruption_lengths() -> Tuple[int, int]:
    objectives = importlib.import_module("model.data.objectives")
    config = {f.name: f.default for f in dataclasses.fields(objectives.ObjectiveConfig)}
    return objectives.span_corruption_chunk_length(512, config["noise_density"],
                                                   config["mean_noise_span_length"])


def _t5_embedding_rows() -> int:
    vocabulary = importlib.import_module("model.data.vocabulary")
    hf = importlib.import_module("model.families.t5.hf")
    pieces = {f.name: f.default for f in dataclasses.fields(vocabulary.VocabularySettings)}["size"]
    return hf.embedding_rows(pieces + vocabulary.NUM_SENTINELS)


def _bert_predictions(length: int) -> int:
    """BertDataConfig's rule when no max_predictions is bound (every field given, so gin adds
    nothing)."""
    inputs = importlib.import_module("model.families.bert.inputs")
    fields = {f.name: f.default for f in dataclasses.fields(inputs.BertDataConfig)}
    return inputs.BertDataConfig(**{**fields, "max_predictions": None}).predictions(length)


def _beam_decoding(task: str) -> Tuple[int, float]:
    decoding = importlib.import_module("model.tasks").get(task).final_decoding
    return decoding.beam_size, decoding.alpha


def _variant(name: str = "en", rules: str = "paper"):
    return importlib.import_module("pipelines.config").variant(name, rules=rules)


def _validation_residues() -> Tuple[int, ...]:
    """MD5 of the normalized URL modulo 1000 of the made-up URLs split_of puts in validation."""
    urls = importlib.import_module("pipelines.filters.urls")
    md5_int = importlib.import_module("text.hashing").md5_int
    pages = [f"https://example{n % 97}.com/page/{n}?id={n * 7}" for n in range(20_000)]
    residues = {md5_int(urls.released_normalize_url(url)) % 1000
                for url in pages if urls.split_of(url) == "validation"}
    return tuple(sorted(residues))


def _family_vocab(family: str) -> int:
    return importlib.import_module("deploy.tpu").FAMILIES[family].launch.vocab_size


# ------------------------------------------------------------------------------------------
# The table.

@dataclasses.dataclass(frozen=True)
class Row:
    what: str
    value: Any
    source: str
    where: Tuple[Where, ...]


def row(what: str, value: Any, source: str, *where: Where) -> Row:
    return Row(what, value, source, where)


SIZE = ("ModelConfig.d_model", "ModelConfig.d_ff", "ModelConfig.num_heads", "ModelConfig.d_kv",
        "ModelConfig.num_layers")
SIZE_FIELDS = tuple(name.partition(".")[2] for name in SIZE)
T5_PRETRAIN = ("pretrain.gin",)
GPT1_PRETRAIN = ("pretrain.gin", "gpt1/pretrain.gin")
BERT_128 = ("pretrain.gin", "bert/pretrain_128.gin")
BERT_512 = ("pretrain.gin", "bert/pretrain_512.gin")
SEGABERT_PRETRAIN = ("pretrain.gin", "segabert/pretrain.gin")
RUNS = "model.trainer.runs"
SCHEDULES = "model.trainer.schedules"

TABLE = [
    # ---- T5 pre-training -----------------------------------------------------------------
    row("T5 pre-training: tokens per batch", 65_536,
        "T5 paper, Section 3.1.2: batches of roughly 2^16 = 65,536 tokens",
        gin("pretrain.gin", "TrainConfig.tokens_per_batch"),
        default(f"{RUNS}:TrainConfig", "tokens_per_batch")),
    row("T5 pre-training: sequences per batch", 128,
        "T5 paper, Section 3.1.2: a batch size of 128 sequences",
        gin_run(T5_PRETRAIN, "tokens_per_batch // longest feature", _t5_batch)),
    row("T5 pre-training: steps", 524_288,
        "T5 paper, Section 3.1.2: pre-train for 2^19 = 524,288 steps",
        gin("pretrain.gin", "TrainConfig.train_steps"),
        default(f"{RUNS}:TrainConfig", "train_steps")),
    row("T5 pre-training: schedule", Unresolved("@lr.inverse_sqrt"),
        "T5 paper, Section 3.1.2: inverse square root schedule 1/sqrt(max(n, k))",
        gin("pretrain.gin", "OptimizationConfig.learning_rate_schedule")),
    row("T5 pre-training: inverse-sqrt warm-up steps k", 10_000,
        "T5 paper, Section 3.1.2: k, the number of warm-up steps, set to 10^4",
        gin("pretrain.gin", "lr.inverse_sqrt.warmup_steps"),
        param(f"{SCHEDULES}:inverse_sqrt", "warmup_steps")),
    row("T5 span corruption: inputs/targets lengths", (512, 114),
        "T5 paper, Section 3.1.2: maximum sequence length 512; the t5 library's "
        "random_spans_helper (512 inputs at 15%, spans of 3: 114 targets; t5x's "
        "small_c4_pretrain.gin: {\"inputs\": 512, \"targets\": 114})",
        gin("pretrain.gin", "DataConfig.inputs_length", "DataConfig.targets_length"),
        gin("objectives/span_corruption.gin", "DataConfig.inputs_length",
            "DataConfig.targets_length"),
        default(f"{RUNS}:DataConfig", "inputs_length", "targets_length")),
    row("T5 span corruption: raw chunk and targets for 512 inputs", (568, 114),
        "the t5 library's preprocessors.random_spans_helper(inputs_length=512, "
        "noise_density=0.15, mean_noise_span_length=3.0): tokens_length 568, targets 114",
        computed("model.data.objectives", "span_corruption_chunk_length(512, ObjectiveConfig "
                 "defaults)", _span_corruption_lengths)),
    row("T5 pre-training objective", "span_corruption",
        "T5 paper, Section 3.7 (Objective): the span-corruption objective",
        gin("pretrain.gin", "DataConfig.objective"),
        default(f"{RUNS}:DataConfig", "objective")),
    row("T5 span corruption: corruption rate, mean span length", (0.15, 3.0),
        "T5 paper, Section 3.7 (Objective): a mean span length of 3 and corrupt 15% of the "
        "original sequence",
        default("model.data.objectives:ObjectiveConfig", "noise_density",
                "mean_noise_span_length")),
    row("T5 vocabulary: SentencePiece pieces", 32_000,
        "T5 paper, Section 3.1.3: a vocabulary of 32,000 wordpieces",
        default("model.data.vocabulary:VocabularySettings", "size")),
    row("T5 vocabulary: sentinel ids", 100,
        "the t5 library: DEFAULT_EXTRA_IDS = 100 (<extra_id_0> .. <extra_id_99>)",
        const("model.data.vocabulary:NUM_SENTINELS"),
        default("model.data.vocabulary:TokenIds", "num_sentinels"),
        param("model.data.vocabulary:add_sentinels", "num_sentinels")),
    row("T5 embedding: vocabulary padded to a multiple of", 128,
        "Mesh TensorFlow's Unitransformer(vocab_divisor=128)",
        const("model.families.t5.architectures:VOCAB_DIVISOR")),
    row("T5 embedding rows (32,000 + 100 ids, padded)", 32_128,
        "the released T5 checkpoints' 32,128-row embedding (transformers' T5Config vocab_size)",
        computed("model.families.t5.hf", "embedding_rows(VocabularySettings.size + "
                 "NUM_SENTINELS)", _t5_embedding_rows),
        computed("deploy.tpu", "FAMILIES['t5'].launch.vocab_size", lambda: _family_vocab("t5"))),
    row("T5 z-loss", 1e-4,
        "Mesh TensorFlow's Unitransformer(z_loss=1e-4), T5's training loss",
        default("model.trainer.model_config:ModelConfig", "z_loss")),
    row("T5 dropout", 0.1,
        "T5 paper, Section 3.1.1: a dropout probability of 0.1 everywhere",
        default("model.trainer.model_config:ModelConfig", "dropout_rate")),
    row("T5 relative position buckets", 32,
        "T5 paper, Section 2.1: 32 embeddings ... up to an offset of 128",
        default("model.trainer.model_config:ModelConfig", "relative_attention_num_buckets")),
    row("T5 relative position maximum distance (export)", 128,
        "T5 paper, Section 2.1: ranges up to an offset of 128 (transformers' T5Config "
        "relative_attention_max_distance)",
        const("model.families.t5.hf:RELATIVE_ATTENTION_MAX_DISTANCE")),
    row("T5 layer-norm epsilon", 1e-6,
        "Mesh TensorFlow's sublayer_rms_norm(epsilon=1e-6) (transformers' T5Config "
        "layer_norm_epsilon)",
        const("model.families.t5.architectures:LAYER_NORM_EPSILON")),
    row("T5 checkpoints every", 5_000,
        "T5 paper, Section 3.1.2: we save a checkpoint every 5,000 steps (Mesh TensorFlow's "
        "utils.run(save_checkpoints_steps=5000) when pre-training)",
        gin("pretrain.gin", "TrainConfig.save_checkpoints_steps"),
        gin("finetune.gin", "TrainConfig.save_checkpoints_steps"),
        default(f"{RUNS}:TrainConfig", "save_checkpoints_steps")),
    # ---- T5 fine-tuning and decoding ------------------------------------------------------
    row("T5 fine-tuning: schedule", Unresolved("@lr.constant"),
        "T5 paper, Section 3.1.2: a constant learning rate when fine-tuning",
        gin("finetune.gin", "OptimizationConfig.learning_rate_schedule")),
    row("T5 fine-tuning: learning rate", 0.001,
        "T5 paper, Section 3.1.2: a constant learning rate of 0.001",
        gin("finetune.gin", "lr.constant.value"),
        param(f"{SCHEDULES}:constant", "value")),
    row("T5 fine-tuning: steps", 262_144,
        "T5 paper, Section 3.1.2: fine-tuned for 2^18 = 262,144 steps",
        gin("finetune.gin", "TrainConfig.train_steps")),
    row("T5 fine-tuning: tokens per batch", 65_536,
        "T5 paper, Section 3.1.2: batches of 128 length-512 sequences (2^16 tokens)",
        gin("finetune.gin", "TrainConfig.tokens_per_batch")),
    row("T5 gradual unfreezing: steps per unfrozen block", 21_845,
        "T5 paper, Section 3.5.1: 12 episodes of 2^18/12 steps each",
        const("model.trainer.finetune_methods:PAPER_UNFREEZE_EVERY_STEPS"),
        default("model.trainer.finetune_methods:FineTuningMethod", "unfreeze_every_steps")),
    *[row(f"T5 adapters: inner size d = {d}", d,
          "T5 paper, Section 3.5.1 (Table 10): adapter layers with d = 32, 128, 512, 2048",
          gin(f"methods/adapters_{d}.gin", "ModelConfig.adapter_size"))
      for d in (32, 128, 512, 2048)],
    row("T5 mixing: data set size limit K", 2 ** 21,
        "T5 paper, Section 3.5.2: temperature-scaled mixing with the size limit K = 2^21",
        const("model.tasks.mixtures:DEFAULT_SIZE_LIMIT")),
    row("T5 beam search: beam width, length penalty alpha", (4, 0.6),
        "T5 paper, Section 3.7 (Beam search): a beam width of 4 and a length penalty of "
        "alpha = 0.6 for WMT and CNN/DM",
        computed("model.tasks.base", "BEAM_SEARCH (beam_size, alpha)",
                 lambda: (_resolve("model.tasks.base:BEAM_SEARCH").beam_size,
                          _resolve("model.tasks.base:BEAM_SEARCH").alpha)),
        *[computed("model.tasks", f"get({task!r}).final_decoding",
                   lambda task=task: _beam_decoding(task))
          for task in ("cnn_dailymail", "wmt_en_de", "wmt_en_fr", "wmt_en_ro")]),
    row("T5 length penalty alpha (greedy's unused default)", 0.6,
        "T5 paper, Section 3.7 (Beam search): alpha = 0.6",
        default("model.tasks.base:Decoding", "alpha")),
    # ---- T5 sizes: (d_model, d_ff, heads, d_kv, layers per stack) --------------------------
    row("T5-Base (the baseline) size", (768, 3072, 12, 64, 12),
        "T5 paper, Section 3.1.1: 12 blocks each, d_model = 768, d_ff = 3072, d_kv = 64, "
        "12 heads",
        gin("sizes/base.gin", *SIZE),
        default("model.trainer.model_config:ModelConfig", *SIZE_FIELDS)),
    row("T5-Small size", (512, 2048, 8, 64, 6),
        "T5 paper, Section 3.7 (Model sizes): d_model = 512, d_ff = 2,048, 8-headed attention, "
        "6 layers each (d_kv 64: the released T5-Small)",
        gin("sizes/small.gin", *SIZE)),
    row("T5-Large size", (1024, 4096, 16, 64, 24),
        "T5 paper, Section 3.7 (Model sizes): d_model = 1,024, d_ff = 4,096, d_kv = 64, "
        "16-headed attention, 24 layers each",
        gin("sizes/large.gin", *SIZE)),
    row("T5-3B size", (1024, 16_384, 32, 128, 24),
        "T5 paper, Section 3.7 (Model sizes): d_model = 1024, 24 layers, d_kv = 128; 3B: "
        "d_ff = 16,384 with 32-headed attention",
        gin("sizes/3B.gin", *SIZE)),
    row("T5-11B size", (1024, 65_536, 128, 128, 24),
        "T5 paper, Section 3.7 (Model sizes): d_model = 1024, 24 layers, d_kv = 128; 11B: "
        "d_ff = 65,536 with 128-headed attention",
        gin("sizes/11B.gin", *SIZE)),
    *[row(f"T5.1.1-{name} size", size, f"the t5 library's models/t5.1.1.{name}.gin",
          gin(f"sizes/t5.1.1/{name}.gin", *SIZE))
      for name, size in (("small", (512, 1024, 6, 64, 8)), ("base", (768, 2048, 12, 64, 12)),
                         ("large", (1024, 2816, 16, 64, 24)), ("xl", (2048, 5120, 32, 64, 24)),
                         ("xxl", (4096, 10_240, 64, 64, 24)))],
    *[row(f"mT5-{name} size", size, f"transformers' google/mt5-{name} config.json (mT5 paper, "
          "Section 3.2: T5.1.1's sizes)", gin(f"sizes/mt5/{name}.gin", *SIZE))
      for name, size in (("small", (512, 1024, 6, 64, 8)), ("base", (768, 2048, 12, 64, 12)),
                         ("large", (1024, 2816, 16, 64, 24)), ("xl", (2048, 5120, 32, 64, 24)),
                         ("xxl", (4096, 10_240, 64, 64, 24)))],
    row("mT5: languages sampled as |L|^alpha, alpha", 0.3,
        "mT5 paper (Xue et al., 2021), Section 3.2: p(L) proportional to |L|^alpha, alpha = 0.3 "
        "(multilingual-t5's mc4 mixture: rate_num_examples, temperature 1/0.3)",
        const("model.data.languages:MT5_EXPONENT"),
        default("model.trainer.runs:DataConfig", "language_exponent")),
    row("mT5 vocabulary: pieces, character coverage, byte fallback", (250_000, 0.99999, True),
        "mT5 paper, Section 3.2: 250,000 wordpieces, SentencePiece with character coverage "
        "0.99999 and byte fallback",
        computed("model.train_vocab", "RECIPES['mt5']", lambda: tuple(
            _resolve("model.train_vocab:RECIPES")["mt5"][key]
            for key in ("size", "character_coverage", "byte_fallback")))),
    # ---- C4 (pipelines/) ------------------------------------------------------------------
    row("C4: langdetect English probability at least", 0.99,
        "T5 paper, Section 2.2: langdetect, English with a probability of at least 0.99 "
        "(TFDS c4_utils.py: detect_english(min_probability=0.99))",
        computed("pipelines.config", "variant('en').language.min_probability",
                 lambda: _variant().language.min_probability),
        default("pipelines.filters.language:LanguageConfig", "min_probability")),
    row("C4: words per line, sentences per page (at least)", (5, 3),
        "ours by design, as the released C4's code (TFDS c4_utils.py: _MIN_WORDS_PER_LINE = 5, "
        "_MIN_NUM_SENTENCES = 3); the paper's text (Section 2.2) says 3 words and 5 sentences "
        "(next row)",
        computed("pipelines.config", "variant('en').cleaning",
                 lambda: (_variant().cleaning.min_words_per_line,
                          _variant().cleaning.min_sentences_per_page)),
        computed("pipelines.config", "variant('en', rules='released').cleaning",
                 lambda: (_variant(rules="released").cleaning.min_words_per_line,
                          _variant(rules="released").cleaning.min_sentences_per_page)),
        default("pipelines.filters.cleaning:CleaningConfig", "min_words_per_line",
                "min_sentences_per_page")),
    row("C4: the paper text's words per line, sentences per page", (3, 5),
        "T5 paper, Section 2.2: discarded any page with fewer than 5 sentences and only "
        "retained lines that contained at least 3 words",
        computed("pipelines.filters.cleaning", "PAPER_TEXT_CLEANING",
                 lambda: (_resolve("pipelines.filters.cleaning:PAPER_TEXT_CLEANING")
                          .min_words_per_line,
                          _resolve("pipelines.filters.cleaning:PAPER_TEXT_CLEANING")
                          .min_sentences_per_page))),
    row("C4: longest word (characters)", 1000,
        "TFDS c4_utils.py: _MAX_WORD_LENGTH = 1000",
        computed("pipelines.config", "variant('en').cleaning.max_word_length",
                 lambda: _variant().cleaning.max_word_length),
        default("pipelines.filters.cleaning:CleaningConfig", "max_word_length")),
    row("C4: longest page (characters)", 190_000,
        "TFDS c4_utils.py: is_valid_length(page, max_length=1.9e5)",
        computed("pipelines.config", "variant('en').max_page_chars",
                 lambda: _variant().max_page_chars),
        default("pipelines.config:VariantConfig", "max_page_chars")),
    row("C4 dedup: a repeated span of sentences", ("spans", 3),
        "T5 paper, Section 2.2: discarded all but one of any three-sentence span occurring "
        "more than once",
        computed("pipelines.config", "variant('en').dedup (mode, span_units)",
                 lambda: (_variant().dedup.mode, _variant().dedup.span_units)),
        computed("pipelines.filters.dedup", "PAPER_SPAN_DEDUP (mode, span_units)",
                 lambda: (_resolve("pipelines.filters.dedup:PAPER_SPAN_DEDUP").mode,
                          _resolve("pipelines.filters.dedup:PAPER_SPAN_DEDUP").span_units)),
        default("pipelines.filters.dedup:DedupConfig", "mode", "span_units")),
    row("C4 validation split: fraction of pages", 0.001,
        "the released C4 (TFDS c4.py): validation_predicate_fn = lambda x: x % 1000 == 0  "
        "# 00.1%",
        const("pipelines.filters.urls:DEFAULT_VALIDATION_FRACTION"),
        param("pipelines.filters.urls:split_of", "validation_fraction"),
        default("tfds_c4.inputs:BuildOptions", "validation_fraction")),
    row("C4 validation split: MD5 of the URL modulo", 1000,
        "the released C4 (TFDS c4.py, c4_utils.get_hashed_url_filter_fn): "
        "int(md5(url).hexdigest(), 16) % 1000 == 0",
        const("pipelines.filters.urls:_THOUSANDTHS")),
    row("C4 validation split: residues of the validation URLs", (0,),
        "the released C4 (TFDS c4.py): validation iff MD5 % 1000 == 0",
        computed("pipelines.filters.urls", "split_of over 20,000 made-up URLs",
                 _validation_residues)),
    # ---- GPT-1 ----------------------------------------------------------------------------
    row("GPT-1 size", (768, 3072, 12, 64, 12),
        "GPT-1 paper, Section 4.1 (Model specifications): 12-layer decoder, 768 dimensional "
        "states, 12 attention heads, 3072 dimensional inner states",
        gin("gpt1/base.gin", *SIZE)),
    row("GPT-1 dropout (residual, embedding, attention)", 0.1,
        "GPT-1 paper, Section 4.1: dropouts with a rate of 0.1",
        gin("gpt1/base.gin", "ModelConfig.dropout_rate")),
    row("GPT-1 context length", 512,
        "GPT-1 paper, Section 4.1: contiguous sequences of 512 tokens (train.py --n_ctx 512)",
        gin("gpt1/base.gin", "GPT1Config.max_positions"),
        default("model.families.gpt1.model:GPT1Config", "max_positions"),
        gin("gpt1/pretrain.gin", "DataConfig.targets_length"),
        gin("gpt1/finetune.gin", "DataConfig.targets_length")),
    row("GPT-1 pre-training: schedule", Unresolved("@lr.warmup_cosine"),
        "GPT-1 paper, Section 4.1: increased linearly, then annealed to 0 with a cosine schedule",
        gin("gpt1/pretrain.gin", "OptimizationConfig.learning_rate_schedule")),
    row("GPT-1 pre-training: peak learning rate", 2.5e-4,
        "GPT-1 paper, Section 4.1: a max learning rate of 2.5e-4",
        gin("gpt1/pretrain.gin", "lr.warmup_cosine.peak"),
        param(f"{SCHEDULES}:warmup_cosine", "peak")),
    row("GPT-1 pre-training: warm-up steps", 2000,
        "GPT-1 paper, Section 4.1: increased linearly from zero over the first 2000 updates",
        gin("gpt1/pretrain.gin", "lr.warmup_cosine.warmup_steps"),
        computed(SCHEDULES, "warmup_cosine's warm-up when none is given",
                 lambda: _default_warmup_steps("warmup_cosine"))),
    row("GPT-1 pre-training: sequences per batch", 64,
        "GPT-1 paper, Section 4.1: minibatches of 64 randomly sampled, contiguous sequences",
        gin_run(GPT1_PRETRAIN, "tokens_per_batch // targets_length", _targets_batch)),
    row("GPT-1 pre-training: steps", 524_288,
        "ours (gpt1/pretrain.gin: T5's 2^19; the paper trains 100 epochs of BooksCorpus, "
        "Section 4.1)",
        gin("gpt1/pretrain.gin", "TrainConfig.train_steps")),
    row("GPT-1 Adam beta1, beta2, epsilon; L2 w", (0.9, 0.999, 1e-8, 0.01),
        "OpenAI's finetune-transformer-lm train.py: --b1 0.9, --b2 0.999, --e 1e-8, --l2 0.01 "
        "(GPT-1 paper, Section 4.1: modified L2 regularization with w = 0.01)",
        gin("gpt1/pretrain.gin", "GPT1Config.adam_beta1", "GPT1Config.adam_beta2",
            "GPT1Config.adam_epsilon", "GPT1Config.weight_decay"),
        default("model.families.gpt1.model:GPT1Config", "adam_beta1", "adam_beta2",
                "adam_epsilon", "weight_decay")),
    row("GPT-1 layer-norm epsilon", 1e-5,
        "OpenAI's finetune-transformer-lm train.py: _norm(x, g, b, e=1e-5)",
        default("model.families.gpt1.model:GPT1Config", "layer_norm_epsilon"),
        const("model.families.gpt1.openai:LAYER_NORM_EPSILON")),
    row("GPT-1 initialisation stddev", 0.02,
        "GPT-1 paper, Section 4.1: a simple weight initialization of N(0, 0.02)",
        const("model.families.gpt1.model:INITIALIZER_STDDEV")),
    row("GPT-1 fine-tuning: learning rate", 6.25e-5,
        "GPT-1 paper, Section 4.1 (Fine-tuning details): a learning rate of 6.25e-5 "
        "(train.py --lr 6.25e-5)",
        gin("gpt1/finetune.gin", "lr.warmup_linear.peak"),
        param(f"{SCHEDULES}:warmup_linear", "peak")),
    row("GPT-1 fine-tuning: warm-up fraction", 0.002,
        "GPT-1 paper, Section 4.1: warmup over 0.2% of training (train.py --lr_warmup 0.002)",
        gin("gpt1/finetune.gin", "lr.warmup_linear.warmup_fraction"),
        computed(SCHEDULES, "warmup_linear's warm-up when none is given, over 10^6 steps",
                 lambda: _default_warmup_steps("warmup_linear") / 10 ** 6)),
    row("GPT-1 fine-tuning: batch size", 32,
        "GPT-1 paper, Section 4.1: a batchsize of 32 (train.py: --n_batch 8 x --n_gpu 4)",
        gin("gpt1/finetune.gin", "GPT1FinetuneConfig.batch_size"),
        default("model.families.gpt1.finetune:GPT1FinetuneConfig", "batch_size")),
    row("GPT-1 fine-tuning: epochs", 3,
        "GPT-1 paper, Section 4.1: 3 epochs of training (train.py --n_iter 3)",
        gin("gpt1/finetune.gin", "GPT1FinetuneConfig.epochs"),
        default("model.families.gpt1.finetune:GPT1FinetuneConfig", "epochs")),
    row("GPT-1 fine-tuning: auxiliary LM loss weight lambda", 0.5,
        "GPT-1 paper, Section 4.1: lambda was set to 0.5 (train.py --lm_coef 0.5)",
        gin("gpt1/finetune.gin", "GPT1Config.lm_loss_weight"),
        default("model.families.gpt1.model:GPT1Config", "lm_loss_weight")),
    row("GPT-1 fine-tuning: classifier dropout", 0.1,
        "GPT-1 paper, Section 4.1: dropout to the classifier with a rate of 0.1 "
        "(train.py --clf_pdrop 0.1)",
        gin("gpt1/finetune.gin", "GPT1Config.classifier_dropout"),
        default("model.families.gpt1.model:GPT1Config", "classifier_dropout")),
    row("GPT-1 vocabulary ids", 40_478,
        "OpenAI's encoder_bpe_40000.json: 40,478 pieces from 40,000 BPE merges "
        "(transformers' OpenAIGPTConfig vocab_size 40478)",
        computed("deploy.tpu", "FAMILIES['gpt1'].launch.vocab_size",
                 lambda: _family_vocab("gpt1"))),
    # ---- BERT -----------------------------------------------------------------------------
    row("BERT-Base size", (768, 3072, 12, 64, 12),
        "BERT paper, Section 3: BERT-Base (L=12, H=768, A=12), feed-forward size 4H",
        gin("bert/base.gin", *SIZE)),
    row("BERT-Large size", (1024, 4096, 16, 64, 24),
        "BERT paper, Section 3: BERT-Large (L=24, H=1024, A=16), feed-forward size 4H",
        gin("bert/large.gin", *SIZE)),
    row("BERT dropout", 0.1,
        "BERT paper, Appendix A.2: a dropout probability of 0.1 on all layers",
        gin("bert/base.gin", "ModelConfig.dropout_rate"),
        gin("bert/large.gin", "ModelConfig.dropout_rate")),
    row("BERT positions", 512,
        "BERT's bert_config.json: max_position_embeddings 512",
        gin("bert/base.gin", "BertConfig.max_positions"),
        gin("bert/large.gin", "BertConfig.max_positions"),
        default("model.families.bert.model:BertConfig", "max_positions")),
    row("BERT token types, initializer range, layer-norm epsilon", (2, 0.02, 1e-12),
        "BERT's bert_config.json: type_vocab_size 2, initializer_range 0.02; modeling.py's "
        "layer_norm (tf.contrib.layers.layer_norm, epsilon 1e-12)",
        default("model.families.bert.model:BertConfig", "type_vocab_size", "initializer_range",
                "layer_norm_epsilon")),
    row("BERT vocabulary pieces", 30_522,
        "BERT's uncased bert_config.json: vocab_size 30522",
        default("model.families.bert.wordpiece:WordPieceSettings", "size"),
        computed("deploy.tpu", "FAMILIES['bert'].launch.vocab_size",
                 lambda: _family_vocab("bert"))),
    row("BERT pre-training: Adam peak learning rate", 1e-4,
        "BERT paper, Appendix A.2: Adam with learning rate of 1e-4",
        gin("bert/pretrain_128.gin", "lr.bert_linear.peak"),
        gin("bert/pretrain_512.gin", "lr.bert_linear.peak"),
        param(f"{SCHEDULES}:bert_linear", "peak")),
    row("BERT pre-training: Adam beta1, beta2, weight decay, epsilon", (0.9, 0.999, 0.01, 1e-6),
        "BERT paper, Appendix A.2: beta1 = 0.9, beta2 = 0.999, L2 weight decay of 0.01; "
        "optimization.py create_optimizer: epsilon=1e-6",
        default("model.families.bert.model:BertConfig", "adam_beta1", "adam_beta2",
                "weight_decay_rate", "adam_epsilon")),
    row("BERT pre-training: warm-up steps", 10_000,
        "BERT paper, Appendix A.2: learning rate warmup over the first 10,000 steps",
        gin_run(BERT_128, "warmup_fraction x schedule_part's whole schedule", _bert_warmup_steps),
        gin_run(BERT_512, "warmup_fraction x schedule_part's whole schedule", _bert_warmup_steps)),
    row("BERT pre-training: the schedule's steps (both phases)", 1_000_000,
        "BERT paper, Appendix A.2: 1,000,000 steps",
        gin_run(BERT_128, "span(0, train_steps, schedule_part).total_steps",
                lambda b: _schedule_span(b).total_steps),
        gin_run(BERT_512, "span(0, train_steps, schedule_part).total_steps",
                lambda b: _schedule_span(b).total_steps)),
    row("BERT pre-training phase 1: steps, length", (900_000, 128),
        "BERT paper, Appendix A.2: sequence length of 128 for 90% of the steps",
        gin("bert/pretrain_128.gin", "TrainConfig.train_steps", "DataConfig.inputs_length")),
    row("BERT pre-training phase 2: steps, length, first step of the schedule",
        (100_000, 512, 900_000),
        "BERT paper, Appendix A.2: the rest 10% of the steps of sequence of 512",
        gin_run(BERT_512, "train_steps, inputs_length, span(...).shift",
                lambda b: (b("TrainConfig.train_steps"), b("DataConfig.inputs_length"),
                           _schedule_span(b).shift))),
    row("BERT pre-training: sequences per batch", 256,
        "BERT paper, Appendix A.2: batch size of 256 sequences",
        gin_run(BERT_128, "tokens_per_batch // inputs_length", _inputs_batch),
        gin_run(BERT_512, "tokens_per_batch // inputs_length", _inputs_batch)),
    row("BERT masking: rate; of the masked, [MASK] and random", (0.15, 0.8, 0.1),
        "BERT paper, Section 3.1 (Task #1: Masked LM): 15% of all WordPiece tokens; [MASK] "
        "80% of the time, a random token 10%, unchanged 10%",
        default("model.families.bert.inputs:BertDataConfig", "mask_rate", "mask_token_rate",
                "random_token_rate")),
    row("BERT max predictions per sequence at 128", 20,
        "BERT's create_pretraining_data.py / run_pretraining.py: max_predictions_per_seq 20",
        gin("bert/pretrain_128.gin", "BertDataConfig.max_predictions"),
        computed("model.families.bert.inputs", "BertDataConfig.predictions(128) when unbound",
                 lambda: _bert_predictions(128))),
    row("BERT max predictions per sequence at 512", 77,
        "ours: BERT's README says set it to around max_seq_length * masked_lm_prob; "
        "ceil(0.15 x 512) = 77",
        gin("bert/pretrain_512.gin", "BertDataConfig.max_predictions"),
        computed("model.families.bert.inputs", "BertDataConfig.predictions(512) when unbound",
                 lambda: _bert_predictions(512))),
    row("BERT short-sequence rate", 0.1,
        "BERT's create_pretraining_data.py: short_seq_prob 0.1",
        default("model.families.bert.inputs:BertDataConfig", "short_sequence_rate")),
    row("BERT GLUE fine-tuning: length, batch", (128, 32),
        "BERT's run_classifier.py: max_seq_length 128; BERT paper, Section 4.1: a batch size "
        "of 32",
        gin_run(("finetune.gin", "bert/finetune_classification.gin"),
                "inputs_length, tokens_per_batch // inputs_length",
                lambda b: (b("DataConfig.inputs_length"), _inputs_batch(b)))),
    row("BERT GLUE fine-tuning: learning rate", 2e-5,
        "BERT paper, Section 4.1: the best of 5e-5, 4e-5, 3e-5 and 2e-5 on Dev (ours: 2e-5)",
        gin("bert/finetune_classification.gin", "lr.bert_linear.peak")),
    row("BERT fine-tuning: warm-up fraction", 0.1,
        "BERT's run_classifier.py and run_squad.py: warmup_proportion 0.1",
        gin("bert/finetune_classification.gin", "lr.bert_linear.warmup_fraction"),
        gin("bert/finetune_squad.gin", "lr.bert_linear.warmup_fraction")),
    row("SQuAD: doc_stride", 128,
        "BERT's run_squad.py: doc_stride 128",
        gin("bert/finetune_squad.gin", "SquadConfig.doc_stride"),
        default("model.families.bert.finetune:SquadConfig", "doc_stride")),
    row("SQuAD: max_query_length", 64,
        "BERT's run_squad.py: max_query_length 64",
        gin("bert/finetune_squad.gin", "SquadConfig.max_query_length"),
        default("model.families.bert.finetune:SquadConfig", "max_query_length")),
    row("SQuAD: max_seq_length", 384,
        "BERT's run_squad.py: max_seq_length 384",
        gin("bert/finetune_squad.gin", "DataConfig.inputs_length")),
    row("SQuAD: max_answer_length", 30,
        "BERT's run_squad.py: max_answer_length 30",
        gin("bert/finetune_squad.gin", "SquadConfig.max_answer_length"),
        default("model.families.bert.finetune:SquadConfig", "max_answer_length")),
    row("SQuAD: n_best_size", 20,
        "BERT's run_squad.py: n_best_size 20",
        default("model.families.bert.finetune:SquadConfig", "n_best_size")),
    row("SQuAD 2.0: null_score_diff_threshold", 0.0,
        "BERT's run_squad.py: null_score_diff_threshold 0.0",
        gin("bert/finetune_squad.gin", "SquadConfig.null_score_diff_threshold"),
        default("model.families.bert.finetune:SquadConfig", "null_score_diff_threshold")),
    row("SQuAD: learning rate, batch", (5e-5, 32),
        "BERT paper, Section 4.2: a learning rate of 5e-5 and a batch size of 32 (run_squad.py: "
        "learning_rate 5e-5, train_batch_size 32)",
        gin_run(("finetune.gin", "bert/finetune_squad.gin"),
                "lr.bert_linear.peak, tokens_per_batch // inputs_length",
                lambda b: (b("lr.bert_linear.peak"), _inputs_batch(b)))),
    # ---- SegaBERT -------------------------------------------------------------------------
    row("SegaBERT-Base size", (768, 3072, 12, 64, 12),
        "the authors' eval_finetune/config/base/config.json: hidden_size 768, "
        "intermediate_size 3072, 12 heads, 12 layers",
        gin("segabert/base.gin", *SIZE)),
    row("SegaBERT dropout", 0.1,
        "the authors' eval_finetune/config/base/config.json: hidden_dropout_prob 0.1, "
        "attention_probs_dropout_prob 0.1",
        gin("segabert/base.gin", "ModelConfig.dropout_rate")),
    row("SegaBERT index tables: token, sentence, paragraph", (256, 100, 50),
        "the authors' eval_finetune/config/base/config.json: max_token_position_embeddings 256; "
        "configuration_bert.py: max_sent_position_embeddings=100, "
        "max_para_position_embeddings=50",
        gin("segabert/base.gin", "StructureLimits.tokens_per_sentence",
            "StructureLimits.sentences_per_paragraph", "StructureLimits.paragraphs_per_document"),
        default("model.families.segabert.structure:StructureLimits", "tokens_per_sentence",
                "sentences_per_paragraph", "paragraphs_per_document")),
    row("SegaBERT optimizer: weight decay, beta1, beta2, epsilon", (0.01, 0.9, 0.999, 1e-8),
        "the authors' pretrain_segabert.py: FusedAdam(betas=(0.9, 0.999)) with apex's eps 1e-8; "
        "pretrain_segabert_distributed.sh: --weight-decay 1e-2",
        default("model.families.segabert.model:FusedAdamConfig", "weight_decay_rate", "beta1",
                "beta2", "epsilon")),
    row("SegaBERT pre-training: learning rate, warm-up fraction", (1e-4, 0.01),
        "the authors' pretrain_segabert_distributed.sh (their SegaBERT-Large run): --lr 0.0001, "
        "--warmup .01",
        gin("segabert/pretrain.gin", "lr.warmup_linear.peak",
            "lr.warmup_linear.warmup_fraction")),
    row("SegaBERT pre-training: length, max predictions", (512, 80),
        "the authors' pretrain_segabert_distributed.sh (their SegaBERT-Large run): --seq-length "
        "512, --max-preds-per-seq 80",
        gin("segabert/pretrain.gin", "DataConfig.inputs_length",
            "BertDataConfig.max_predictions")),
    row("SegaBERT pre-training: sequences per batch", 256,
        "the authors' pretrain_segabert_distributed.sh (their SegaBERT-Large run): --batch-size "
        "16 on 16 GPUs",
        gin_run(SEGABERT_PRETRAIN, "tokens_per_batch // inputs_length", _inputs_batch)),
    row("SegaBERT pre-training: steps", 500_000,
        "the authors' README (Download Checkpoints): segabert-base-500k (the link's name)",
        gin("segabert/pretrain.gin", "TrainConfig.train_steps")),
    row("SegaBERT pre-training: short-sequence rate", 0.01,
        "the authors' data_utils/datasets.py: short_seq_prob=0.01",
        gin("segabert/pretrain.gin", "BertDataConfig.short_sequence_rate")),
    row("SegaBERT fine-tuning: learning rate", 3e-5,
        "the authors' eval_finetune/train_glue.sh and train_squad.sh: --learning_rate 3e-5",
        gin("segabert/finetune.gin", "lr.bert_linear.peak")),
    row("SegaBERT fine-tuning: warm-up fraction, weight decay", (0.0, 0.0),
        "the authors' examples/run_glue.py: --warmup_steps 0, --weight_decay 0.0 (their "
        "defaults, which no script sets)",
        gin("segabert/finetune.gin", "lr.bert_linear.warmup_fraction",
            "FusedAdamConfig.weight_decay_rate")),
    row("SegaBERT vocabulary pieces", 30_522,
        "the authors' eval_finetune/config/base/config.json: vocab_size 30522",
        computed("deploy.tpu", "FAMILIES['segabert'].launch.vocab_size",
                 lambda: _family_vocab("segabert"))),
]


# ------------------------------------------------------------------------------------------
# Gin bindings that are numbers but no source states: the project's own choices.

NOT_FROM_A_SOURCE = {
    ("pretrain.gin", "TrainConfig.keep_checkpoint_max"): "ours: the newest 5 checkpoints kept",
    ("finetune.gin", "TrainConfig.keep_checkpoint_max"): "ours: as pre-training",
    ("gpt1/pretrain.gin", "DataConfig.shuffle_windows"): "ours: the shuffle of GPT-1's rows",
    ("bert/pretrain_128.gin", "TrainConfig.save_checkpoints_steps"): "ours",
    ("bert/pretrain_512.gin", "TrainConfig.save_checkpoints_steps"): "ours",
    ("segabert/pretrain.gin", "TrainConfig.save_checkpoints_steps"): "ours",
    ("bert/finetune_classification.gin", "BertConfig.num_classes"):
        "the task's view sets it (model/families/bert/finetune.py)",
    ("bert/finetune_classification.gin", "TrainConfig.train_steps"):
        "a placeholder: set per task (the paper: about 3 epochs)",
    ("bert/finetune_squad.gin", "TrainConfig.train_steps"): "a placeholder: set per run",
}
# Gin files outside the table, with the reason.
NOT_PAPER_SETTINGS = {
    "*tiny.gin": "CPU-test sizes",
    "trial.gin": "the laptop trial runs",
    "meshes/*.gin": "mesh layouts",
    "objectives/*.gin": "Section 3.3's comparison objectives (span_corruption.gin is in)",
    "architectures/t5.1.1.gin": "a scoped binding (pretrain/), which literal_bindings refuses",
}
IN_THE_TABLE_ANYWAY = ("objectives/span_corruption.gin",)


def cases() -> Iterator:
    for entry in TABLE:
        for where in entry.where:
            yield pytest.param(entry, where, id=f"{entry.what} <- {where.location}")


def same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, tuple):
        return (isinstance(actual, (tuple, list)) and len(actual) == len(expected)
                and all(same(a, e) for a, e in zip(actual, expected)))
    if isinstance(expected, numbers.Real) and not isinstance(expected, bool):
        return (isinstance(actual, numbers.Real) and not isinstance(actual, bool)
                and math.isclose(actual, expected, rel_tol=1e-9, abs_tol=1e-15))
    return actual == expected


def check(entry: Row, where: Where, gin_files: Optional[GinFiles] = None) -> None:
    actual = where.read(gin_files or GinFiles())
    assert same(actual, entry.value), (
        f"{entry.what}: {where.location} gives {actual!r}, but {entry.source} says "
        f"{entry.value!r}")


@pytest.mark.parametrize("entry, where", list(cases()))
def test_the_code_carries_the_papers_numbers(entry, where):
    check(entry, where)


# ------------------------------------------------------------------------------------------
# The table itself: complete for model/gin/'s paper settings, and not vacuous.

def _paper_setting_files() -> list[str]:
    files = sorted(str(path.relative_to(GIN_DIR)) for path in GIN_DIR.rglob("*.gin"))
    return [file for file in files if file in IN_THE_TABLE_ANYWAY
            or not any(fnmatch.fnmatch(file, pattern) for pattern in NOT_PAPER_SETTINGS)]


def _is_number(value: Any) -> bool:
    if isinstance(value, tuple):
        return bool(value) and all(map(_is_number, value))
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def test_every_number_of_the_gin_files_is_pinned():
    gin_files = GinFiles()
    for entry in TABLE:
        for where in entry.where:
            if where.reads_gin:
                where.read(gin_files)
    numbers_bound = {(file, binding) for file in _paper_setting_files()
                     for binding, value in literal_bindings(GIN_DIR / file).items()
                     if _is_number(value)}
    unpinned = numbers_bound - gin_files.read - set(NOT_FROM_A_SOURCE)
    assert not unpinned, (f"numbers bound in model/gin/ without a row in TABLE (or a reason in "
                          f"NOT_FROM_A_SOURCE): {sorted(unpinned)}")
    stale = set(NOT_FROM_A_SOURCE) - numbers_bound
    assert not stale, f"NOT_FROM_A_SOURCE names bindings no file has: {sorted(stale)}"


def test_the_table_is_well_formed():
    whats = [entry.what for entry in TABLE]
    assert len(whats) == len(set(whats)), "two rows of the same name"
    for entry in TABLE:
        assert entry.where and entry.source, entry.what


def _case(what: str, location: str) -> Tuple[Row, Where]:
    matches = [(entry, where) for entry in TABLE for where in entry.where
               if entry.what == what and where.location.startswith(location)]
    assert len(matches) == 1, (what, location, matches)
    return matches[0]


@pytest.mark.parametrize("what, file, line, changed", [
    ("T5 pre-training: inverse-sqrt warm-up steps k", "pretrain.gin",
     "lr.inverse_sqrt.warmup_steps = 10000", "lr.inverse_sqrt.warmup_steps = 1000"),
    ("SQuAD: doc_stride", "bert/finetune_squad.gin",
     "SquadConfig.doc_stride = 128", "SquadConfig.doc_stride = 96"),
    ("BERT pre-training: warm-up steps", "bert/pretrain_128.gin",
     "lr.bert_linear.warmup_fraction = 0.01", "lr.bert_linear.warmup_fraction = 0.001"),
    ("GPT-1 pre-training: sequences per batch", "gpt1/pretrain.gin",
     "TrainConfig.tokens_per_batch = 32768", "TrainConfig.tokens_per_batch = 16384"),
])
def test_a_changed_copy_of_a_gin_file_fails_its_row(tmp_path, what, file, line, changed):
    copy = tmp_path / "gin"
    shutil.copytree(GIN_DIR, copy)
    cases_reading_file = [(e, w) for e in TABLE for w in e.where
                          if e.what == what and w.reads_gin and file in w.location]
    assert len(cases_reading_file) == 1, cases_reading_file
    entry, where = cases_reading_file[0]
    check(entry, where, GinFiles(copy))  # the unchanged copy passes
    text = (copy / file).read_text()
    assert line in text
    (copy / file).write_text(text.replace(line, changed))
    with pytest.raises(AssertionError, match="says"):
        check(entry, where, GinFiles(copy))


def test_a_changed_default_fails_its_row(monkeypatch):
    from model.families.bert import finetune
    from model.trainer import schedules

    entry, where = _case("SQuAD: doc_stride", "model/families/bert/finetune.py")
    check(entry, where)
    stride = next(f for f in dataclasses.fields(finetune.SquadConfig) if f.name == "doc_stride")
    monkeypatch.setattr(stride, "default", 96)
    with pytest.raises(AssertionError, match="says 128"):
        check(entry, where)

    entry, where = _case("T5 pre-training: inverse-sqrt warm-up steps k",
                         "model/trainer/schedules.py")
    check(entry, where)

    def inverse_sqrt(step, total_train_steps=None, warmup_steps=1000):
        raise AssertionError("not called")

    monkeypatch.setattr(schedules, "inverse_sqrt", inverse_sqrt)
    with pytest.raises(AssertionError, match="says 10000"):
        check(entry, where)
