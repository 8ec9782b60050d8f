"""BERT's forward pass against transformers' BertForPreTraining on the same weights.

A random tiny BERT is built in Mesh TensorFlow (model/families/bert/model.py), every variable set to
random values (layer norms and biases included, so that each one matters), mapped by name onto
BertForPreTraining (model/families/bert/hf.py) and both run on the same token ids, token types
and padding: the masked-LM logits at every position and the next-sentence logits must agree to
1e-5 of the largest logit. transformers' BERT is an independent implementation of Google's
modeling.py (BertModel, get_masked_lm_output, get_next_sentence_output in run_pretraining.py).
"""
import gin
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from model.families.bert import hf as bert_hf
from model.families.bert.model import Bert, BertConfig
from model.trainer.model_config import ModelConfig
from model.trainer.mtf_compat import mtf, placement_mesh_impl

VOCAB_SIZE = 50
CONFIG = ModelConfig(architecture="bert", d_model=16, d_ff=32, num_heads=2, d_kv=8,
                     num_layers=2, dropout_rate=0.1)
# [CLS] A [SEP] B [SEP] with padding; the rows differ in their lengths and segments.
TOKENS = np.array([[2, 11, 12, 13, 3, 21, 22, 23, 24, 3, 0, 0],
                   [2, 30, 31, 3, 40, 41, 42, 43, 44, 45, 46, 3],
                   [2, 17, 17, 17, 17, 3, 0, 0, 0, 0, 0, 0]], np.int32)
TYPES = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 0, 0],
                  [0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1],
                  [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]], np.int32)
TOLERANCE = 1e-5  # of the largest logit


def random_value(name, shape, rng):
    if name.endswith("/scale"):  # layer norms' gains around 1
        return 1.0 + rng.normal(0.0, 0.2, shape)
    return rng.normal(0.0, 0.2, shape)


def mesh_tensorflow_bert(seed=0):
    """Our tiny BERT with random weights: ({variable name: value}, MLM logits [batch, length,
    vocab], NSP logits [batch, 2]) on TOKENS / TYPES."""
    rng = np.random.default_rng(seed)
    gin.clear_config()
    with tf.Graph().as_default():
        family = Bert(CONFIG, VOCAB_SIZE)
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        logits = bert_hf.mtf_outputs(family, mesh, {"tokens": TOKENS, "token_types": TYPES})
        lowering = mtf.Lowering(graph, {mesh: placement_mesh_impl.PlacementMeshImpl(
            mtf.Shape([]), mtf.convert_to_layout_rules(""), [""])})
        outputs = [lowering.export_to_tf_tensor(logits[key])
                   for key in ("mlm_logits", "nsp_logits")]
        with tf.Session() as session:
            session.run(tf.global_variables_initializer())
            values = {}
            for variable in graph.trainable_variables:
                value = random_value(variable.name, variable.shape.to_integer_list, rng)
                variable.get_master().load(value.astype(np.float32), session)
                values[variable.name] = value.astype(np.float32)
            session.run(lowering.copy_masters_to_slices())
            mlm, nsp = session.run(outputs)
    return values, mlm, nsp


def transformers_bert(values, zero_positions=False):
    import torch
    import transformers

    config = bert_hf.transformers_config(CONFIG, BertConfig(), VOCAB_SIZE)
    model = transformers.BertForPreTraining(config).eval()
    state = {name: torch.tensor(value)
             for name, value in bert_hf.transformers_state(values, CONFIG.num_layers).items()}
    if zero_positions:
        state["bert.embeddings.position_embeddings.weight"] *= 0.0
    missing, unexpected = model.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"bert.embeddings.position_ids"}, (missing,
                                                                               unexpected)
    with torch.no_grad():
        out = model(input_ids=torch.tensor(TOKENS, dtype=torch.long),
                    attention_mask=torch.tensor(TOKENS != 0, dtype=torch.long),
                    token_type_ids=torch.tensor(TYPES, dtype=torch.long))
    return out.prediction_logits.numpy(), out.seq_relationship_logits.numpy()


@pytest.fixture(scope="module")
def ours():
    yield mesh_tensorflow_bert()
    gin.clear_config()


def relative_error(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_mapping_covers_every_variable_and_parameter(ours):
    import transformers

    values, _, _ = ours
    model = transformers.BertForPreTraining(
        bert_hf.transformers_config(CONFIG, BertConfig(), VOCAB_SIZE))
    state = bert_hf.transformers_state(values, CONFIG.num_layers)
    # Every parameter of theirs is set; every variable of ours used (the decoder is tied).
    assert set(state) == set(model.state_dict()) - {"bert.embeddings.position_ids"}
    assert sum(value.size for value in values.values()) == sum(
        p.numel() for p in model.parameters())


def test_logits_equal_transformers_bert_for_pretraining(ours):
    """MLM logits at every position and NSP logits within 1e-5 of the largest logit (GELU:
    both the tanh approximation, transformers' "gelu_new"). The inputs are sensitive to the
    position table: without it transformers' logits move by far more than the tolerance, so
    a model that dropped or zeroed its position embeddings fails here."""
    values, mlm, nsp = ours
    their_mlm, their_nsp = transformers_bert(values)
    assert relative_error(mlm, their_mlm) < TOLERANCE
    assert relative_error(nsp, their_nsp) < TOLERANCE
    unplaced_mlm, unplaced_nsp = transformers_bert(values, zero_positions=True)
    assert relative_error(unplaced_mlm, their_mlm) > 1000 * TOLERANCE
    assert relative_error(unplaced_nsp, their_nsp) > 1000 * TOLERANCE
