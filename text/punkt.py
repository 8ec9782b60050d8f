"""NLTK's Punkt sentence splitter (the one the released C4 used), loaded from `punkt_tab` data.

The released C4 called `nltk.download('punkt')` on every worker and unpickled `english.pickle`.
Here the model comes from the tab-separated `punkt_tab` files (never a pickle, which can run
code when loaded), from a path given by the user or from NLTK's data path (`NLTK_DATA`), and
nothing is downloaded. The loaded tokenizer travels inside the Beam job, so workers need no
data files.
"""
import os
from typing import TYPE_CHECKING, List, Optional

if TYPE_CHECKING:
    from nltk.tokenize.punkt import PunktParameters, PunktSentenceTokenizer

# NLTK is imported where a Punkt model is loaded, not with this module: importing it costs about
# two CPU seconds (it loads SciPy), which every C4 job would pay at start-up for a splitter
# that only `--splitter punkt` uses.

PUNKT_TAB_FILES = ("collocations.tab", "sent_starters.txt", "abbrev_types.txt",
                   "ortho_context.tab")
_MODEL_IN_DATA_ROOT = "tokenizers/punkt_tab/{language}"


class PunktDataMissing(LookupError):
    """No `punkt_tab` model where one was looked for."""


def _has_model(folder: str) -> bool:
    return all(os.path.isfile(os.path.join(folder, name)) for name in PUNKT_TAB_FILES)


def _model_dir(data_path: Optional[str], language: str) -> str:
    """The folder holding the model's tab files: `data_path` itself or its
    `tokenizers/punkt_tab/<language>` (an NLTK data folder); without `data_path`, the first NLTK
    data folder (NLTK_DATA, then NLTK's defaults) that holds the model."""
    in_root = _MODEL_IN_DATA_ROOT.format(language=language)
    install = "python -m nltk.downloader -d DIR punkt_tab"
    if data_path:
        for candidate in (data_path, os.path.join(data_path, in_root)):
            if _has_model(candidate):
                return candidate
        raise PunktDataMissing(
            f"no punkt_tab model for {language!r} in {data_path}: expected the files "
            f"{', '.join(PUNKT_TAB_FILES)} there or in its {in_root}/ (an NLTK data folder; "
            f"get one with {install})")
    import nltk.data
    roots = [root for root in os.environ.get("NLTK_DATA", "").split(os.pathsep) if root]
    roots += [root for root in nltk.data.path if isinstance(root, str)]
    for root in roots:
        if _has_model(os.path.join(root, in_root)):
            return os.path.join(root, in_root)
    raise PunktDataMissing(
        f"no punkt_tab model for {language!r} in NLTK's data folders ({', '.join(roots)}); "
        f"give its folder with --punkt_data, or install it with {install} and set NLTK_DATA=DIR")


class PunktSplitter:
    """A picklable sentence splitter over a Punkt model: text -> its sentences."""

    def __init__(self, tokenizer: "PunktSentenceTokenizer", source: str):
        self._tokenizer = tokenizer
        self.source = source

    def __call__(self, text: str) -> List[str]:
        return list(self._tokenizer.tokenize(text))


def _read_params(model_dir: str) -> "PunktParameters":
    # NLTK's own loader opens files only under its data path; a user's folder is read here, with
    # NLTK's decoder for the tab format.
    from nltk.tabdata import PunktDecoder
    from nltk.tokenize.punkt import PunktParameters
    decoder = PunktDecoder()
    params = PunktParameters()

    def model_file(name):
        return open(os.path.join(model_dir, name), encoding="utf-8")

    with model_file("collocations.tab") as f:
        params.collocations = set(decoder.tab2tups(f))
    with model_file("sent_starters.txt") as f:
        params.sent_starters = decoder.txt2set(f)
    with model_file("abbrev_types.txt") as f:
        params.abbrev_types = decoder.txt2set(f)
    with model_file("ortho_context.tab") as f:
        params.ortho_context = decoder.tab2intdict(f)
    return params


def load_punkt(data_path: Optional[str] = None, language: str = "english") -> PunktSplitter:
    """The Punkt splitter of `language` from `data_path` (or NLTK_DATA); PunktDataMissing if
    there is no model."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer
    model_dir = _model_dir(data_path, language)
    return PunktSplitter(PunktSentenceTokenizer(_read_params(model_dir)), model_dir)
