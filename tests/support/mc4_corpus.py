"""The mC4 of the shared WET samples (`--variant multilingual`) and the mT5 recipe's vocabulary
learned on it, made once per test process and shared by the mT5 tests."""
import atexit
import functools
import pathlib
import shutil
import tempfile

from model import train_vocab
from model.data.vocabulary import Vocabulary
from pipelines import c4

# The mT5 recipe at a size that trains in seconds on the samples' text.
VOCABULARY_SIZE = 2000
VOCABULARY_SAMPLE = 3000  # about every line of the small languages' one or two pages


def _temporary_directory(prefix: str) -> pathlib.Path:
    directory = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return directory


@functools.lru_cache(maxsize=None)
def mc4_output(data: pathlib.Path) -> pathlib.Path:
    """The pipeline's mC4 output folder: a folder per language."""
    output = _temporary_directory("test_mc4_") / "mc4"
    c4.main(["--variant", "multilingual", "--input", f"{data}/wet/*/*",
             "--badwords_dir", str(data / "badwords"), "--output", str(output)])
    return output


@functools.lru_cache(maxsize=None)
def mt5_vocabulary(data: pathlib.Path) -> Vocabulary:
    """`train_vocab --recipe mt5` over the languages of `mc4_output`, at VOCABULARY_SIZE."""
    prefix = _temporary_directory("test_mt5_vocab_") / "mc4"
    code = train_vocab.main(["--recipe", "mt5", "--languages", str(mc4_output(data)),
                             "--output", str(prefix), "--size", str(VOCABULARY_SIZE),
                             "--sample_size", str(VOCABULARY_SAMPLE)])
    if code != 0:
        raise RuntimeError(f"train_vocab --recipe mt5 failed ({code})")
    return Vocabulary(f"{prefix}.model")
