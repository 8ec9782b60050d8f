"""CPU time per page of language detection: langdetect itself against our LanguageDetector.

    python bench/bench_language.py [--repeats 3] [--raw] [--before /tmp/language_before.py]

The pages are those the `en` pipeline detects: the text of the realistic WET samples' pages
after the released cleaning rules (PUBLIC_C4_CLEANING); `--raw` takes the WET text as it is (more
languages, longer texts). Timed, one thread, rounds interleaved, median of the rounds:
- the library (DetectorFactory over the profiles in name order, seed 0), page by page;
- ours (langdetect-rs) on a fresh LanguageDetector (its construction not timed), "cold", and on
  the same pages again, "warm" (the numpy detector before it cached tokens' n-grams);
- the start-up of the first LanguageDetector() in a fresh process (later ones share its tables);
- with `--before FILE`, the same for another version of the detector in one file (the module
  pipelines/language.py was before it became a package, now pipelines/filters/language/:
  `git show 7f6814f:pipelines/language.py > /tmp/language_before.py`), for before/after
  figures from one run.
Every result is checked to equal the library's.
"""
import os

for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                  "NUMEXPR_NUM_THREADS"):
    os.environ[_variable] = "1"  # Before numpy is imported: one thread, as a Beam worker core.

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import pathlib  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from langdetect import detector_factory  # noqa: E402

from pipelines.filters import cleaning, language  # noqa: E402
from pipelines.page import Page  # noqa: E402
from pipelines.readers import wet  # noqa: E402
from pipelines.readers.files import open_raw  # noqa: E402

SHARED = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def read_texts(raw: bool):
    texts = []
    for path in sorted((SHARED / "wet" / "realistic").glob("*.warc.wet.gz")):
        for item in wet.read_wet(lambda: open_raw(str(path)), 10**6):
            if isinstance(item, Page):
                texts.append(item.text if raw else
                             cleaning.clean_page(item.text, cleaning.PUBLIC_C4_CLEANING).text)
    return [text for text in texts if text]


def cpu_seconds(function):
    start = time.process_time()
    result = function()
    return time.process_time() - start, result


def library_detect(texts):
    factory = language.sorted_profiles_factory()
    factory.seed = language.LANGDETECT_SEED

    def detect(text):
        detector = factory.create()
        detector.append(text)
        try:
            best = detector.get_probabilities()
        except detector_factory.LangDetectException:
            return None
        return (best[0].lang, best[0].prob) if best else None
    return lambda: [detect(text) for text in texts]


def detect_all(detector, texts):
    return [detector.detect(text) for text in texts]


_STARTUP = """
import importlib.util, sys, time
sys.path.insert(0, {root!r})
spec = importlib.util.spec_from_file_location("language_under_test", {path!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
start = time.process_time()
module.LanguageDetector()
print(time.process_time() - start)
"""


def startup_seconds(path):
    """CPU seconds of the first LanguageDetector() of a fresh process (imports left out)."""
    root = str(pathlib.Path(__file__).resolve().parents[1])
    output = subprocess.run([sys.executable, "-c", _STARTUP.format(root=root, path=str(path))],
                            capture_output=True, text=True, check=True).stdout
    return float(output.split()[-1])


def load_module(path):
    spec = importlib.util.spec_from_file_location("language_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--raw", action="store_true", help="WET text, not cleaned")
    parser.add_argument("--before", help="another version of the detector, in one file, to time alongside")
    args = parser.parse_args()

    texts = read_texts(args.raw)
    characters = sum(map(len, texts))
    print(f"{len(texts)} pages ({'raw WET text' if args.raw else 'cleaned, en rules'}), "
          f"{characters / len(texts):,.0f} characters per page; CPU ms, median of "
          f"{args.repeats} interleaved rounds, one thread\n")
    versions = {"ours": language}
    if args.before:
        versions = {"before": load_module(args.before), **versions}
    library = library_detect(texts)
    times = {}
    expected = None
    for _ in range(args.repeats):
        seconds, results = cpu_seconds(library)
        times.setdefault("library", []).append(seconds)
        expected = expected or results
        for name, module in versions.items():
            times.setdefault(f"{name} start-up", []).append(startup_seconds(module.__file__))
            detector = module.LanguageDetector()
            for cache in ("cold", "warm"):
                seconds, results = cpu_seconds(lambda: detect_all(detector, texts))
                times.setdefault(f"{name} {cache}", []).append(seconds)
                if results != expected:
                    raise AssertionError(f"{name} ({cache}) differs from the library")

    library_ms = statistics.median(times["library"]) * 1000 / len(texts)
    print(f"{'':<20}{'ms/page':>10}{'x library':>11}")
    for name, seconds in times.items():
        if name.endswith("start-up"):
            continue
        ms = statistics.median(seconds) * 1000 / len(texts)
        print(f"{name:<20}{ms:>10.3f}{library_ms / ms:>10.1f}x")
    for name in versions:
        startup_ms = statistics.median(times[name + " start-up"]) * 1000
        print(f"{name + ' start-up':<20}{startup_ms:>10.0f} ms (a process's first detector)")
    if "before" in versions:
        for cache in ("cold", "warm"):
            ratio = statistics.median(times[f"before {cache}"]) / statistics.median(
                times[f"ours {cache}"])
            print(f"ours / before, {cache} cache: {ratio:.2f}x faster")


if __name__ == "__main__":
    main()
