"""Format `openai`: GPT-1 as OpenAI released it, finetune-transformer-lm's `model/` folder.

    python -m model import --family gpt1 --format openai --source finetune-transformer-lm/model \
        --model_dir DIR [--gin_param "ModelConfig.num_heads = 12"]

The folder holds `params_shapes.json` (the shapes of the parameters, in the order of the
variables of OpenAI's train.py), `params_0.npy` ... `params_9.npy` (one flat float32 vector of
all of them, cut into ten files), and the BPE vocabulary `encoder_bpe_40000.json` and
`vocab_40000.bpe` (model/families/gpt1/bpe.py). The parameters, as train.py reads them back:
the position embedding [n_ctx, n_embd] (512 x 768), the token embedding [n_vocab, n_embd]
(40,478 x 768; train.py joins the two, with the special tokens' rows between them, into its one
matrix `we` at fine-tuning), then per block `h{i}`: attn/c_attn w [1, d, 3d] and b, attn/c_proj
w [1, d, d] and b, ln_1 g and b, mlp/c_fc w [1, d, 4d] and b, mlp/c_proj w [1, 4d, d] and b,
ln_2 g and b. transformers' `load_tf_weights_in_openai_gpt` reads the same files (with a list of
names beside them that the release does not have) into OpenAIGPTModel, whose names these are
once the `w`'s convolution axis of size 1 is dropped, and which our GPT-1 maps to
(model/families/gpt1/hf.py): the release is read into that state dict and imported as a
transformers folder is, every check alike (model/convert/checkpoints.py `import_state`).

What the files do not say: the number of heads (OpenAI's train.py default, 12, unless gin binds
`ModelConfig.num_heads`), the layer-norm epsilon (train.py's 1e-5), the activation (its tanh
GELU) and the dropout rates (0.1). The special tokens `_start_`, `_delimiter_` and `_classify_`
come after the pieces in our vocabulary as in train.py: their three embedding rows, which the
release does not have, are written as zeros; a fine-tuning head replaces them with fresh rows
(`gpt1/head/special_embedding`), as train.py draws new ones. The vocabulary's two files are
copied beside the checkpoint and bound as `DataConfig.vocabulary` (unless one is given), and the
encoder's pieces must be the token embedding's rows.
"""
from __future__ import annotations

import json
import pathlib
from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np

from model.families.gpt1 import bpe, hf
from model.convert import checkpoints
from model.trainer import runs

SHAPES_FILE = "params_shapes.json"
PARAMETER_FILES = tuple(f"params_{n}.npy" for n in range(10))
ENCODER_FILE = "encoder_bpe_40000.json"
MERGES_FILE = "vocab_40000.bpe"
# One block's parameters in the order of train.py's variables: (OpenAI's name, transformers'
# OpenAIGPTModel name, shape for n_embd d).
BLOCK = (("attn/c_attn/w", "attn.c_attn.weight", lambda d: [1, d, 3 * d]),
         ("attn/c_attn/b", "attn.c_attn.bias", lambda d: [3 * d]),
         ("attn/c_proj/w", "attn.c_proj.weight", lambda d: [1, d, d]),
         ("attn/c_proj/b", "attn.c_proj.bias", lambda d: [d]),
         ("ln_1/g", "ln_1.weight", lambda d: [d]),
         ("ln_1/b", "ln_1.bias", lambda d: [d]),
         ("mlp/c_fc/w", "mlp.c_fc.weight", lambda d: [1, d, 4 * d]),
         ("mlp/c_fc/b", "mlp.c_fc.bias", lambda d: [4 * d]),
         ("mlp/c_proj/w", "mlp.c_proj.weight", lambda d: [1, 4 * d, d]),
         ("mlp/c_proj/b", "mlp.c_proj.bias", lambda d: [d]),
         ("ln_2/g", "ln_2.weight", lambda d: [d]),
         ("ln_2/b", "ln_2.bias", lambda d: [d]))
# What the release does not record: OpenAI's train.py defaults.
NUM_HEADS = 12
LAYER_NORM_EPSILON = 1e-5
DROPOUT_RATE = 0.1


class ReleaseError(ValueError):
    """The folder is not finetune-transformer-lm's `model/` layout."""


def release_layout(shapes: Sequence[Sequence[int]], source: str = "") -> Tuple[Dict[str, int],
                                                                                List[str]]:
    """({"n_ctx", "n_vocab", "n_embd", "n_layer"}, OpenAI's names in file order) of the
    parameters that `params_shapes.json` lists; a ReleaseError names every entry out of place."""
    where = f"{source}/{SHAPES_FILE}" if source else SHAPES_FILE
    if len(shapes) < 2 or any(len(s) != 2 for s in shapes[:2]) or shapes[0][1] != shapes[1][1]:
        raise ReleaseError(f"{where} does not begin with the position and token embeddings "
                           f"[n_ctx, n_embd] and [n_vocab, n_embd]: {list(shapes[:2])}")
    (n_ctx, d), (n_vocab, _) = shapes[:2]
    blocks, rest = divmod(len(shapes) - 2, len(BLOCK))
    if rest or not blocks:
        raise ReleaseError(f"{where} lists {len(shapes)} parameters: 2 embeddings and "
                           f"{len(BLOCK)} per block are expected")
    names = ["positions", "tokens"]
    wrong = []
    for block in range(blocks):
        for k, (name, _, shape) in enumerate(BLOCK):
            names.append(f"h{block}/{name}")
            entry = 2 + block * len(BLOCK) + k
            if list(shapes[entry]) != shape(d):
                wrong.append(f"entry {entry} (h{block}/{name}): {list(shapes[entry])}, "
                             f"expected {shape(d)}")
    if wrong:
        raise ReleaseError(f"{where} has {len(wrong)} parameter(s) of the wrong shape for "
                           f"n_embd {d}:\n  " + "\n  ".join(wrong))
    return {"n_ctx": n_ctx, "n_vocab": n_vocab, "n_embd": d, "n_layer": blocks}, names


def read_release(folder: str) -> Tuple[Dict[str, int], Dict[str, np.ndarray]]:
    """(sizes, {OpenAI's name: array}) of a release folder, every file checked first."""
    path = pathlib.Path(folder)
    missing = [name for name in (SHAPES_FILE,) + PARAMETER_FILES + (ENCODER_FILE, MERGES_FILE)
               if not (path / name).is_file()]
    if missing:
        raise FileNotFoundError(f"{folder} lacks {', '.join(missing)} (finetune-transformer-lm's "
                                f"model/ folder is expected)")
    shapes = json.loads((path / SHAPES_FILE).read_text())
    sizes, names = release_layout(shapes, folder)
    flat = np.concatenate([np.load(path / name).reshape(-1) for name in PARAMETER_FILES])
    expected = sum(int(np.prod(shape)) for shape in shapes)
    if flat.size != expected:
        raise ReleaseError(f"{folder}/{PARAMETER_FILES[0]} ... {PARAMETER_FILES[-1]} hold "
                           f"{flat.size} values, {SHAPES_FILE} lists {expected}")
    parts = np.split(flat.astype(np.float32), np.cumsum([int(np.prod(s)) for s in shapes])[:-1])
    return sizes, {name: part.reshape(shape) for name, part, shape in zip(names, parts, shapes)}


def transformers_state(parameters: Dict[str, np.ndarray], sizes: Dict[str, int]
                       ) -> Dict[str, np.ndarray]:
    """OpenAIGPTModel's state dict of the release's parameters, the token embedding followed by
    the special tokens' three zero rows."""
    special_rows = np.zeros([len(bpe.SPECIAL_TOKENS), sizes["n_embd"]], np.float32)
    state = {"positions_embed.weight": parameters["positions"],
             "tokens_embed.weight": np.concatenate([parameters["tokens"], special_rows])}
    for block in range(sizes["n_layer"]):
        for name, theirs, _ in BLOCK:
            value = parameters[f"h{block}/{name}"]
            state[f"h.{block}.{theirs}"] = value[0] if name.endswith("/w") else value
    return state


def transformers_config(sizes: Dict[str, int], num_heads: int):
    """The OpenAIGPTConfig of the release's sizes (vocabulary: the pieces and the three special
    tokens) and what train.py fixes."""
    from transformers import OpenAIGPTConfig
    return OpenAIGPTConfig(
        vocab_size=sizes["n_vocab"] + len(bpe.SPECIAL_TOKENS), n_positions=sizes["n_ctx"],
        n_embd=sizes["n_embd"], n_layer=sizes["n_layer"], n_head=num_heads, afn=hf.TANH_GELU,
        resid_pdrop=DROPOUT_RATE, embd_pdrop=DROPOUT_RATE, attn_pdrop=DROPOUT_RATE,
        layer_norm_epsilon=LAYER_NORM_EPSILON)


def check_vocabulary(folder: str, sizes: Dict[str, int]) -> pathlib.Path:
    """The release's encoder file, whose pieces must be the token embedding's rows."""
    encoder = pathlib.Path(folder) / ENCODER_FILE
    pieces = bpe.BpeVocabulary(encoder).num_pieces
    if pieces != sizes["n_vocab"]:
        raise ReleaseError(f"{encoder} has {pieces} pieces; the token embedding of "
                           f"{folder}/{SHAPES_FILE} has {sizes['n_vocab']} rows")
    return encoder


class OpenAIFormat(checkpoints.CheckpointFormat):
    """GPT-1's format `openai` (import only): the release, through `conversion` (GPT-1's
    OpenAIGPTLMHeadModel, model/families/gpt1/hf.py)."""

    directions = ("import",)

    def __init__(self, conversion: Callable[[], checkpoints.Conversion]):
        self.conversion = conversion

    def import_checkpoint(self, source, model_dir):
        conv = self.conversion()
        sizes, parameters = read_release(source)
        encoder = check_vocabulary(source, sizes)
        num_heads = runs.gin_value("ModelConfig.num_heads") or NUM_HEADS
        return checkpoints.import_state(
            conv, transformers_config(sizes, num_heads), transformers_state(parameters, sizes),
            source, model_dir, [encoder, bpe.merges_path(encoder)])


__all__ = ["BLOCK", "ENCODER_FILE", "MERGES_FILE", "NUM_HEADS", "OpenAIFormat", "PARAMETER_FILES",
           "ReleaseError", "SHAPES_FILE", "check_vocabulary", "read_release", "release_layout",
           "transformers_config", "transformers_state"]
