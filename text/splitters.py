"""The sentence splitters a C4 build can use, by name: `ours` (the default) or `punkt`."""
from typing import Callable, List, Optional

from text.punkt import load_punkt
from text.sentences import split_sentences

Splitter = Callable[[str], List[str]]  # Text -> its sentences, in order.
SPLITTER_NAMES = ("ours", "punkt")


def load_splitter(name: str, punkt_data: Optional[str] = None) -> Splitter:
    """`ours`: text/sentences.py, needs no data. `punkt`: NLTK Punkt from punkt_tab data at
    `punkt_data` or on NLTK_DATA (text.punkt.PunktDataMissing when there is none)."""
    if name == "ours":
        return split_sentences
    if name == "punkt":
        return load_punkt(punkt_data)
    raise ValueError(f"unknown sentence splitter {name!r}; choose one of {SPLITTER_NAMES}")
