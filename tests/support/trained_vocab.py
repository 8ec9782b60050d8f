"""The small SentencePiece vocabulary the model tests share, trained once per test session.

Trained through the command line on the shared real text: English C4 pages (JSON lines) and
tatoeba sentences, German, French and Romanian treebank and tatoeba sentences, weighted 10:1:1:1.
The sample size is large enough to take every line of these small samples, and every character
gets a piece (coverage 1.0), so that any sentence of them must round-trip without unknowns.
"""
import atexit
import functools
import pathlib
import shutil
import tempfile

from model import train_vocab
from model.data.vocabulary import Vocabulary

SIZE = 1000
SAMPLE_SIZE = 60000


def sources(data: pathlib.Path) -> list[str]:
    text = data / "text"
    return [
        f"en={data}/c4_samples/olmo/*.json*.gz",
        f"en={text}/*/tatoeba.*.eng",
        f"de={text}/de/*.conllu", f"de={text}/de/tatoeba.deu-eng.deu",
        f"fr={text}/fr/*.conllu", f"fr={text}/fr/tatoeba.fra-eng.fra",
        f"ro={text}/ro/*.conllu", f"ro={text}/ro/tatoeba.ron-eng.ron",
    ]


@functools.lru_cache(maxsize=None)
def trained_vocabulary(data: pathlib.Path) -> Vocabulary:
    directory = pathlib.Path(tempfile.mkdtemp(prefix="test_vocab_"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    prefix = directory / "mix"
    arguments = ["--output", str(prefix), "--size", str(SIZE), "--sample_size", str(SAMPLE_SIZE),
                 "--weights", "en=10,de=1,fr=1,ro=1", "--character_coverage", "1.0"]
    for source in sources(data):
        arguments += ["--source", source]
    if train_vocab.main(arguments) != 0:
        raise RuntimeError("training the test vocabulary failed (see stderr)")
    return Vocabulary(f"{prefix}.model")
