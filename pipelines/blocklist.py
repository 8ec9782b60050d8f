"""The blocklist study of Dodge et al. (2021, Section 5): what the bad-words filter removed, from
one run's exclusions (`--exclusions`): the pages it dropped, the terms that triggered it with
their counts, and the pages' domains. The exclusions are a sample by URL hash: each count is of
the sample, and `estimated_pages` scales the pages by the fraction.

    python -m pipelines.blocklist OUT --badwords ../shared/data/badwords/en

writes OUT/report/blocklist.json (what pipelines.report shows) and prints the most frequent
terms and domains.
"""
import argparse
import os
import sys
from typing import Optional, Sequence

from pipelines import exclusion_sample
from pipelines.audit.blocklist import dropped_for_badwords, exclusions_of, study
from pipelines.filters import badwords
from pipelines.records import write_json
from pipelines.wording import counted
from pipelines.writers import exclusions
from text.report_files import BLOCKLIST_FILE, REPORT_DIR, report_file

# The terms and domains printed, the most frequent first.
SHOWN = 20


def main(argv: Optional[Sequence[str]] = None) -> dict:
    options = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    options.add_argument("output", metavar="OUT", help="a C4 run's output folder")
    options.add_argument("--badwords", required=True,
                         help="the bad-words list the run filtered with")
    options.add_argument("--exclusions", default=None,
                         help="the run's exclusions (default: as its run_config.json names)")
    options.add_argument("--json", default=None,
                         help="where to write the study (default: "
                              f"OUT/{REPORT_DIR}/{BLOCKLIST_FILE})")
    args = options.parse_args(argv)
    try:
        directory, fraction = exclusions_of(args.output, args.exclusions)
        with open(args.badwords, "rb") as source:
            terms = badwords.parse_badwords(source.read(), args.badwords)
    except (OSError, ValueError, KeyError) as error:
        sys.exit(f"error: {error}")
    dropped = exclusions.lines(directory, exclusion_sample.EXCLUSIONS_SPLIT)
    found = study(dropped_for_badwords(dropped),
                  badwords.compile_badwords(terms), fraction)
    path = args.json or report_file(args.output, BLOCKLIST_FILE)
    if "://" not in path:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    write_json(path, found)
    in_run = ("every URL: the run's own" if fraction >= 1 else
              f"fraction {fraction:g}: about {found['estimated_pages']:,} in the run")
    print(f"{counted(found['pages'], 'page')} dropped for a bad word in the exclusions "
          f"({in_run})")
    for title, ranked in (("terms", found["terms"]), ("domains", found["domains"])):
        print(f"most frequent {title}: " + ", ".join(f"{name} {count:,}"
                                                   for name, count in ranked[:SHOWN]))
    print(f"written to {path}")
    return found


if __name__ == "__main__":
    main()
