"""Checkpoints in from and out to other formats, each family's own: the commands `import` and
`export --format` of `python -m model` (model/__main__.py).

    python -m model import --family FAMILY --format FORMAT --source PATH \
        --model_dir DIR [--gin_file ...] [--gin_param ...]
    python -m model export --family FAMILY --format FORMAT --model_dir DIR \
        --export_dir PATH [--gin_file ...] [--gin_param ...] [--checkpoint CKPT]

FAMILY is a family's package under model/families/ (t5, gpt1, bert, segabert) and FORMAT one
of the formats it declares (`ModelFamily.checkpoint_formats`: `hf`, transformers'
save_pretrained folders, for T5, GPT-1 and BERT; the released checkpoints: `t5`, `openai`,
`google` and SegaBERT's `pytorch`, which also exports), each a module of the family's package
over the shared machinery of model/convert/checkpoints.py, which says what an import checks and
writes. Every export also names a classifier's labels by its task and writes a model card
(card.py). This command line parses, resolves the family and its format, and calls it.

Import writes DIR/model.ckpt-0 and DIR/operative_config.gin; fine-tune it with
`--gin_file DIR/operative_config.gin --gin_param "TrainConfig.init_checkpoint = 'DIR'"`.
Export writes the checkpoint (default the newest in DIR; `--checkpoint` as a run's export:
"best", a path or a name in DIR), sized by DIR/operative_config.gin (written by an import or a
training run) and any gin given, to `--export_dir` (`--output`, the flag's former name, still
works, with a warning). `python -m model export` without `--format` is a run's own export
(model/train.py): T5's goes through the same code as its format `hf` (model/families/t5/hf.py).

`hf` exports T5 as T5ForConditionalGeneration, GPT-1 as OpenAIGPTLMHeadModel and BERT as
BertForPreTraining, each config's activation the GELU that ours computes (OpenAI GPT's afn
"gelu": its tanh form; BERT's hidden_act: BertConfig's, the tanh "gelu_new" unless the erf "gelu"
was imported). A BERT fine-tuned with a classification, regression, multiple-choice or span head
(BertConfig.head, which the run's operative_config.gin records) becomes
BertForSequenceClassification (regression: one label, problem_type "regression"),
BertForMultipleChoice or BertForQuestionAnswering. A head the configuration does not name,
GPT-1's heads and BERT's masked LM alone are refused: no model written has a place for them.
With DataConfig.vocabulary (recorded by a training run, and by an import that carries the
source's vocabulary), the folder also holds the tokenizer that gives the vocabulary's ids, for
`AutoTokenizer.from_pretrained` (each conversion's `tokenizer`): T5Tokenizer over a
SentencePiece model (T5's, GPT-1's),
OpenAIGPTTokenizerFast over OpenAI's BPE, BertTokenizer over a WordPiece vocab.txt.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Dict, Optional, Sequence

import gin

from model import families
from model.convert.checkpoints import CheckpointFormat, ConversionError, check_new_folder
from model.tasks import task_runs
from model.trainer import checkpoint_state, runs
from model.trainer.verbosity import add_verbosity_flag, quiet_libraries


def convertible_families() -> Dict[str, type]:
    """{package name: family class} of the registered families that declare formats."""
    return families.families_by_package(lambda family: family.checkpoint_formats(),
                                        "checkpoint formats")


def formats_by_family() -> str:
    """The formats of each convertible family with their directions, as --format's help lists
    them: "t5: hf (import, export), t5 (import); ..."."""
    return "; ".join(
        f"{package}: " + ", ".join(f"{name} ({', '.join(chosen.directions)})"
                                   for name, chosen in family.checkpoint_formats().items())
        for package, family in convertible_families().items())


def resolve(family: str, format_name: str, direction: str) -> CheckpointFormat:
    """The format `format_name` of the family package `family`, which must convert in
    `direction` ("import" or "export")."""
    known = convertible_families()
    if family not in known:
        raise ConversionError(f"unknown family {family!r}; choose one of {sorted(known)}")
    formats = known[family].checkpoint_formats()
    if format_name not in formats:
        raise ConversionError(f"--family {family} has no format {format_name!r}; it has "
                              f"{sorted(formats)}")
    chosen = formats[format_name]
    if direction not in chosen.directions:
        raise ConversionError(f"--family {family} --format {format_name} has no {direction} "
                              f"(it has {', '.join(chosen.directions)})")
    return chosen


def export_checkpoint(family: str, format_name: str, model_dir: str, export_dir: str,
                      checkpoint: str = "", recorded_paths: Optional[Dict[str, str]] = None,
                      allow_untrained: bool = False) -> Dict[str, str]:
    """Writes `checkpoint` (as a run's `--checkpoint`: "" the newest in `model_dir`,
    "best", a path or a name in `model_dir`), sized by the parsed gin configuration, in the
    format to `export_dir`. `recorded_paths` (runs.recorded_paths) lets a recorded path that
    is not there be named with the operative config it came from. A training run's checkpoint
    of the step it started from is refused unless `allow_untrained` (runs.require_trained)."""
    chosen = resolve(family, format_name, "export")
    expected = convertible_families()[family]
    with gin.config_scope("export"):
        run = dataclasses.replace(families.configured_run(model_dir),
                                  recorded_paths=recorded_paths or {})
    if run.family is not expected:
        raise ConversionError(f"--family {family} exports architectures {expected.architectures}; "
                              f"the gin configuration says {run.model_config.architecture!r}")
    path = task_runs.resolve_checkpoint(model_dir, checkpoint)
    runs.require_trained(run, path, allow_untrained)
    runs.progress(f"exporting {path}")
    with checkpoint_state.naming_damage(path):
        return chosen.export_checkpoint(run, export_dir, path)


# --- Command line ---------------------------------------------------------------------------

DEPRECATED_OUTPUT = ("--output is --export_dir's former name (model export's); it "
                     "still works, spell it --export_dir")


def export_folder(args: argparse.Namespace) -> str:
    """Where an export goes: --export_dir, or --output (its former name, with a warning)."""
    if args.output:
        if args.export_dir and args.export_dir != args.output:
            raise ConversionError(f"--export_dir {args.export_dir} and --output {args.output} "
                                  f"disagree; give --export_dir alone")
        runs.progress(f"warning: {DEPRECATED_OUTPUT}")
    chosen = args.export_dir or args.output
    if not chosen:
        raise ConversionError("export needs --export_dir (the folder to write)")
    return chosen


def main(argv: Optional[Sequence[str]] = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    direction = given[0] if given and given[0] in ("import", "export") else "import|export"
    parser = argparse.ArgumentParser(prog=f"python -m model {direction}",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("direction", choices=("import", "export"))
    parser.add_argument("--family", required=True,
                        help="a family's package under model/families/: "
                             f"{', '.join(convertible_families())}")
    parser.add_argument("--format", required=True,
                        help=f"one of the family's formats: {formats_by_family()}")
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--source", help="import: the source (a folder or checkpoint)")
    parser.add_argument("--export_dir",
                        help="export: the folder the converted checkpoint goes to")
    parser.add_argument("--output", help=f"deprecated: {DEPRECATED_OUTPUT}")
    parser.add_argument("--checkpoint", default="",
                        help="export: the checkpoint (default the newest of --model_dir; "
                             "'best', a path, or a name in --model_dir, as a run's export)")
    parser.add_argument(runs.ALLOW_UNTRAINED, action="store_true", help=runs.ALLOW_UNTRAINED_HELP)
    parser.add_argument("--gin_file", action="append", default=[])
    parser.add_argument("--gin_param", action="append", default=[])
    add_verbosity_flag(parser)
    args = parser.parse_args(argv)
    quiet_libraries(args.verbosity)
    try:
        # Export reads the run's recorded settings (an import's or a training's
        # operative_config.gin, model/train.py); gin files and bindings given override them.
        recorded = (runs.apply_recorded_bindings(args.model_dir)
                    if args.direction == "export" else {})
        runs.parse_gin(args.gin_file, args.gin_param)
        runs.warn_overrides(recorded, args.model_dir)
        if args.direction == "import":
            if not args.source:
                raise ConversionError("import needs --source")
            checkpoint_format = resolve(args.family, args.format, "import")
            check_new_folder(args.model_dir)  # every import writes into a new folder
            result = checkpoint_format.import_checkpoint(args.source, args.model_dir)
        else:
            result = export_checkpoint(args.family, args.format, args.model_dir,
                                       export_folder(args), args.checkpoint,
                                       runs.recorded_paths(recorded), args.allow_untrained)
        print(json.dumps(result))
    except (ValueError, KeyError, SyntaxError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0

