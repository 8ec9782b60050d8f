"""Our side of the comparisons with the released C4's code (tests/pipelines/test_released_c4.py,
tests/text/test_punkt.py): the shared lists' paths and the pages our command line writes."""
import gzip
import json
import pathlib

from pipelines import c4

BADWORDS = "badwords/en"
REALNEWS = "realnews/domain_to_allowed_subdomains.json"


def ours(output: pathlib.Path, config, wet_paths, badwords_path, realnews_path, webtext_lists,
         extra=()):
    c4.main(["--rules", "released", "--variant", config, "--input", *map(str, wet_paths),
             "--output", str(output), "--badwords", str(badwords_path),
             "--realnews_domains", str(realnews_path), "--train_shards", "2",
             *(["--webtext_urls", *map(str, webtext_lists)] if webtext_lists else []), *extra])
    pages = {}
    for split in ("train", "validation"):
        for shard in sorted(output.glob(f"{split}-*.jsonl.gz")):
            with gzip.open(shard, "rt", encoding="utf-8") as records:
                for line in records:
                    record = json.loads(line)
                    pages[record["url"]] = {  # The fields TFDS writes (ours has more).
                        "text": record["text"], "timestamp": record["timestamp"],
                        "content-type": record["content-type"],
                        "content-length": str(record["content-length"]), "split": split}
    return pages
