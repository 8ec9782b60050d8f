"""Pre-train, fine-tune, evaluate, decode and export with one command line and gin configuration.

    python -m model pretrain --model_dir DIR \
        --gin_file sizes/base.gin --gin_file architectures/encoder_decoder.gin \
        --gin_file pretrain.gin --gin_param "DataConfig.source = 'tfds:t5_c4/en@/data/tfds'"

Gin files are looked up in model/gin/ (see model/TRAINING.md). The command line parses, builds
the run with its family (model/families/'s registry) and calls the library: the trainer
(model/trainer/) for pre-training, validation and decoding, the one task loop
(model/tasks/task_runs.py `run_tasks`, which asks the family for its `task_plan`) for task runs,
and the family for exports (`ModelFamily.export`). `python -m model`
(model/__main__.py) runs it for its commands pretrain, finetune, eval, decode and export.

`python -m model.train --mode M` is its former name, until the next release: run so, this
module runs `python -m model.renamed model.train ...` (model/renamed.py: the notice, then the
new name) in a new process before it imports anything.
"""
from __future__ import annotations

import sys

if __name__ == "__main__":
    import subprocess
    sys.exit(subprocess.call([sys.executable, "-m", "model.renamed", "model.train",
                              *sys.argv[1:]]))

import argparse  # noqa: E402  (a former name's run above imports nothing)
import dataclasses  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
from typing import Optional, Sequence  # noqa: E402

import gin  # noqa: E402

from model import families  # noqa: E402
from model.tasks import selection, task_runs  # noqa: E402
from model.trainer import checkpoint_state, run_paths, runs  # noqa: E402
from model.trainer.verbosity import add_verbosity_flag, quiet_libraries  # noqa: E402


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m model.train") -> int:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=runs.MODES, required=True)
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--gin_file", action="append", default=[])
    parser.add_argument("--gin_param", action="append", default=[])
    parser.add_argument("--input_file", help="decode: one input text per line")
    parser.add_argument("--output_file", help="decode: where the decodes go (default stdout)")
    parser.add_argument("--export_dir", help="export: where the Hugging Face model goes")
    parser.add_argument("--checkpoint", default="",
                        help="export, and eval and decode without --task: the checkpoint, a "
                             "path or a name in --model_dir (model.ckpt-360), or 'best' "
                             "(eval/best.json's; with --task for one task's); default the newest")
    parser.add_argument(runs.ALLOW_UNTRAINED, action="store_true", help=runs.ALLOW_UNTRAINED_HELP)
    selection.add_arguments(parser)
    add_verbosity_flag(parser)
    args = parser.parse_args(argv)
    quiet_libraries(args.verbosity)
    try:
        default_gin = {"pretrain": ["pretrain.gin"], "finetune": ["finetune.gin"]}
        if args.mode in runs.MODES_ON_A_RUN and args.checkpoint in ("", "best"):
            # A run that is not there has nothing to read: say so before its settings are missed.
            checkpoint_state.require_folder(args.model_dir)
        # eval, decode and export take the run's own settings; flags given again override them.
        request = selection.TaskRequest.from_args(args)
        recorded = (runs.apply_recorded_bindings(args.model_dir, request.given)
                    if args.mode in runs.MODES_ON_A_RUN else {})
        runs.parse_gin(default_gin.get(args.mode, []) + args.gin_file, args.gin_param)
        runs.warn_overrides(recorded, args.model_dir)
        # In the mode's gin scope: a binding may hold for one mode alone (T5.1.1's
        # `pretrain/ModelConfig.dropout_rate = 0.0`).
        with gin.config_scope(args.mode):
            if args.mode in runs.TRAINING_MODES:
                # Recorded absolute: later commands on the run read them from anywhere.
                run_paths.bind_absolute()
            run = dataclasses.replace(families.configured_run(args.model_dir),
                                      recorded_paths=runs.recorded_paths(recorded))
        if args.mode == "export":
            if not args.export_dir:
                raise ValueError("export needs --export_dir")
            checkpoint = task_runs.resolve_checkpoint(args.model_dir, args.checkpoint, args.task)
            runs.require_trained(run, checkpoint, args.allow_untrained)
            runs.progress(f"exporting {checkpoint}")
            with checkpoint_state.naming_damage(checkpoint):
                exported = run.family.export(run, args.export_dir, checkpoint, args.task)
            print(json.dumps(exported))
        elif request.given:
            print(json.dumps(task_runs.run_tasks(args.mode, run, request)))
        elif args.mode in ("pretrain", "finetune"):
            step = runs.train(run, run.training_examples(), run.vocabulary.vocab_size)
            print(json.dumps({"step": step}))
        elif args.mode == "eval":
            checkpoint = task_runs.resolve_checkpoint(args.model_dir, args.checkpoint)
            with checkpoint_state.naming_damage(checkpoint):
                metrics = runs.evaluate(run, run.validation_examples, run.vocabulary.vocab_size,
                                        checkpoint)
            print(json.dumps(metrics))
        else:
            # Decided by the run's recorded configuration, before anything is read.
            refusal = run.family.text_decoding_refusal(run.family_config, args.model_dir)
            if refusal:
                raise ValueError(f"decode writes text, and {refusal}")
            if not args.input_file:
                raise ValueError("decode needs --input_file")
            texts = pathlib.Path(args.input_file).read_text().splitlines()
            checkpoint = task_runs.resolve_checkpoint(args.model_dir, args.checkpoint)
            with checkpoint_state.naming_damage(checkpoint):
                decodes = runs.decode(run, texts, run.data_config.inputs_length, checkpoint)
            out = "\n".join(decodes) + "\n"
            if args.output_file:
                pathlib.Path(args.output_file).write_text(out)
            else:
                sys.stdout.write(out)
    # Gin reports unknown names as ValueError/KeyError and malformed files as SyntaxError.
    except (ValueError, KeyError, SyntaxError, FileNotFoundError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0

