"""The T5 paper's evaluation metrics, in percent, through the well-kept packages.

Every metric takes postprocessed targets and predictions (class ids, floats, answer lists, ...)
and returns {metric name: value in percent}. Class-id metrics expect an invalid prediction to be
the id INVALID (-1): it never equals a target, so it always counts as wrong.
"""
from __future__ import annotations

import collections
import contextlib
import re
import string
from statistics import fmean
from typing import Callable, Hashable, Iterator, Sequence

import numpy as np
import sacrebleu
import scipy.stats
import sklearn.metrics
from rouge_score import rouge_scorer, scoring

from text.sentences import split_sentences

INVALID = -1  # the class id of a prediction that is no valid label


def accuracy(targets: Sequence, predictions: Sequence) -> dict[str, float]:
    return {"accuracy": 100 * sklearn.metrics.accuracy_score(targets, predictions)}


def f1_with_invalid(targets: Sequence[int], predictions: Sequence[int]) -> dict[str, float]:
    """Binary F1 of class 1; a prediction that is neither 0 nor 1 is flipped to the wrong class."""
    repaired = [p if p in (0, 1) else 1 - t for t, p in zip(targets, predictions)]
    # zero_division=0: sklearn's value when no pair is positive, without its warning.
    return {"f1": 100 * sklearn.metrics.f1_score(list(targets), repaired, zero_division=0.0)}


def macro_f1(num_classes: int):
    """Unweighted mean of the per-class F1 over classes 0..num_classes-1 (CB: 3 classes)."""
    def metric(targets: Sequence[int], predictions: Sequence[int]) -> dict[str, float]:
        value = sklearn.metrics.f1_score(list(targets), list(predictions),
                                         labels=list(range(num_classes)), average="macro",
                                         zero_division=0.0)
        return {f"mean_{num_classes}class_f1": 100 * value}
    return metric


def matthews_corrcoef(targets: Sequence[int], predictions: Sequence[int]) -> dict[str, float]:
    return {"matthews_corrcoef": 100 * sklearn.metrics.matthews_corrcoef(list(targets), list(predictions))}


def pearson_spearman(targets: Sequence[float], predictions: Sequence[float]) -> dict[str, float]:
    return {"pearson_corrcoef": 100 * scipy.stats.pearsonr(targets, predictions)[0],
            "spearman_corrcoef": 100 * scipy.stats.spearmanr(targets, predictions)[0]}


# --- SQuAD-style answers (SQuAD, ReCoRD) -------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """The official SQuAD v1.1 normalisation: lower case, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _token_f1(reference: str, prediction: str) -> float:
    reference_tokens, prediction_tokens = reference.split(), prediction.split()
    common = collections.Counter(reference_tokens) & collections.Counter(prediction_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / len(prediction_tokens), overlap / len(reference_tokens)
    return 2 * precision * recall / (precision + recall)


def squad(targets: Sequence[Sequence[str]], predictions: Sequence[str],
          normalize: Callable[[str], str] = normalize_answer) -> dict[str, float]:
    """Exact match and token F1 of normalised answers (SQuAD's normalisation unless another is
    given), each the best over the example's references."""
    exact, f1 = [], []
    for references, prediction in zip(targets, predictions):
        references = [normalize(r) for r in references]
        prediction = normalize(prediction)
        exact.append(max(float(r == prediction) for r in references))
        f1.append(max(_token_f1(r, prediction) for r in references))
    return {"em": 100 * fmean(exact), "f1": 100 * fmean(f1)}


# --- MultiRC --------------------------------------------------------------------------------

def multirc(groups: Sequence[Hashable], targets: Sequence[int],
            predictions: Sequence[int]) -> dict[str, float]:
    """F1 over all answer options (F1a) and the mean over questions of all-options-right (EM)."""
    by_question: dict[Hashable, list[bool]] = collections.defaultdict(list)
    for group, target, prediction in zip(groups, targets, predictions):
        by_question[group].append(target == prediction)
    exact_match = fmean(float(all(right)) for right in by_question.values())
    return {"exact_match": 100 * exact_match, **f1_with_invalid(targets, predictions)}


# --- generation ---------------------------------------------------------------------------------

def bleu(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
    """Corpus SacreBLEU, cased, `intl` tokenisation, `exp` smoothing: the paper's BLEU."""
    score = sacrebleu.corpus_bleu(list(predictions), [list(targets)], smooth_method="exp",
                                  smooth_value=0.0, force=False, lowercase=False,
                                  tokenize="intl", use_effective_order=False)
    return {"bleu": score.score}


ROUGE_KEYS = ("rouge1", "rouge2", "rougeLsum")


def sentence_per_line(summary: str) -> str:
    """The summary with one sentence per line, which is how rouge-score's rougeLsum (the paper's
    summary-level ROUGE-L) reads sentences. Both sides are split alike, whatever the data version:
    - the paper-era cnn_dailymail (TFDS 1.x) joined the highlights with " . ", which T5's scorer
      split on (t5.evaluation.metrics.rouge's `_prepare_summary`); that rule is kept;
    - today's cnn_dailymail (TFDS 3.x) ends each highlight with "." and joins them with newlines,
      but a model's decode has no newline (SentencePiece reads it as a space), so the lines of
      a summary are further split at sentence ends (text.sentences.split_sentences). Without
      this every prediction would be scored as one sentence."""
    lines = summary.replace(" . ", " .\n").split("\n")
    return "\n".join(sentence for line in lines for sentence in split_sentences(line))


# rouge-score's bootstrap resamples with numpy's global generator, which the t5 library leaves
# unseeded; a fixed seed makes a score the same on every run (house rule: deterministic output).
ROUGE_BOOTSTRAP_SEED = 0


@contextlib.contextmanager
def _numpy_global_seed(seed: int) -> Iterator[None]:
    """numpy's global generator seeded for the block, and the caller's state put back after."""
    state = np.random.get_state()
    np.random.seed(seed)
    try:
        yield
    finally:
        np.random.set_state(state)


def rouge(targets: Sequence[str], predictions: Sequence[str]) -> dict[str, float]:
    """ROUGE-1, ROUGE-2 and summary-level ROUGE-L F-measure as the t5 library reports them
    (t5.evaluation.metrics.rouge): rouge-score's default tokenisation (no stemmer), aggregated by
    its BootstrapAggregator (1,000 resamples of the examples), the `mid` value (the median of the
    resampled means) times 100, each summary split into sentences (`sentence_per_line`). The
    differences: the resampling is seeded (see above), and sentences are also split where the
    paper-era " . " separator is missing (today's data, and any model's decode of it)."""
    scorer = rouge_scorer.RougeScorer(list(ROUGE_KEYS))
    aggregator = scoring.BootstrapAggregator()
    for target, prediction in zip(targets, predictions):
        aggregator.add_scores(scorer.score(target=sentence_per_line(target),
                                           prediction=sentence_per_line(prediction)))
    with _numpy_global_seed(ROUGE_BOOTSTRAP_SEED):
        result = aggregator.aggregate()
    return {key: 100 * result[key].mid.fmeasure for key in ROUGE_KEYS}


# --- benchmark averages ----------------------------------------------------------------------

def benchmark_average(task_scores: dict[str, dict[str, float]]) -> float:
    """The GLUE / SuperGLUE score as the paper computes it: the metrics of each task averaged, then
    the tasks averaged. Pass MNLI matched and mismatched as one task with both accuracies."""
    return fmean(fmean(scores.values()) for scores in task_scores.values())
