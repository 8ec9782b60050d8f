"""`tfds build`, for environments without mlcroissant: the same command, flags and code.

    python -m tfds_c4.build --imports tfds_c4 t5_c4/en --data_dir DIR --manual_dir DIR \
        --beam_pipeline_options="runner=DirectRunner"

TFDS 4.9.10's `tfds` script imports `mlcroissant` (for its `build_croissant` command) before it
parses anything, and requirements.txt does not install it; this entry point runs TFDS's own
`build` command (`tensorflow_datasets.scripts.cli.build.Args`) without that import.
"""
from absl import app
from tensorflow_datasets.scripts.cli import build, cli_utils

_parse_flags = cli_utils.make_flags_parser(build.Args, description=__doc__)


def _main(args: build.Args) -> None:
    args.execute()


if __name__ == "__main__":
    app.run(_main, flags_parser=_parse_flags)
