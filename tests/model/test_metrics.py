"""The paper's metrics against values computed by hand (and the paper's own averages)."""
import numpy as np
import pytest
from rouge_score import rouge_scorer, scoring

from model import tasks
from model.tasks import metrics
from tests.support.training import numpy_token_metrics
from text.sentences import split_sentences


def test_accuracy_counts_an_invalid_prediction_wrong():
    assert metrics.accuracy([0, 1, 1, 0], [0, 1, 1, metrics.INVALID]) == {"accuracy": 75.0}
    assert metrics.accuracy([2, 1, 0], [2, 0, 0]) == {"accuracy": pytest.approx(200 / 3)}


def test_f1_flips_invalid_predictions_to_the_wrong_class():
    # predictions 1, (invalid, target 1 -> 0), 0, 1: TP 1, FP 1, FN 1 -> P = R = 1/2 -> F1 1/2
    assert metrics.f1_with_invalid([1, 1, 0, 0], [1, -1, 0, 1]) == {"f1": pytest.approx(50.0)}
    # an invalid prediction on a negative becomes a false positive: TP 1, FP 1 -> P 1/2, R 1 -> 2/3
    assert metrics.f1_with_invalid([1, 0], [1, 7]) == {"f1": pytest.approx(200 / 3)}


def test_macro_f1_over_three_classes():
    # class 0: P 1, R 1/2 -> 2/3; class 1: P 1/2, R 1 -> 2/3; class 2: 0 -> mean 4/9
    result = metrics.macro_f1(3)([0, 1, 2, 0], [0, 1, 1, -1])
    assert result == {"mean_3class_f1": pytest.approx(400 / 9)}


def test_matthews_correlation():
    # TP 1, TN 2, FP 0, FN 1: (1*2 - 0*1) / sqrt((1+0)(1+1)(2+0)(2+1))
    assert metrics.matthews_corrcoef([1, 1, 0, 0], [1, 0, 0, 0]) == {
        "matthews_corrcoef": pytest.approx(100 * 2 / 12 ** 0.5)}


def test_pearson_and_spearman():
    # x = 1,2,3, y = 1,2,4: cov 3, |dx| sqrt(2), |dy| sqrt(42)/3 -> 9 / sqrt(84); ranks agree -> 1
    assert metrics.pearson_spearman([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]) == {
        "pearson_corrcoef": pytest.approx(900 / 84 ** 0.5), "spearman_corrcoef": pytest.approx(100.0)}


def test_squad_normalisation():
    assert metrics.normalize_answer("The  U.S. Army!") == "us army"
    assert metrics.normalize_answer("an apple and a pear") == "apple and pear"


def test_squad_exact_match_and_f1_take_the_best_reference():
    # 1: "cat!" -> "cat" equals "The Cat" normalised: EM 1, F1 1.
    # 2: "red ball game" vs "big red ball": 2 common, P 2/3, R 2/3 -> F1 2/3; vs "a toy": 0.
    # 3: "a dog" vs "the dogs": "dog" and "dogs" differ: EM 0, F1 0.
    result = metrics.squad([["The Cat", "a dog"], ["a toy", "big red ball"], ["the dogs"]],
                           ["cat!", "red ball game", "a dog"])
    assert result == {"em": pytest.approx(100 / 3), "f1": pytest.approx(100 * (1 + 2 / 3) / 3)}


def test_multirc_exact_match_per_question_and_f1_over_answers():
    # question a: both right; question b: one invalid; question c: right -> EM 2/3.
    # F1 over 1,0,1,1,0 vs 1,0,1,(invalid -> 0),0: TP 2, FP 0, FN 1 -> P 1, R 2/3 -> 0.8
    result = metrics.multirc(["a", "a", "b", "b", "c"], [1, 0, 1, 1, 0], [1, 0, 1, -1, 0])
    assert result == {"exact_match": pytest.approx(200 / 3), "f1": pytest.approx(80.0)}


def test_bleu_by_hand():
    # "the cat sat on the mat" vs "the cat sat on a mat": precisions 5/6, 3/5, 2/4, 1/3; same length.
    result = metrics.bleu(["the cat sat on a mat"], ["the cat sat on the mat"])
    assert result == {"bleu": pytest.approx(100 * (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25)}


def test_bleu_smooths_a_zero_count_with_exp():
    # "a b c d" vs "a b c e": 3/4, 2/3, 1/2 and no 4-gram match, which exp smoothing counts as
    # 1 / (2^1 * 1) -> (3/4 * 2/3 * 1/2 * 1/2) ** (1/4)
    assert metrics.bleu(["a b c e"], ["a b c d"]) == {"bleu": pytest.approx(100 * (1 / 8) ** 0.25)}


def test_bleu_tokenises_unicode_punctuation_intl():
    # intl splits « and » off words ("13a" would not), so these agree token for token.
    assert metrics.bleu(["« Bonjour » dit le monde"], ["«Bonjour» dit le monde"]) == {"bleu": pytest.approx(100.0)}


def test_rouge_f_measures_by_hand():
    # "the cat ran" vs "the cat sat": unigrams 2/3, bigrams 1/2, longest common subsequence 2/3
    result = metrics.rouge(["the cat sat"], ["the cat ran"])
    assert result == {"rouge1": pytest.approx(200 / 3), "rouge2": pytest.approx(50.0),
                      "rougeLsum": pytest.approx(200 / 3)}


def test_rouge_l_is_summary_level_over_sentences():
    # Sentences "a b ." and "c d ." on their own lines: the union LCS over the reference sentences
    # matches all 4 words of the reversed-order prediction (ROUGE-L of the joined texts would not).
    result = metrics.rouge(["a b . c d ."], ["c d . a b ."])
    assert result["rougeLsum"] == pytest.approx(100.0)
    assert result["rouge1"] == pytest.approx(100.0)


ROUGE_PAIRS = [
    ("the cat sat on the mat . it was warm", "a cat sat on a mat . it was cold"),
    ("police arrested two men on friday", "two men were arrested by police"),
    ("the match ended in a draw . fans left early", "fans left the match early"),
    ("prices rose by three percent in june", "prices fell in june"),
    ("the mayor opened the new bridge", "the new bridge was opened"),
]


def test_rouge_is_the_t5_librarys_bootstrap_mid_and_deterministic():
    """t5.evaluation.metrics.rouge: rouge-score's BootstrapAggregator, mid F-measure x 100 (the
    library itself is the oracle, under our seed); the same on every call; the caller's numpy
    generator untouched; and not the plain mean of the per-example scores."""
    targets, predictions = zip(*ROUGE_PAIRS)
    scorer = rouge_scorer.RougeScorer(list(metrics.ROUGE_KEYS))
    aggregator = scoring.BootstrapAggregator()
    per_example = [scorer.score(target=t.replace(" . ", " .\n"), prediction=p.replace(" . ", " .\n"))
                   for t, p in ROUGE_PAIRS]
    for scores in per_example:
        aggregator.add_scores(scores)
    np.random.seed(metrics.ROUGE_BOOTSTRAP_SEED)
    expected = {key: 100 * value.mid.fmeasure for key, value in aggregator.aggregate().items()}

    np.random.seed(1234)
    result = metrics.rouge(list(targets), list(predictions))
    draw_after = np.random.random()
    np.random.seed(1234)
    assert np.random.random() == draw_after  # the global generator was put back as it was
    assert result == pytest.approx(expected, abs=1e-12)
    assert metrics.rouge(list(targets), list(predictions)) == result
    plain_mean = {key: 100 * np.mean([s[key].fmeasure for s in per_example])
                  for key in metrics.ROUGE_KEYS}
    assert result != pytest.approx(plain_mean, abs=1e-9)


def test_benchmark_averages_are_the_papers():
    """The baseline's validation scores of the paper's Table 14 give its GLUE 83.28 and SuperGLUE
    71.36: multi-metric tasks averaged first, MNLI-m and -mm as one task, WNLI left out."""
    glue = {"cola": {"mcc": 53.84}, "sst2": {"acc": 92.68}, "mrpc": {"f1": 92.07, "acc": 88.92},
            "stsb": {"pearson": 88.02, "spearman": 87.94}, "qqp": {"f1": 88.67, "acc": 91.56},
            "mnli": {"m": 84.24, "mm": 84.57}, "qnli": {"acc": 90.48}, "rte": {"acc": 76.28}}
    assert metrics.benchmark_average(glue) == pytest.approx(83.28, abs=0.005)
    super_glue = {"boolq": {"acc": 76.62}, "cb": {"f1": 91.22, "acc": 91.96}, "copa": {"acc": 66.20},
                  "multirc": {"f1a": 66.13, "em": 25.78}, "record": {"f1": 69.05, "em": 68.16},
                  "rte": {"acc": 75.34}, "wic": {"acc": 68.04}, "wsc": {"acc": 78.56}}
    assert metrics.benchmark_average(super_glue) == pytest.approx(71.36, abs=0.005)


def _bootstrap_mid(pairs) -> dict:
    """rouge-score's scorer and BootstrapAggregator under our seed, mid F-measure x 100: the t5
    library's aggregation, over (target, prediction) texts given as rougeLsum reads them."""
    scorer = rouge_scorer.RougeScorer(list(metrics.ROUGE_KEYS))
    aggregator = scoring.BootstrapAggregator()
    for target, prediction in pairs:
        aggregator.add_scores(scorer.score(target=target, prediction=prediction))
    state = np.random.get_state()
    np.random.seed(metrics.ROUGE_BOOTSTRAP_SEED)
    try:
        return {key: 100 * value.mid.fmeasure for key, value in aggregator.aggregate().items()}
    finally:
        np.random.set_state(state)


def test_rouge_lsum_reads_each_summary_sentence_by_sentence_on_the_real_stories(shared_data):
    """T5 scored ROUGE-Lsum with one sentence per line (t5.evaluation.metrics.rouge split the
    paper-era cnn_dailymail's " . "-joined highlights). Today's TFDS data (3.4.0) ends each
    highlight with "." and joins them with newlines, which a decode never has: the prediction must
    be split into its sentences too. Lead-3 of the 20 real stories against their highlights; the
    oracle is rouge-score given the three lead sentences and the highlight lines on their own lines
    (the sentences are known here, not found again). Scored as one line, the prediction loses
    2.7 points of ROUGE-Lsum (26.3 instead of 28.9 here)."""
    cnn = tasks.get("cnn_dailymail")
    stories = list(cnn.local_examples(str(shared_data / "tasks/cnn_dailymail/cnn_stories")))
    assert len(stories) == 20
    leads = [split_sentences(story["article"])[:3] for story in stories]
    targets = [story["highlights"] for story in stories]
    predictions = [" ".join(lead) for lead in leads]  # as a decode reads: no newline
    result = metrics.rouge(targets, predictions)

    expected = _bootstrap_mid([(t, "\n".join(lead)) for t, lead in zip(targets, leads)])
    assert result == pytest.approx(expected, abs=1e-9)
    one_line = _bootstrap_mid(zip(targets, predictions))
    assert result["rougeLsum"] > one_line["rougeLsum"] + 1.0, (result, one_line)
    # The paper-era format of the same data (highlights ending " ." and joined by spaces, a
    # prediction in that format) scores the same.
    paper_era = [" ".join(line.removesuffix(".") + " ." for line in t.split("\n")) for t in targets]
    assert "\n" not in "".join(paper_era)
    assert metrics.rouge(paper_era, predictions) == pytest.approx(result, abs=1e-9)


def test_sentence_per_line_splits_lines_paper_era_separators_and_sentence_ends():
    assert metrics.sentence_per_line("One here. Two there.\nThree .") == "One here.\nTwo there.\nThree ."
    assert metrics.sentence_per_line("a cat sat . a dog ran .") == "a cat sat .\na dog ran ."
    # An abbreviation does not end a sentence (text.sentences' rules).
    assert metrics.sentence_per_line("Dr. Smith came. He left.") == "Dr. Smith came.\nHe left."


# --- token metrics of the trainer (model/trainer/losses.py, model_fn's eval metrics, runs.evaluate) ----




def test_token_losses_equal_hand_computed_cross_entropy_and_accuracy():
    """model/losses.token_losses in a real Mesh TensorFlow graph against numpy: the loss, the
    objective with T5's z-loss (z * log_z^2 per token, mtf's Unitransformer._compute_loss) and
    the per-example sums and weights of token_loss and token_accuracy. Weighted accuracy here is
    3/5 (a weight-0 token is right, another wrong), so neither 1 - accuracy nor an unweighted
    count passes."""
    from model.trainer.losses import token_losses
    from model.trainer.mesh import MeshConfig, cpu_mesh_impl
    from model.trainer.mtf_compat import mtf
    import tensorflow.compat.v1 as tf

    rng = np.random.RandomState(0)
    logits = rng.normal(size=(2, 4, 6)).astype(np.float32) * 3
    best = logits.argmax(-1)
    # Right: (0,0), (0,1), (1,0); wrong: (0,2), (1,1); weight 0: (0,3) right, (1,2), (1,3) wrong.
    targets = np.where([[1, 1, 0, 1], [1, 0, 0, 0]], best, (best + 1) % 6).astype(np.int32)
    weights = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.int32)
    z_loss = 1e-2
    with tf.Graph().as_default():
        graph = mtf.Graph()
        mesh = mtf.Mesh(graph, "mesh")
        batch, length, vocab = mtf.Dimension("batch", 2), mtf.Dimension("length", 4), mtf.Dimension("vocab", 6)
        imported = [mtf.import_tf_tensor(mesh, tf.constant(value), mtf.Shape(dims)) for value, dims in
                    ((logits, [batch, length, vocab]), (targets, [batch, length]), (weights, [batch, length]))]
        result = token_losses(*imported, z_loss=z_loss)
        tensors = [result.loss, result.objective] + [t for name in ("token_loss", "token_accuracy")
                                                     for t in result.metrics[name]]
        lowering = mtf.Lowering(graph, {mesh: cpu_mesh_impl(MeshConfig())})
        outputs = [lowering.export_to_tf_tensor(t) for t in tensors]
        with tf.Session() as session:
            loss, objective, loss_sums, loss_weights, correct, correct_weights = session.run(outputs)
    expected = numpy_token_metrics(logits, targets, weights)
    assert expected["token_accuracy"] == pytest.approx(3 / 5)
    assert loss == pytest.approx(expected["loss"], rel=1e-5)
    assert objective == pytest.approx(
        expected["loss"] + z_loss * (expected["log_z"] ** 2 * weights).sum() / weights.sum(), rel=1e-5)
    np.testing.assert_array_equal(correct, [2, 1])
    np.testing.assert_array_equal(correct_weights, [3, 2])
    np.testing.assert_array_equal(loss_weights, [3, 2])
    assert loss_sums.sum() / loss_weights.sum() == pytest.approx(expected["loss"], rel=1e-5)


def test_eval_metrics_are_token_weighted_over_the_whole_validation_set():
    """model_fn's eval metric: sum of the per-example sums over sum of the weights, across
    batches (not the mean of per-example or per-batch ratios)."""
    from model.trainer.model_fn import _eval_metric_fn
    import tensorflow.compat.v1 as tf

    batches = [([3.0, 0.0], [4.0, 1.0]), ([5.0, 1.0], [5.0, 2.0])]  # (sums, weights) per example
    with tf.Graph().as_default():
        sums, weights = tf.placeholder(tf.float32, [None]), tf.placeholder(tf.float32, [None])
        value, update = _eval_metric_fn(["token_accuracy"])(sums, weights)["token_accuracy"]
        with tf.Session() as session:
            session.run(tf.local_variables_initializer())
            for batch_sums, batch_weights in batches:
                session.run(update, {sums: batch_sums, weights: batch_weights})
            result = session.run(value)
    assert result == pytest.approx((3 + 0 + 5 + 1) / (4 + 1 + 5 + 2))  # 0.75


