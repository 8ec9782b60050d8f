"""Real text in several scripts for the tokenizer tests: Story Cloze stories, C4 pages, German
sentences, and one line of edge cases."""
import csv
import gzip
import itertools
import json
import pathlib

# Control characters, a tab, no-break space, a line separator, CJK ideographs, accents (composed
# and combining), typographic quotes, dashes and an ellipsis: each step of the basic tokenization.
EDGES = ("Tab\there,\u00a0nbsp\u2028line\x07bell \u4e2d\u6587字 café NAÏVE “quotes” — dash… "
         "Ångström e\u0301 \ufffd\x00end")


def real_texts(data: pathlib.Path):
    """Story Cloze stories (GPT-1's own fine-tuning task), C4 pages and German sentences."""
    texts = []
    with open(data / "tasks/story_cloze/cloze_test_val__spring2016.csv", newline="") as f:
        for row in itertools.islice(csv.DictReader(f), 40):
            texts.append(" ".join(row[f"InputSentence{i}"] for i in range(1, 5)))
    with gzip.open(data / "c4_samples/olmo/c4-sample.01.json.gz", "rt") as f:
        texts += [json.loads(line)["text"] for line in itertools.islice(f, 30)]
    texts += (data / "text/de/tatoeba.deu-eng.deu").read_text().splitlines()[:200]
    return texts + [EDGES]
