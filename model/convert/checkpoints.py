"""Checkpoint conversion between our Mesh TensorFlow checkpoints and other formats: the machinery
every family's format modules share. It knows no family by name: each call takes the family's
`Conversion` (its class, its model's names and the mapping of its variables to the other
format's), declared by the family's package (`ModelFamily.checkpoint_formats`).

A format is a `CheckpointFormat`: `import_checkpoint(source, model_dir)` writes our checkpoint
and gin file from a source in the format, `export_checkpoint(run, output, checkpoint)` writes
one of our checkpoints in the format. `TransformersFormat` is Hugging Face's `save_pretrained`
folders (format `hf`); a family whose released checkpoints map onto transformers' names (BERT's
Google checkpoints) reads them into a transformers state dict and imports it through
`import_state`, so every import is checked the same way; one whose checkpoints carry our own
names (T5's Mesh TF checkpoints) checks and gives our variables, optimizer slots and step to
`import_values`, which `import_state` ends in.

Import: every check runs before anything is written: the source's files, its kind against the
family, each config field against the gin configuration given (a field bound in gin must agree;
unbound ones are taken from the source), fields our model cannot compute alike, and then the
weights: every parameter of ours must come from the source with its shape, and the source must
hold nothing that we would drop. It writes DIR/model.ckpt-0 (a source's step where it has one
and the family continues training) with our variable names, plus
DIR/operative_config.gin with the bindings of the source's sizes (and, when the family reads a
vocabulary file of the source and no DataConfig.vocabulary is given, that file, copied to DIR and
checked against the embedding's rows as a given vocabulary is); fine-tune it with
`--gin_file DIR/operative_config.gin --gin_param "TrainConfig.init_checkpoint = 'DIR'"`.
A family that fine-tunes from the weights alone (`Family.warm_start_continues_training`
False: GPT-1, BERT) gets the trainable variables only. One that continues training (T5) restores
the optimizer's slots and the global step too, so its checkpoint also holds the optimizer's
slots: the source's with its step (T5's Mesh TF checkpoints), else zero at global step 0 (a
transformers folder has none): Adafactor's decay 1 - (step + 1)^-0.8 is 0 at step 0, so the
first update replaces them as a fresh optimizer would.

The name mappings are the families' own, written in one direction, ours -> theirs
(`Conversion.state`). Import inverts them by running them on arrays of element indices: the
index found at each place of a source tensor says which element of ours it holds.
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
import re
import shutil
from typing import Any, Callable, ClassVar, Dict, List, Mapping, Optional, Sequence, Tuple

import gin
import numpy as np
import tensorflow.compat.v1 as tf

from model.convert.card import finish_export
from model.trainer import runs, warm_start
from model.trainer.family import Family
from model.trainer.mesh import MeshConfig, cpu_mesh_impl
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf

CHECKPOINT_NAME = "model.ckpt"
GIN_NAME = runs.OPERATIVE_CONFIG_NAME
CONFIG_FILE = "config.json"
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                "pytorch_model.bin.index.json")


class ConversionError(ValueError):
    """The source cannot be converted; nothing was written."""


def sentencepiece_tokenizer(vocabulary, model_max_length: int,
                            tokenizer_class: str = "T5Tokenizer"):
    """transformers' tokenizer of a SentencePiece vocabulary (model/data/vocabulary.py), ids
    alike: T5Tokenizer (or `tokenizer_class`, a subclass under another name: mT5's
    MT5Tokenizer) over the trained model with our sentinels as its extra ids, which it
    appends in reverse order as we do (it ends a text with EOS, as T5's inputs and our
    pre-training streams). `legacy`: the text after a sentinel starts a word, as ours where a
    space follows the sentinel."""
    import transformers
    return getattr(transformers, tokenizer_class)(
        str(vocabulary.path), extra_ids=vocabulary.token_ids.num_sentinels, legacy=True,
        model_max_length=model_max_length)


@dataclasses.dataclass(frozen=True)
class Conversion:
    """One family's link to a transformers model."""

    family: str                         # the family's name on the command line (messages)
    family_class: "type[Family]"        # its class (model/trainer/family.py's protocol)
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
    # Our embedding's rows for a vocabulary of n ids (T5 pads them to a multiple of 128).
    embedding_rows: Callable[[int], int] = lambda n: n
    # transformers' tokenizer of the run's vocabulary (its ids ours), given its longest input.
    tokenizer: Callable[[Any, int], Any] = sentencepiece_tokenizer
    # Python that loads the export folder (its path as given) of a run and runs it once: the
    # model card's (model/convert/card.py).
    usage: Optional[Callable[[str, runs.Run], str]] = None

    def transformers_class(self):
        import transformers
        return getattr(transformers, self.model_class)


# --- Formats ---------------------------------------------------------------------------------

class CheckpointFormat:
    """One checkpoint format of a family, in the directions it has (`directions`)."""

    directions: ClassVar[Tuple[str, ...]] = ("import", "export")

    def import_checkpoint(self, source: str, model_dir: str) -> Dict[str, Any]:
        """Checks `source` against the parsed gin configuration, then writes our checkpoint
        and its gin file to `model_dir`."""
        raise NotImplementedError

    def export_checkpoint(self, run: runs.Run, output: str, checkpoint: str) -> Dict[str, str]:
        """Writes `checkpoint` (a path) of `run` (sized by the parsed gin configuration) in
        this format to `output`."""
        raise NotImplementedError


class TransformersFormat(CheckpointFormat):
    """Format `hf`: transformers' `save_pretrained` folders (config.json and model.safetensors
    or pytorch_model.bin, sharded or not) of the model `conversion()` names. The conversion is
    made when it is used, from the parsed gin configuration (a fine-tuned BERT's head names
    its transformers model)."""

    def __init__(self, conversion: Callable[[], Conversion]):
        self.conversion = conversion

    def import_checkpoint(self, source, model_dir):
        conv = self.conversion()
        hf_config, state = read_transformers_folder(source, conv)
        return import_state(conv, hf_config, state, source, model_dir)

    def export_checkpoint(self, run, output, checkpoint):
        return export_transformers(self.conversion(), run, output, checkpoint)


# --- Our model's graph -----------------------------------------------------------------------

def _graph(conv: Conversion, config: ModelConfig, vocab_size: int,
           inputs: Mapping[str, np.ndarray], with_optimizer: bool, vocabulary: Any = None):
    """Builds our model in the default graph: (lowering, {output: tf tensor}); with
    `with_optimizer`, the family's optimizer slots and the global step exist too. The family is
    given `vocabulary` as a run's (its special ids; None: the family's own) and its config as
    gin binds it when the conversion runs (the source's bindings bound, on an import)."""
    family = conv.family_class(config, vocab_size, run_vocabulary=vocabulary,
                               family_config=conv.family_class.configured_family_config())
    graph = mtf.Graph()
    mesh = mtf.Mesh(graph, "mesh")
    outputs = conv.mtf_outputs(family, mesh, inputs)
    updates = []
    if with_optimizer:
        variables = graph.trainable_variables
        # Every output, so that every variable (a head's too) gets its slots.
        scalar = mtf.add_n([mtf.reduce_sum(mtf.cast(t, tf.float32)) for t in outputs.values()])
        grads = mtf.gradients([scalar], [v.outputs[0] for v in variables])
        updates = family.optimizer(0.0).apply_grads(grads, variables)
    lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
    for op in updates:
        lowering.lowered_operation(op)
    if with_optimizer:
        tf.train.get_or_create_global_step()
    return lowering, {name: lowering.export_to_tf_tensor(t) for name, t in outputs.items()}


def model_shapes(conv: Conversion, config: ModelConfig, vocab_size: int,
                 with_optimizer: bool = False) -> Dict[str, Tuple[int, ...]]:
    """Our trainable variables' shapes by name; `with_optimizer`: every variable a checkpoint
    of ours holds, the family's optimizer slots and the global step too."""
    with tf.Graph().as_default():
        _graph(conv, config, vocab_size, conv.example_inputs, with_optimizer=with_optimizer)
        chosen = tf.global_variables() if with_optimizer else tf.trainable_variables()
        return {v.op.name: tuple(v.shape.as_list()) for v in chosen}


def checkpoint_outputs(conv: Conversion, config: ModelConfig, checkpoint: str,
                       inputs: Mapping[str, np.ndarray], vocabulary: Any = None
                       ) -> Dict[str, np.ndarray]:
    """Our model's outputs (conv.mtf_outputs: logits) for `inputs` with the trainable variables
    of `checkpoint` (a path or a directory's newest), the family given `vocabulary` as a run's
    (GPT-1's head finds OpenAI's extract token by it)."""
    path = warm_start.checkpoint_path(checkpoint)
    vocab_size = warm_start.checkpoint_variables(path)[conv.embedding][0][0]
    with tf.Graph().as_default():
        lowering, outputs = _graph(conv, config, vocab_size, inputs, with_optimizer=False,
                                   vocabulary=vocabulary)
        with tf.Session() as session:
            tf.train.Saver(tf.trainable_variables()).restore(session, path)
            session.run(lowering.copy_masters_to_slices())
            return session.run(outputs)


def write_checkpoint(conv: Conversion, config: ModelConfig, vocab_size: int,
                     values: Mapping[str, np.ndarray], model_dir: str, step: int = 0) -> str:
    """DIR/model.ckpt-STEP holding `values` (every trainable variable of ours); for a family
    that continues training from its checkpoint (T5) also the optimizer's slots (those in
    `values`, else zero) and the global step `step`."""
    continues = conv.family_class.warm_start_continues_training
    with tf.Graph().as_default():
        _graph(conv, config, vocab_size, conv.example_inputs, with_optimizer=continues)
        trainable = tf.trainable_variables()
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            for variable in trainable:
                variable.load(np.asarray(values[variable.op.name],
                                         variable.dtype.base_dtype.as_numpy_dtype), session)
            if continues:
                weights = {v.op.name for v in trainable}
                for variable in tf.global_variables():
                    if variable.op.name in values and variable.op.name not in weights:
                        variable.load(np.asarray(values[variable.op.name],
                                                 variable.dtype.base_dtype.as_numpy_dtype),
                                      session)
                tf.train.get_global_step().load(step, session)
            # The checkpoint state names it within model_dir, as the trainer's saver does (else
            # an absolute model_dir is written into it): the folder can move.
            saver = tf.train.Saver(tf.global_variables() if continues else trainable,
                                   save_relative_paths=True)
            return saver.save(session, str(pathlib.Path(model_dir) / CHECKPOINT_NAME),
                              global_step=step)


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
    prefixed = {f"{prefix}.{name}": value for name, value in source.items()}
    if not set(source) & set(layout) and set(prefixed) & set(layout):
        # The base model's file (OpenAIGPTModel, BertModel: hub folders such as openai-gpt)
        # names its tensors without the head model's prefix; the tied output needs no more.
        source = prefixed
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
    missing = [f"{name} (the source's {', '.join(n for n in layout if _touches(layout[n], span))})"
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
    return hf_config, read_weights(folder)


def read_weights(folder: pathlib.Path) -> Dict[str, np.ndarray]:
    """A folder's PyTorch weights (WEIGHT_FILES, sharded or not) as float32 arrays by name."""
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


def check_against_gin(bindings: Mapping[str, Any]) -> None:
    """Each binding that the gin configuration also binds must agree with it."""
    disagree = [f"{name}: gin says {runs.gin_value(name)!r}, the source's config {value!r}"
                for name, value in bindings.items()
                if runs.gin_value(name) is not None and runs.gin_value(name) != value]
    if disagree:
        raise ConversionError("the source's config disagrees with the gin configuration:\n  "
                              + "\n  ".join(disagree))


def _buffers(conv: Conversion, hf_config) -> List[str]:
    import torch
    with torch.device("meta"):
        model = conv.transformers_class()(hf_config)
    return [name for name, _ in model.named_buffers()]


def _gin_text(bindings: Mapping[str, Any], source: str, notes: Sequence[str] = ()) -> str:
    lines = [f"# Written by `python -m model.convert import` from {source}."]
    lines += [f"# {note}" for note in notes]
    lines += [f"{name} = {value!r}" for name, value in bindings.items()]
    return "\n".join(lines) + "\n"


def check_new_folder(model_dir: str) -> None:
    """An import writes into a folder without a checkpoint."""
    if tf.train.latest_checkpoint(model_dir):
        raise ConversionError(f"{model_dir} already holds a checkpoint; import into a new folder")


def import_state(conv: Conversion, hf_config, state: Mapping[str, np.ndarray], source: str,
                 model_dir: str, vocabulary_files: Optional[Sequence[pathlib.Path]] = None,
                 notes: Sequence[str] = ()) -> Dict[str, Any]:
    """Checks a transformers config and state dict (read from `source`; by `conv.state`'s
    names) against the parsed gin configuration, then writes our checkpoint and gin file to
    `model_dir` (see the module's docstring). `vocabulary_files`: the source's vocabulary
    (`import_values`), by default `source`/conv.tokenizer_file; `notes`: comments for the gin
    file."""
    if vocabulary_files is None:
        vocabulary_files = ([pathlib.Path(source) / conv.tokenizer_file] if conv.tokenizer_file
                            else [])

    def values(config: ModelConfig, vocab_size: int) -> Dict[str, np.ndarray]:
        return ours_from_transformers(conv, config, model_shapes(conv, config, vocab_size), state,
                                      _buffers(conv, hf_config))

    return import_values(conv, conv.gin_bindings(hf_config), hf_config.vocab_size, values,
                         source, model_dir, vocabulary_files, notes=notes)


def import_values(conv: Conversion, bindings: Mapping[str, Any], vocab_size: int,
                  values: Callable[[ModelConfig, int], Mapping[str, np.ndarray]], source: str,
                  model_dir: str, vocabulary_files: Sequence[pathlib.Path] = (),
                  step: int = 0, notes: Sequence[str] = ()) -> Dict[str, Any]:
    """Checks the source's gin `bindings` against the parsed gin configuration and binds them,
    then writes our checkpoint of `values(config, vocab_size)` (our variables by name, checked
    by it: every trainable one, and optimizer slots) at `step` and its gin file to `model_dir`.
    `vocabulary_files`: the source's vocabulary, the file DataConfig.vocabulary names first
    (the files it reads beside it after), carried when none is given; `notes`: comments for
    the gin file."""
    check_against_gin(bindings)
    with gin.unlock_config():
        for name, value in bindings.items():
            gin.bind_parameter(name, value)
    carried = (bool(vocabulary_files) and vocabulary_files[0].is_file()
               and not runs.gin_value("DataConfig.vocabulary"))
    if carried:  # checked as if given, then copied beside the checkpoint
        with gin.unlock_config():
            gin.bind_parameter("DataConfig.vocabulary", str(vocabulary_files[0]))
    _check_vocabulary(conv, vocab_size)
    config = ModelConfig()
    ours = values(config, vocab_size)
    pathlib.Path(model_dir).mkdir(parents=True, exist_ok=True)
    checkpoint = write_checkpoint(conv, config, vocab_size, ours, model_dir, step)
    if carried:
        for file in vocabulary_files:
            shutil.copyfile(file, pathlib.Path(model_dir) / file.name)
        copy = pathlib.Path(model_dir) / vocabulary_files[0].name
        bindings = {**bindings, "DataConfig.vocabulary": str(copy.resolve())}
    gin_file = pathlib.Path(model_dir) / GIN_NAME
    gin_file.write_text(_gin_text(bindings, source, notes))
    return {"checkpoint": checkpoint, "gin_file": str(gin_file), "variables": len(ours)}


def _check_vocabulary(conv: Conversion, vocab_size: int) -> None:
    """With DataConfig.vocabulary bound, its size must fill the source's embedding
    (`conv.embedding_rows`)."""
    path = runs.gin_value("DataConfig.vocabulary")
    if not path:
        return
    ours = conv.family_class.vocabulary(path).vocab_size
    rows = conv.embedding_rows(ours)
    if rows != vocab_size:
        raise ConversionError(f"vocab_size: DataConfig.vocabulary {path} has {ours} ids ({rows} "
                              f"embedding rows), the source's config {vocab_size}")


# --- Export --------------------------------------------------------------------------------------

def write_tokenizer(tokenizer: Callable[[Any, int], Any], run: runs.Run, out: pathlib.Path,
                    model_max_length: int) -> None:
    """The run's vocabulary as the transformers tokenizer that gives its ids (`tokenizer`, a
    Conversion's), saved in `out`; none without DataConfig.vocabulary (a checkpoint imported
    without one is sized by its embedding alone)."""
    if run.data_config.vocabulary:
        tokenizer(run.vocabulary, model_max_length).save_pretrained(out)


def checkpoint_values(conv: Conversion, run: runs.Run, path: str
                      ) -> Tuple[int, Dict[str, np.ndarray]]:
    """(vocabulary size, our trainable variables by name as float32) of the checkpoint `path`,
    sized by `run`'s config; a checkpoint with a head that the conversion's model has no place
    for is refused."""
    stored = warm_start.checkpoint_variables(path)
    if conv.embedding not in stored:
        raise ConversionError(f"{path} has no {conv.embedding}: not a {conv.family} checkpoint")
    vocab_size = stored[conv.embedding][0][0]
    config = run.model_config
    shapes = model_shapes(conv, config, vocab_size)
    # A fine-tuned head's optimizer slots are the model's too (a trained run's checkpoint holds
    # them): only what our model and its optimizer lack is a head with no place.
    ours = model_shapes(conv, config, vocab_size, with_optimizer=True)
    heads = sorted(name for name in set(stored) - set(ours)
                   if any(re.fullmatch(p, name) for p in conv.family_class.fresh_on_warm_start))
    if heads:
        raise ConversionError(f"{path} holds a fine-tuning head that {conv.model_class} has no "
                              f"place for: {heads} (a fine-tuned run's operative_config.gin "
                              f"names its head)")
    warm_start.restore_plan({name: (shape, "float32") for name, shape in shapes.items()},
                            {name: (shape, "float32") for name, (shape, _) in stored.items()})
    reader = tf.train.load_checkpoint(path)
    return vocab_size, {name: np.asarray(reader.get_tensor(name), np.float32) for name in shapes}


def export_transformers(conv: Conversion, run: runs.Run, output: str, path: str
                        ) -> Dict[str, str]:
    """Writes the transformers folder of the checkpoint `path`, sized by `run`'s config, to
    `output`, with the tokenizer of the run's vocabulary (`write_tokenizer`); a checkpoint with
    a head that the conversion's model has no place for is refused."""
    import torch
    vocab_size, values = checkpoint_values(conv, run, path)
    config = run.model_config
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
    # The tokenizer's longest input is the position table's (BertConfig's
    # max_position_embeddings, OpenAIGPTConfig's n_positions by that name).
    write_tokenizer(conv.tokenizer, run, out, hf_config.max_position_embeddings)
    card = finish_export(run, out, path, conv.model_class, conv.usage(output, run))
    return {"checkpoint": path, "export_dir": str(out), **card}
