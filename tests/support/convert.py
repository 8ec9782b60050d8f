"""What the checkpoint-conversion tests share (tests/model/test_convert.py and the families' format
tests): tiny transformers models with every parameter redrawn, the inputs both sides run, our
logits from an imported checkpoint, the tolerance, `python -m model.convert` in process, and
the Google-layout BERT vocabulary."""
import pathlib
import re

import gin
import numpy as np
import pytest

from model import convert_command as convert
from model.convert import checkpoints
from model.trainer import runs
from model.trainer.model_config import ModelConfig

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TOLERANCE = 1e-5  # of the largest logit
RNG = np.random.RandomState(7)
T5_ENCODER = np.array([[5, 9, 33, 70, 1, 0, 0], [12, 100, 7, 7, 7, 44, 1]])
T5_TARGETS = RNG.randint(2, 120, size=(2, 5))
GPT_TOKENS = RNG.randint(0, 90, size=(2, 12))
# [CLS] A [SEP] B [SEP] with padding (id 0), as tests/model/test_bert_hf.py.
BERT_TOKENS = np.array([[2, 11, 12, 13, 3, 21, 22, 23, 3, 0, 0],
                        [2, 30, 31, 3, 40, 41, 42, 43, 44, 45, 3]])
BERT_TYPES = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0],
                       [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1]])


def randomized(model, seed=0):
    """Every parameter redrawn: gains around 1, everything else around 0."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator) * 0.3
            gain = name.endswith("layer_norm.weight") or "LayerNorm.weight" in name or \
                re.search(r"ln_\d\.weight", name) is not None
            parameter.copy_(noise + (1.0 if gain else 0.0))
    return model.eval()


def tiny_t5(gated: bool):
    config = transformers.T5Config(
        vocab_size=128, d_model=16, d_ff=32, num_layers=2, num_heads=2, d_kv=8,
        relative_attention_num_buckets=8, dropout_rate=0.0, decoder_start_token_id=0,
        feed_forward_proj="gated-gelu" if gated else "relu", tie_word_embeddings=not gated)
    return randomized(transformers.T5ForConditionalGeneration(config))


def tiny_gpt1():
    config = transformers.OpenAIGPTConfig(vocab_size=90, n_positions=32, n_embd=16, n_layer=2,
                                          n_head=2, afn="gelu", layer_norm_epsilon=1e-2)
    return randomized(transformers.OpenAIGPTLMHeadModel(config))


def tiny_bert(hidden_act="gelu_new", vocab_size=60):
    config = transformers.BertConfig(
        vocab_size=vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=32, hidden_act=hidden_act,
        layer_norm_eps=1e-2)
    return randomized(transformers.BertForPreTraining(config))


def transformers_logits(family, model):
    with torch.no_grad():
        if family == "t5":
            out = model(input_ids=torch.tensor(T5_ENCODER),
                        attention_mask=torch.tensor(T5_ENCODER > 0, dtype=torch.long),
                        labels=torch.tensor(T5_TARGETS))
            return {"logits": out.logits.numpy()}
        if family == "gpt1":
            return {"logits": model(torch.tensor(GPT_TOKENS)).logits.numpy()}
        out = model(input_ids=torch.tensor(BERT_TOKENS),
                    attention_mask=torch.tensor(BERT_TOKENS > 0, dtype=torch.long),
                    token_type_ids=torch.tensor(BERT_TYPES))
        return {"mlm_logits": out.prediction_logits.numpy(),
                "nsp_logits": out.seq_relationship_logits.numpy()}


OUR_INPUTS = {"t5": {"encoder_tokens": T5_ENCODER, "decoder_targets": T5_TARGETS},
              "gpt1": {"tokens": GPT_TOKENS},
              "bert": {"tokens": BERT_TOKENS, "token_types": BERT_TYPES}}
CLASSES = {"t5": transformers.T5ForConditionalGeneration,
           "gpt1": transformers.OpenAIGPTLMHeadModel, "bert": transformers.BertForPreTraining}


def our_logits(family, model_dir):
    """Our model's logits from the imported checkpoint, configured by the written gin file."""
    gin.clear_config()
    runs.parse_gin([str(model_dir / checkpoints.GIN_NAME)], [])
    return checkpoints.checkpoint_outputs(conversion(family), ModelConfig(), str(model_dir),
                                          OUR_INPUTS[family])


def conversion(family):
    """The family's transformers conversion (format `hf`), made from the parsed gin config."""
    return convert.resolve(family, "hf", "import").conversion()


def assert_close(ours, theirs):
    assert set(ours) == set(theirs)
    for name in theirs:
        assert ours[name].shape == theirs[name].shape, name
        scale = np.abs(theirs[name]).max()
        assert scale > 0.5, name  # far from zero: every parameter matters
        np.testing.assert_allclose(ours[name], theirs[name], rtol=0, atol=TOLERANCE * scale,
                                   err_msg=name)


def run_convert(*argv):
    gin.clear_config()
    return convert.main([str(a) for a in argv])


def import_folder(family, source, model_dir, *gin_params):
    argv = ["import", "--family", family, "--format", "hf", "--source", source,
            "--model_dir", model_dir]
    for binding in gin_params:
        argv += ["--gin_param", binding]
    return run_convert(*argv)


# A BERT vocabulary in Google's layout: reserved pieces, then words (120 ids).
GOOGLE_RESERVED = (["[PAD]"] + [f"[unused{i}]" for i in range(99)]
                   + ["[UNK]", "[CLS]", "[SEP]", "[MASK]"])
WORDS = ["the", "a", "cat", "dog", "sat", "on", "mat", "##s", "ran", ".", ",", "and", "big",
         "red", "##ly", "house"]
VOCAB = GOOGLE_RESERVED + WORDS  # 120 ids


def card_snippet(export_dir) -> str:
    """The Python block of an export's model card (README.md), as written."""
    text = (pathlib.Path(export_dir) / "README.md").read_text()
    found = re.search(r"^```python\n(.*?)^```$", text, re.M | re.S)
    assert found, f"no python block in {export_dir}/README.md"
    return found.group(1)


def run_card_snippet(export_dir, cwd) -> str:
    """The card's Python run as a user runs it, in a new process from `cwd`: its stdout."""
    import subprocess
    import sys
    result = subprocess.run([sys.executable, "-c", card_snippet(export_dir)], cwd=cwd,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout
