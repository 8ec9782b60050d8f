"""Checkpoints in from and out to Hugging Face `transformers` (format `hf`), for T5, GPT-1 and BERT.

    python -m model.convert import --family {t5,gpt1,bert} --format hf --source HF_DIR \
        --model_dir DIR [--gin_file ...] [--gin_param ...]
    python -m model.convert export --family {t5,gpt1,bert} --format hf --model_dir DIR \
        --output HF_DIR [--gin_file ...] [--gin_param ...] [--checkpoint CKPT]

`python -m model.train --mode export` (T5) stays: model/families/t5/hf.py does the work for both.

Import reads a `save_pretrained` folder (config.json and model.safetensors or pytorch_model.bin,
sharded or not) of T5ForConditionalGeneration (T5.1.0 and T5.1.1), OpenAIGPTLMHeadModel or
BertForPreTraining and writes DIR/model.ckpt-0 with our variable names, plus
DIR/operative_config.gin with the bindings of the source's sizes (T5: and, when no
DataConfig.vocabulary is given, the folder's spiece.model, copied to DIR and checked against the
embedding's rows as a given vocabulary is); fine-tune it with
`--gin_file DIR/operative_config.gin --gin_param "TrainConfig.init_checkpoint = 'DIR'"`.
GPT-1 and BERT checkpoints hold the trainable variables only (their warm start reads nothing
else and starts at step 0). T5's warm start restores the optimizer's slots and the global step
too, so T5's checkpoint also holds Adafactor's slots, zero, at global step 0: Adafactor's decay
1 - (step + 1)^-0.8 is 0 at step 0, so the first update replaces them as a fresh optimizer would.

Every check runs before anything is written: the folder's files, its `model_type` against
`--family`, each config field against the gin configuration given (a field bound in gin must
agree; unbound ones are taken from the source), fields our model cannot compute alike (an
activation other than GELU's, T5's layer norm epsilon...), and then the weights: every parameter of ours must come
from the source with its shape, and the source must hold nothing that we would drop.

Export writes the `save_pretrained` folder of the checkpoint (default the newest in DIR), sized
by DIR/operative_config.gin (written by an import or a training run) and any gin given: T5
through model/families/t5/hf.py (`python -m model.train --mode export` is the same), GPT-1 as
OpenAIGPTLMHeadModel and BERT as BertForPreTraining, each config's activation the GELU that
ours computes (OpenAI GPT's afn "gelu": its tanh form; BERT's hidden_act: BertConfig's, the tanh
"gelu_new" unless the erf "gelu" was imported). A BERT fine-tuned
with a classification, regression or span head (BertConfig.head, which the run's
operative_config.gin records) becomes BertForSequenceClassification (regression: one label,
problem_type "regression") or BertForQuestionAnswering. A head the configuration does not name,
GPT-1's heads and BERT's multiple choice are refused: no model written has a place for them.

The name mappings are the families' own (model/families/gpt1/hf.py, bert_hf.py, and
`export_hf.t5_state_dict`), written in one direction, ours -> transformers'. Import inverts
them by running them on arrays of element indices: the index found at each place of a
transformers tensor says which element of ours it holds.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import re
import shutil
import sys
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

if __name__ == "__main__" and not any(a.startswith("--verbosity") for a in sys.argv[1:]):
    # TensorFlow reads its C++ log level when it is imported: quiet its start-up before the
    # imports below, as model/train.py's command line does (with --verbosity,
    # quiet_libraries decides as there).
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    warnings.simplefilter("ignore")

import gin  # noqa: E402  (after the log level above)
import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

from model import families  # noqa: E402
from model.tasks import evaluation  # noqa: E402
from model.trainer import runs, warm_start  # noqa: E402
from model.trainer.verbosity import VERBOSITY_FLAG, quiet_libraries  # noqa: E402
from model.families.t5.architectures import VOCAB_DIVISOR  # noqa: E402
from model.trainer.model_config import ModelConfig  # noqa: E402
from model.families.bert import hf as bert_hf  # noqa: E402
from model.families.gpt1 import hf as gpt1_hf  # noqa: E402
from model.trainer.mesh import MeshConfig, cpu_mesh_impl  # noqa: E402
from model.trainer.mtf_compat import mtf  # noqa: E402

FORMATS = ("hf",)
CHECKPOINT_NAME = "model.ckpt"
GIN_NAME = runs.OPERATIVE_CONFIG_NAME
CONFIG_FILE = "config.json"
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


class ConversionError(ValueError):
    """The source cannot be converted; nothing was written."""


@dataclasses.dataclass(frozen=True)
class Conversion:
    """One family's link to its transformers model."""

    family: str
    architecture: str                   # ours that the family builds
    model_type: str                     # config.json's model_type
    model_class: str                    # the transformers class written and read
    embedding: str                      # our token embedding: its rows are the vocabulary size
    hf_config: Callable[[ModelConfig, int], Any]
    gin_bindings: Callable[[Any], Dict[str, Any]]
    state: Callable[[Mapping[str, np.ndarray], ModelConfig], Dict[str, np.ndarray]]
    mtf_outputs: Callable[[Any, mtf.Mesh, Mapping[str, np.ndarray]], Dict[str, mtf.Tensor]]
    example_inputs: Dict[str, np.ndarray]  # builds the graph (any valid ids)
    # The source's vocabulary file that ours reads as DataConfig.vocabulary, if any.
    tokenizer_file: Optional[str] = None

    def transformers_class(self):
        import transformers
        return getattr(transformers, self.model_class)


def _t5() -> Conversion:
    from model.families.t5 import hf as export_hf
    return Conversion(
        "t5", "encoder_decoder", export_hf.MODEL_TYPE, "T5ForConditionalGeneration",
        export_hf.EMBEDDING,
        export_hf.hf_config, export_hf.gin_bindings, export_hf.t5_state_dict,
        export_hf.mtf_outputs,
        {"encoder_tokens": np.ones([1, 4], np.int32), "decoder_targets": np.ones([1, 2], np.int32)},
        # T5Tokenizer's SentencePiece model plus its 100 extra ids is our Vocabulary.
        tokenizer_file="spiece.model")


def _gpt1() -> Conversion:
    from model.families.gpt1.model import GPT1Config
    if GPT1Config().head:
        raise ConversionError(f"GPT-1's {GPT1Config().head} head (GPT1Config.head) has no "
                              f"transformers model here: OpenAIGPTLMHeadModel has no place for it")
    return Conversion(
        "gpt1", "gpt1", gpt1_hf.MODEL_TYPE, "OpenAIGPTLMHeadModel", "gpt1/token_embedding",
        lambda config, vocab: gpt1_hf.openai_gpt_config(config, GPT1Config(), vocab),
        gpt1_hf.gin_bindings,
        lambda variables, config: gpt1_hf.openai_gpt_state_dict(variables, config.num_layers),
        gpt1_hf.mtf_outputs, {"tokens": np.ones([1, 4], np.int32)})


def _bert() -> Conversion:
    """BertForPreTraining, or the model of the fine-tuning head that gin's BertConfig.head
    names (a fine-tuned run's recorded config)."""
    from model.families.bert.model import BertConfig
    head = BertConfig().head
    return Conversion(
        "bert", "bert", bert_hf.MODEL_TYPE, bert_hf.head_class(head),
        "bert/embeddings/word_embeddings",
        lambda config, vocab: bert_hf.transformers_config(config, BertConfig(), vocab),
        bert_hf.gin_bindings,
        lambda variables, config: bert_hf.transformers_state(variables, config.num_layers, head),
        bert_hf.mtf_outputs,
        {"tokens": np.ones([1, 4], np.int32), "token_types": np.zeros([1, 4], np.int32)})


CONVERSIONS = {"t5": _t5, "gpt1": _gpt1, "bert": _bert}


def conversion(family: str) -> Conversion:
    if family not in CONVERSIONS:
        raise ConversionError(f"unknown family {family!r}; choose one of {sorted(CONVERSIONS)}")
    return CONVERSIONS[family]()


# --- Our model's graph -----------------------------------------------------------------------

def _graph(conv: Conversion, config: ModelConfig, vocab_size: int,
           inputs: Mapping[str, np.ndarray], with_optimizer: bool):
    """Builds our model in the default graph: (lowering, {output: tf tensor}); with
    `with_optimizer`, the family's optimizer slots and the global step exist too."""
    family = families.family_for(config, vocab_size)
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    outputs = conv.mtf_outputs(family, mesh, inputs)
    updates = []
    if with_optimizer:
        variables = graph.trainable_variables
        scalar = mtf.reduce_sum(mtf.cast(list(outputs.values())[0], tf.float32))
        grads = mtf.gradients([scalar], [v.outputs[0] for v in variables])
        updates = family.optimizer(0.0).apply_grads(grads, variables)
    lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
    for op in updates:
        lowering.lowered_operation(op)
    if with_optimizer:
        tf.train.get_or_create_global_step()
    return lowering, {name: lowering.export_to_tf_tensor(t) for name, t in outputs.items()}


def model_shapes(conv: Conversion, config: ModelConfig, vocab_size: int
                 ) -> Dict[str, Tuple[int, ...]]:
    """Our trainable variables' shapes by name."""
    with tf.Graph().as_default():
        _graph(conv, config, vocab_size, conv.example_inputs, with_optimizer=False)
        return {v.op.name: tuple(v.shape.as_list()) for v in tf.trainable_variables()}


def checkpoint_outputs(conv: Conversion, config: ModelConfig, checkpoint: str,
                       inputs: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """Our model's outputs (conv.mtf_outputs: logits) for `inputs` with the trainable variables
    of `checkpoint` (a path or a directory's newest)."""
    path = warm_start.checkpoint_path(checkpoint)
    vocab_size = warm_start.checkpoint_variables(path)[conv.embedding][0][0]
    with tf.Graph().as_default():
        lowering, outputs = _graph(conv, config, vocab_size, inputs, with_optimizer=False)
        with tf.Session() as session:
            tf.train.Saver(tf.trainable_variables()).restore(session, path)
            session.run(lowering.copy_masters_to_slices())
            return session.run(outputs)


def write_checkpoint(conv: Conversion, config: ModelConfig, vocab_size: int,
                     values: Mapping[str, np.ndarray], model_dir: str) -> str:
    """DIR/model.ckpt-0 holding `values` (every trainable variable of ours); for a family that
    continues training from its checkpoint (T5) also the optimizer's zero slots and step 0."""
    continues = families.family_class(config.architecture).warm_start_continues_training
    with tf.Graph().as_default():
        _graph(conv, config, vocab_size, conv.example_inputs, with_optimizer=continues)
        trainable = tf.trainable_variables()
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for variable in trainable:
                variable.load(np.asarray(values[variable.op.name],
                                         variable.dtype.base_dtype.as_numpy_dtype), session)
            saver = tf.train.Saver(tf.global_variables() if continues else trainable)
            return saver.save(session, str(pathlib.Path(model_dir) / CHECKPOINT_NAME),
                              global_step=0)


# --- The mapping, both ways --------------------------------------------------------------------

def index_state(conv: Conversion, config: ModelConfig, shapes: Mapping[str, Tuple[int, ...]]
                ) -> Tuple[Dict[str, np.ndarray], Dict[str, slice]]:
    """The transformers state of a model whose every element holds its own index in one flat
    vector of our variables, and each variable's slice of that vector."""
    spans, start = {}, 0
    for name, shape in shapes.items():
        size = int(np.prod(shape, dtype=np.int64))
        spans[name] = slice(start, start + size)
        start += size
    indices = {name: np.arange(span.start, span.stop, dtype=np.int64).reshape(shapes[name])
               for name, span in spans.items()}
    return conv.state(indices, config), spans


def ours_from_transformers(conv: Conversion, config: ModelConfig,
                           shapes: Mapping[str, Tuple[int, ...]],
                           source: Mapping[str, np.ndarray], ignorable: Sequence[str] = ()
                           ) -> Dict[str, np.ndarray]:
    """Our variables from a transformers state dict (name -> array). Raises ConversionError
    listing the source's tensors of the wrong shape, our variables it does not give, tied
    tensors whose copies differ, and tensors of the source ours would not read (`ignorable`:
    buffers such as position ids)."""
    layout, spans = index_state(conv, config, shapes)
    prefix = conv.transformers_class().base_model_prefix
    if not set(source) & set(layout):
        # The base model's file (OpenAIGPTModel, BertModel: hub folders such as openai-gpt)
        # names its tensors without the head model's prefix; the tied output needs no more.
        source = {f"{prefix}.{name}": value for name, value in source.items()}
    total = max((span.stop for span in spans.values()), default=0)
    flat = np.zeros(total, np.float32)
    given = np.zeros(total, bool)
    wrong_shape, differing = [], []
    for name, index in layout.items():
        if name not in source:
            continue  # a tied copy that save_pretrained leaves out; coverage is checked below
        value = np.asarray(source[name], np.float32)
        if value.shape != index.shape:
            wrong_shape.append(f"{name}: source {list(value.shape)}, ours {list(index.shape)}")
            continue
        index, value = index.ravel(), value.ravel()
        seen = given[index]
        if seen.any() and not np.array_equal(flat[index[seen]], value[seen]):
            differing.append(name)
        flat[index], given[index] = value, True
    missing = [f"{name} (transformers' {', '.join(n for n in layout if _touches(layout[n], span))})"
               for name, span in spans.items() if not given[span].all()]
    unread = sorted(set(source) - set(layout) - set(ignorable))
    problems = []
    if wrong_shape:
        problems.append(f"{len(wrong_shape)} tensor(s) of the wrong shape:\n  "
                        + "\n  ".join(wrong_shape))
    if missing:
        problems.append(f"{len(missing)} variable(s) of ours the source does not give:\n  "
                        + "\n  ".join(missing))
    if differing:
        problems.append("tied tensors differ from the ones they share ours with:\n  "
                        + "\n  ".join(differing))
    if unread:
        problems.append(f"{len(unread)} tensor(s) of the source that {conv.model_class} "
                        f"import would drop:\n  " + "\n  ".join(unread))
    if problems:
        raise ConversionError("cannot import the source's weights: " + "\n".join(problems))
    return {name: flat[span].reshape(shapes[name]) for name, span in spans.items()}


def _touches(index: np.ndarray, span: slice) -> bool:
    return bool(((index >= span.start) & (index < span.stop)).any())


# --- Import --------------------------------------------------------------------------------------

def read_transformers_folder(source: str, conv: Conversion) -> Tuple[Any, Dict[str, np.ndarray]]:
    """(transformers config, state dict as float32 arrays) of a save_pretrained folder."""
    folder = pathlib.Path(source)
    if not (folder / CONFIG_FILE).is_file():
        raise FileNotFoundError(f"no {CONFIG_FILE} in {source} (a transformers save_pretrained "
                                f"folder is expected)")
    model_type = json.loads((folder / CONFIG_FILE).read_text()).get("model_type")
    if model_type != conv.model_type:
        raise ConversionError(f"--family {conv.family} reads transformers' model_type "
                              f"{conv.model_type!r}; {source}/{CONFIG_FILE} has model_type "
                              f"{model_type!r}")
    from transformers import AutoConfig
    hf_config = AutoConfig.from_pretrained(str(folder))
    return hf_config, _read_weights(folder)


def _read_weights(folder: pathlib.Path) -> Dict[str, np.ndarray]:
    import torch
    present = [name for name in WEIGHT_FILES if (folder / name).is_file()]
    if not present:
        raise FileNotFoundError(f"no weights in {folder}: expected one of {list(WEIGHT_FILES)}")
    chosen = folder / present[0]
    if chosen.name.endswith(".index.json"):
        shards = sorted(set(json.loads(chosen.read_text())["weight_map"].values()))
        missing = [shard for shard in shards if not (folder / shard).is_file()]
        if missing:
            raise FileNotFoundError(f"{chosen} names shard(s) that are not there: {missing}")
        files = [folder / shard for shard in shards]
    else:
        files = [chosen]
    state = {}
    for path in files:
        if path.suffix == ".safetensors":
            from safetensors.torch import load_file
            tensors = load_file(str(path))
        else:
            tensors = torch.load(str(path), map_location="cpu", weights_only=True)
        state.update({_modern_name(name): tensor.float().numpy()
                      for name, tensor in tensors.items()})
    return state


def _modern_name(name: str) -> str:
    """Older BERT files name LayerNorm's weight and bias gamma and beta (transformers renames
    them when loading)."""
    return re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight",
                  re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", name))


def _gin_value(name: str):
    """The value gin binds to `name`, or None when it is not bound."""
    try:
        return gin.query_parameter(name)
    except ValueError:
        return None


def check_against_gin(bindings: Mapping[str, Any]) -> None:
    """Each binding that the gin configuration also binds must agree with it."""
    disagree = [f"{name}: gin says {_gin_value(name)!r}, the source's config {value!r}"
                for name, value in bindings.items()
                if _gin_value(name) is not None and _gin_value(name) != value]
    if disagree:
        raise ConversionError("the source's config disagrees with the gin configuration:\n  "
                              + "\n  ".join(disagree))


def _buffers(conv: Conversion, hf_config) -> List[str]:
    import torch
    with torch.device("meta"):
        model = conv.transformers_class()(hf_config)
    return [name for name, _ in model.named_buffers()]


def _gin_text(bindings: Mapping[str, Any], source: str) -> str:
    lines = [f"# Written by `python -m model.convert import` from {source}."]
    lines += [f"{name} = {value!r}" for name, value in bindings.items()]
    return "\n".join(lines) + "\n"


def import_checkpoint(family: str, source: str, model_dir: str) -> Dict[str, Any]:
    """Checks the transformers folder `source` against the parsed gin configuration, then
    writes our checkpoint and gin file to `model_dir` (see the module's docstring)."""
    conv = conversion(family)
    if tf.train.latest_checkpoint(model_dir):
        raise ConversionError(f"{model_dir} already holds a checkpoint; import into a new folder")
    hf_config, state = read_transformers_folder(source, conv)
    bindings = conv.gin_bindings(hf_config)
    check_against_gin(bindings)
    vocab_size = hf_config.vocab_size
    with gin.unlock_config():
        for name, value in bindings.items():
            gin.bind_parameter(name, value)
    tokenizer = pathlib.Path(source) / conv.tokenizer_file if conv.tokenizer_file else None
    carried = (tokenizer is not None and tokenizer.is_file()
               and not _gin_value("DataConfig.vocabulary"))
    if carried:  # checked as if given, then copied beside the checkpoint
        with gin.unlock_config():
            gin.bind_parameter("DataConfig.vocabulary", str(tokenizer))
    _check_vocabulary(family, vocab_size)
    config = ModelConfig()
    shapes = model_shapes(conv, config, vocab_size)
    values = ours_from_transformers(conv, config, shapes, state, _buffers(conv, hf_config))
    pathlib.Path(model_dir).mkdir(parents=True, exist_ok=True)
    checkpoint = write_checkpoint(conv, config, vocab_size, values, model_dir)
    if carried:
        copy = pathlib.Path(model_dir) / conv.tokenizer_file
        shutil.copyfile(tokenizer, copy)
        bindings = {**bindings, "DataConfig.vocabulary": str(copy.resolve())}
    gin_file = pathlib.Path(model_dir) / GIN_NAME
    gin_file.write_text(_gin_text(bindings, source))
    return {"checkpoint": checkpoint, "gin_file": str(gin_file), "variables": len(values)}


def _check_vocabulary(family: str, vocab_size: int) -> None:
    """With DataConfig.vocabulary bound, its size must fill the source's embedding (T5's is
    padded to a multiple of 128)."""
    if not _gin_value("DataConfig.vocabulary"):
        return
    ours = families.configured_run("unused").vocabulary.vocab_size
    rows = VOCAB_DIVISOR * -(-ours // VOCAB_DIVISOR) if family == "t5" else ours
    if rows != vocab_size:
        raise ConversionError(f"vocab_size: DataConfig.vocabulary "
                              f"{_gin_value('DataConfig.vocabulary')} has {ours} ids ({rows} "
                              f"embedding rows), the source's config {vocab_size}")


# --- Export --------------------------------------------------------------------------------------

def export_checkpoint(family: str, model_dir: str, output: str, checkpoint: str = ""
                      ) -> Dict[str, str]:
    """Writes the transformers folder of `checkpoint` (as `--checkpoint` of model.train: ""
    the newest in `model_dir`, "best", a path or a name in `model_dir`), sized by the parsed gin
    configuration, to `output`."""
    conv = conversion(family)
    with gin.config_scope("export"):
        run = families.configured_run(model_dir)
    expected = families.family_class(conv.architecture)
    if families.family_class(run.model_config.architecture) is not expected:
        raise ConversionError(f"--family {family} exports architecture {conv.architecture!r}; "
                              f"the gin configuration says {run.model_config.architecture!r}")
    path = evaluation.resolve_checkpoint(model_dir, checkpoint)
    runs.progress(f"exporting {path}")
    if family == "t5":
        from model.families.t5 import hf as export_hf
        return export_hf.export(run, output, path)
    stored = warm_start.checkpoint_variables(path)
    if conv.embedding not in stored:
        raise ConversionError(f"{path} has no {conv.embedding}: not a {family} checkpoint")
    vocab_size = stored[conv.embedding][0][0]
    config = run.model_config
    shapes = model_shapes(conv, config, vocab_size)
    heads = sorted(name for name in set(stored) - set(shapes)
                   if any(re.fullmatch(p, name) for p in expected.fresh_on_warm_start))
    if heads:
        raise ConversionError(f"{path} holds a fine-tuning head that {conv.model_class} has no "
                              f"place for: {heads} (a fine-tuned run's operative_config.gin "
                              f"names its head)")
    warm_start.restore_plan({name: (shape, "float32") for name, shape in shapes.items()},
                            {name: (shape, "float32") for name, (shape, _) in stored.items()})
    reader = tf.train.load_checkpoint(path)
    values = {name: np.asarray(reader.get_tensor(name), np.float32) for name in shapes}
    import torch
    hf_config = conv.hf_config(config, vocab_size)
    model = conv.transformers_class()(hf_config)
    state = conv.state(values, config)
    missing, unexpected = model.load_state_dict(
        {name: torch.from_numpy(np.ascontiguousarray(value)) for name, value in state.items()},
        strict=False)
    if unexpected or set(missing) - set(_buffers(conv, hf_config)):
        raise ConversionError(f"{conv.model_class} does not match the mapping: missing "
                              f"{missing}, unexpected {unexpected}")
    out = pathlib.Path(output)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    return {"checkpoint": path, "export_dir": str(out)}


# --- Command line ---------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("direction", choices=("import", "export"))
    parser.add_argument("--family", choices=sorted(CONVERSIONS), required=True)
    parser.add_argument("--format", choices=FORMATS, required=True)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--source", help="import: the transformers folder")
    parser.add_argument("--output", help="export: where the transformers folder goes")
    parser.add_argument("--checkpoint", default="",
                        help="export: the checkpoint (default the newest of --model_dir; "
                             "'best', a path, or a name in --model_dir, as model.train's)")
    parser.add_argument("--gin_file", action="append", default=[])
    parser.add_argument("--gin_param", action="append", default=[])
    parser.add_argument(VERBOSITY_FLAG, type=int, default=0, choices=(0, 1, 2))
    args = parser.parse_args(argv)
    quiet_libraries(args.verbosity)
    try:
        # Export reads the run's recorded settings (an import's or a training's
        # operative_config.gin, model/train.py); gin files and bindings given override them.
        recorded = (runs.apply_recorded_bindings(args.model_dir)
                    if args.direction == "export" else {})
        runs.parse_gin(args.gin_file, args.gin_param)
        runs.warn_overrides(recorded, args.model_dir)
        if args.direction == "import":
            if not args.source:
                raise ConversionError("import needs --source")
            result = import_checkpoint(args.family, args.source, args.model_dir)
        else:
            if not args.output:
                raise ConversionError("export needs --output")
            result = export_checkpoint(args.family, args.model_dir, args.output, args.checkpoint)
        print(json.dumps(result))
    except (ValueError, KeyError, SyntaxError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
