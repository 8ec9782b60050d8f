"""A multilingual corpus by language, and mT5's language sampling rates over it.

A corpus root is either
  FOLDER               the C4 pipeline's output of a variant that writes a folder per language
                       (mC4: `--variant multilingual`; `de-fr-ro`): FOLDER/<lang>/ holds the
                       splits train-*.jsonl.gz and validation-*.jsonl.gz and a stats.json that
                       counts their pages;
  tfds:NAME@DATA_DIR   a prepared TFDS dataset with a split per language, as TFDS's and our
                       `t5_c4/multilingual` (`de` and `de-validation`, ...).
A language's text is a source of model/data/inputs.py with a split of it.

mT5 (Xue et al., 2021, Section 3.2, "mT5") samples languages with p(L) proportional to
|L|^alpha, alpha = 0.3, |L| the language's number of examples: multilingual-t5's `mc4` mixture,
one task per language mixed by the t5 library's `rate_num_examples` with temperature 1/0.3 and
no maximum, over the TFDS splits' sizes. Its members are the 107 codes of the public `MC4_LANGUAGES`,
without `und`; so are ours by default (`languages_of(..., include_und=True)` adds it).
"""
from __future__ import annotations

import dataclasses
import json
import pathlib
from typing import Mapping, Optional, Sequence

from model.data import inputs, mixing

MT5_EXPONENT = 0.3  # mT5's alpha
UNDETERMINED = "und"
STATS_FILE = "stats.json"


@dataclasses.dataclass(frozen=True)
class LanguageText:
    """Where a language's training and validation text are: a source spec and its splits."""

    language: str
    source: str
    train_split: str
    validation_split: str
    num_examples: int  # training examples (pages)


def _folder_languages(root: pathlib.Path) -> dict[str, LanguageText]:
    found = {}
    for folder in sorted(path for path in root.iterdir() if path.is_dir()):
        stats_path = folder / STATS_FILE
        if not stats_path.is_file():
            continue
        try:
            stats = json.loads(stats_path.read_text())
            written = stats["stages"]["write"].get("pages.written:train", 0)
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as error:
            raise ValueError(f"{stats_path}: not the C4 pipeline's per-language statistics "
                             f"({error!r})") from None
        found[folder.name] = LanguageText(folder.name, str(folder), "train", "validation", int(written))
    if not found:
        raise ValueError(f"{root} has no language folder (<lang>/{STATS_FILE}): give the output "
                         f"folder of a C4 variant that writes one per language, such as "
                         f"`--variant multilingual`")
    return found


def _tfds_languages(name: str, data_dir: Optional[str]) -> dict[str, LanguageText]:
    import tensorflow_datasets as tfds

    if name.split("/")[0] == "t5_c4":
        import tfds_c4  # noqa: F401  (registers the t5_c4 builder)
    try:
        splits = tfds.builder(name, data_dir=data_dir).info.splits
    except (tfds.core.registered.DatasetNotFoundError, AssertionError, FileNotFoundError) as error:
        raise ValueError(f"cannot read TFDS dataset {name!r} (data_dir {data_dir}): "
                         f"{str(error).splitlines()[0]}") from None
    source = f"tfds:{name}@{data_dir}" if data_dir else f"tfds:{name}"
    found = {split: LanguageText(split, source, split, f"{split}-validation", splits[split].num_examples)
             for split in sorted(splits) if not split.endswith("-validation")}
    if not found or set(found) == {"train"}:
        raise ValueError(f"TFDS dataset {name!r} has no split per language (splits: {sorted(splits)})")
    return found


def corpus_languages(root: str) -> dict[str, LanguageText]:
    """Every language of a corpus root (see the module docstring), by code."""
    spec = inputs.tfds_spec(root)
    if spec is not None:
        return _tfds_languages(*spec)
    path = pathlib.Path(root)
    if not path.is_dir():
        raise FileNotFoundError(f"multilingual corpus not found: {root} (a pipeline output folder "
                                f"with a folder per language, or tfds:NAME@DATA_DIR)")
    return _folder_languages(path)


def languages_of(root: str, languages: Sequence[str] = (), include_und: bool = False
                 ) -> dict[str, LanguageText]:
    """The languages of a mixture: those named (each must have training text), else every
    language of the root that has training text, `und` only with `include_und`."""
    found = corpus_languages(root)
    if languages:
        unknown = sorted(set(languages) - set(found))
        if unknown:
            raise ValueError(f"{root} has no language {unknown} (it has {sorted(found)})")
        empty = sorted(name for name in languages if found[name].num_examples == 0)
        if empty:
            raise ValueError(f"{root}: no training text in {empty}")
        return {name: found[name] for name in sorted(set(languages))}
    chosen = {name: text for name, text in found.items()
              if text.num_examples > 0 and (include_und or name != UNDETERMINED)}
    if not chosen:
        raise ValueError(f"{root} has no training text in any language")
    return chosen


def language_rates(sizes: Mapping[str, float], exponent: float = MT5_EXPONENT) -> dict[str, float]:
    """mT5's sampling rates: p(L) proportional to |L|^exponent (`rate_num_examples` with
    temperature 1/exponent, no maximum)."""
    if not 0 < exponent <= 1:
        raise ValueError(f"the language sampling exponent must be in (0, 1], got {exponent}")
    return mixing.temperature_scaled(sizes, temperature=1 / exponent)
