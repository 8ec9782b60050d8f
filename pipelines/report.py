"""The datasheet of a C4 run, `OUT/report/index.html` (pipelines/audit/datasheet.py), as a
command:

    python -m pipelines.report OUT [--exclusions DIR] [--examples_per_reason K]
"""
import argparse
import sys
from typing import Optional, Sequence

from pipelines.audit.datasheet import Refused, ReportConfig, build_datasheet


def parser() -> argparse.ArgumentParser:
    command_line = argparse.ArgumentParser(
        prog="python -m pipelines.report",
        description="Writes OUT/report/index.html: the datasheet of the C4 run in OUT.")
    command_line.add_argument("output", metavar="OUT", help="a finished run's output folder")
    command_line.add_argument("--exclusions", default=None,
                              help="the run's exclusions sample (default: run_config.json's)")
    command_line.add_argument("--force", action="store_true",
                              help="write the datasheet even where it would lack the exclusions "
                                   "sample the run recorded or the page there now has")
    command_line.add_argument("--examples_per_reason", type=int,
                              default=ReportConfig.examples_per_reason,
                              help="example pages shown for each drop reason")
    return command_line


def main(argv: Optional[Sequence[str]] = None) -> str:
    args = parser().parse_args(argv)
    if args.examples_per_reason < 0:
        sys.exit("error: --examples_per_reason must be >= 0")
    try:
        path = build_datasheet(args.output, args.exclusions,
                               ReportConfig(examples_per_reason=args.examples_per_reason),
                               args.force)
    except (FileNotFoundError, Refused) as error:
        sys.exit(f"error: {error}")
    print(f"datasheet written to {path}")
    return path


if __name__ == "__main__":
    main()
