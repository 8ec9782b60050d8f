"""A gzipped WET file of real text whose pages exercise every rule of mC4 (TFDS's `multilingual`).

The text is real: German, French and Romanian sentences from the shared Universal Dependencies
treebanks (their `# text = ` lines) and Tatoeba, English from Tatoeba and a C4 sample of The
Guardian, and Japanese, Chinese and Russian lines of the realistic WET samples' pages (joined
into new lines, so none equals a line of its source page). Sentences are grouped into lines of
200 characters or more ("paragraphs", what `paragraph_filter` counts). The pages, each tagged
with the rule it exercises (`SyntheticPage.kind`):

- ordinary pages per language (3-6 paragraphs, some titles and shared boilerplate lines), two
  per language with a URL in the validation split (MD5 of the URL modulo 1000 is 0);
- the paragraph filter's edges: 2 paragraphs; a third line of 199 characters, or of exactly 200;
  only lines under 200 characters; many short lines beside 3 paragraphs;
- line dedup: boilerplate shared by many pages, a shared line in another case (and one with
  `ß`, whose capitals `SS` lower-case to another line), a line twice on one page, a page copied to
  another URL (one of the two loses every line and goes), pages whose only own line is short
  (after dedup under or about CLD3's 100 bytes: `und`, or not);
- URL dedup: the same URL at different WARC-Dates (the newest kept, wherever it is in the input),
  at the same date (the first kept), under spellings that normalize alike (`http://www.`,
  `?utm_...`, a trailing slash), a newest version that the paragraph filter or the bad words
  then drop (the page goes: the older version does not come back);
- bad words: German, French and English pages with a term of their list (the soft filter at
  0.999 drops all but about 0.1%), and one German and one French such page whose URL is in the
  kept 0.1%; French pages with a term only `fr-CA-u-sd-caqc` has (it counts for `fr`); a term
  inside a longer word (no match), in capitals (matches: the text is lower-cased), the de list's
  capitalized `MILF` (never matches, for the same reason); a term of another language's list (no
  match), on a Romanian page (Romanian has no list); a term next to punctuation, at the start or
  the end of the text (matches), followed by a digit, an underscore or an accented letter (no
  match: word characters), terms of several words or with an apostrophe, an emoji term between
  spaces (matches) or between letters (no match);
- Japanese and Chinese pages (their terms match without word boundaries) with an allowlisted
  term (`女の子`, `性`: kept) or a listed one (dropped); Russian pages with and without a term;
- `und`: pages of digits only, of symbols, of paragraphs in four languages;
- CLD3 reads the first 10,000 bytes: a page German for its first 10,000 bytes and French after;
- the 190,000-character limit (a page of exactly 190,000 characters, kept; one more, dropped);
- parsing: CRLF line ends, blank and indented lines, a lone CR (a line break to TFDS's reader),
  lines that start with `Content-` or `WARC` (TFDS's reader takes them for headers and drops
  them), header lines in the text (`Content-Type: ...`, `Content-Length: ...`, `WARC-Date:
  ...` set the page's fields to TFDS's reader; a `WARC/1.0` line ends the page there), U+2028,
  U+0085 and form feeds inside lines (not line breaks to TFDS), empty records;
- URL spellings that normalize alike or not (`?refresh=`, `?ref`, `//` at the end, `&utm_`
  after another parameter, `HTTPS://`).

`write_second_wet` writes a second, small file whose pages repeat URLs and lines of the first:
a newer version (kept), an older one and one at the same date (the first file's kept: the first
in input order), and boilerplate lines of the first file (line dedup across files).

The file holds one gzip member per WARC record, a `warcinfo` record first, then `conversion`
records with WARC-Target-URI, WARC-Date, `Content-Type: text/plain` and a correct
Content-Length (warcio). Deterministic: the same seed gives the same bytes.
"""
import dataclasses
import gzip
import hashlib
import io
import json
import pathlib
import random
import re
import uuid
from typing import Dict, Iterable, List, Sequence

from warcio.archiveiterator import ArchiveIterator
from warcio.warcwriter import WARCWriter

SHARED_DATA = pathlib.Path(__file__).resolve().parents[2].parent / "shared" / "data"
LANGUAGES = ("de", "fr", "ro", "en")
SOFT_FILTER_FRACTION = 0.999  # c4.py's `multilingual` badwords_filter_fraction.
_UD = {"de": ("de_gsd-ud-dev.conllu", "de_gsd-ud-test.conllu"),
       "fr": ("fr_gsd-ud-dev.conllu", "fr_gsd-ud-test.conllu"),
       "ro": ("ro_rrt-ud-dev.conllu", "ro_rrt-ud-test.conllu")}
_TATOEBA = {"de": ("tatoeba.deu-eng.deu",), "fr": ("tatoeba.fra-eng.fra",),
            "ro": ("tatoeba.ron-eng.ron",)}
_ENGLISH = (("de", "tatoeba.deu-eng.eng"), ("fr", "tatoeba.fra-eng.eng"),
            ("ro", "tatoeba.ron-eng.eng"))
_GUARDIAN = "c4_samples/olmo/c4_100_domains_5_www.theguardian.com_00000000.jsonl.gz"
# Realistic sample pages whose lines give real text in other scripts.
_SCRIPT_FILES = ("CC-MAIN-2019-30-part-0.warc.wet.gz", "CC-MAIN-2019-30-part-1.warc.wet.gz")
_SCRIPT_SOURCES = {
    "ja": (("slpr.sakura.ne.jp", "ja.uncyclopedia.info", "ja.forvo.com",
            "addons.mozilla.org/ja/"), "[\u3040-\u30ff]"),
    "zh": (("html.rhhz.net", "k2r2bai.com"), "[\u4e00-\u9fff]"),
    "ru": (("munvnukovo.ru", "mmdc.ru", "dront.ru", "charter97"), "[\u0400-\u04ff]"),
}
# Characters that end a line for some reader (TextIOWrapper: \n and \r; str.splitlines: all).
_LINE_BREAKS = re.compile("[\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_MARSCH = "Helmut Kohl bewegt sich derweil schon im Marschschritt"  # 'arsch' inside a word.


@dataclasses.dataclass(frozen=True)
class SyntheticPage:
    url: str
    timestamp: str
    text: str
    kind: str  # The rule the page exercises.
    language: str = ""  # The language its text is written in ('' for digits, mixes, ...).
    file: int = 0  # 0: write_multilingual_wet's file; 1: write_second_wet's.


def write_wet(path: pathlib.Path, pages: Iterable[SyntheticPage]) -> int:
    """Writes the pages as a gzipped WET file, one gzip member per record, a warcinfo record
    first; returns how many conversion records. Record ids and dates are the pages' own, so
    the bytes depend on the pages only."""
    path = pathlib.Path(path)
    count = 0
    with open(path, "wb") as sink:
        writer = WARCWriter(sink, gzip=True)
        info = (f"software: tests/support/multilingual_wet.py\r\nisPartOf: mC4 oracle samples\r\n"
                f"description: real text arranged to exercise mC4's rules\r\n").encode()
        info_id = uuid.uuid5(uuid.NAMESPACE_URL, path.name)
        writer.write_record(writer.create_warc_record(
            "", "warcinfo", payload=io.BytesIO(info), warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Date": "2019-04-26T00:00:00Z", "WARC-Filename": path.name,
                               "WARC-Record-ID": f"<urn:uuid:{info_id}>"}))
        for number, page in enumerate(pages):
            record_id = uuid.uuid5(uuid.NAMESPACE_URL, f"{number} {page.url}")
            writer.write_record(writer.create_warc_record(
                page.url, "conversion", payload=io.BytesIO(page.text.encode("utf-8")),
                warc_content_type="text/plain",
                warc_headers_dict={"WARC-Date": page.timestamp,
                                   "WARC-Record-ID": f"<urn:uuid:{record_id}>"}))
            count += 1
    return count


def write_multilingual_wet(path: pathlib.Path, seed: int = 0,
                           shared_data: pathlib.Path = SHARED_DATA) -> List[SyntheticPage]:
    """Writes the file (see the module's docstring); returns its pages in input order."""
    pages = [page for page in multilingual_pages(seed, shared_data) if page.file == 0]
    write_wet(path, pages)
    return pages


def write_second_wet(path: pathlib.Path, seed: int = 0,
                     shared_data: pathlib.Path = SHARED_DATA) -> List[SyntheticPage]:
    """Writes the second file, to be read after the first (see the module's docstring)."""
    pages = [page for page in multilingual_pages(seed, shared_data) if page.file == 1]
    write_wet(path, pages)
    return pages


# ---------------------------------------------------------------------------------------------
# Sources.

def _usable(sentence: str) -> bool:
    return (10 <= len(sentence) <= 400 and sentence == sentence.strip()
            and not _LINE_BREAKS.search(sentence)
            and not sentence.startswith(("WARC", "Content-", "CONTENT-")))


def _unique(sentences: Iterable[str]) -> List[str]:
    seen, kept = set(), []
    for sentence in sentences:
        sentence = sentence.strip()
        if _usable(sentence) and sentence.lower() not in seen:
            seen.add(sentence.lower())
            kept.append(sentence)
    return kept


def _sentences(shared: pathlib.Path) -> Dict[str, List[str]]:
    """Real sentences per language, in file order, each once."""
    text = shared / "text"
    found = {}
    for lang in ("de", "fr", "ro"):
        sentences = []
        for name in _UD[lang]:
            with open(text / lang / name, encoding="utf-8") as lines:
                sentences += [line[len("# text = "):].rstrip("\n") for line in lines
                              if line.startswith("# text = ")]
        for name in _TATOEBA[lang]:
            sentences += (text / lang / name).read_text(encoding="utf-8").splitlines()
        found[lang] = sentences
    english = []
    for lang, name in _ENGLISH:
        english += (text / lang / name).read_text(encoding="utf-8").splitlines()
    with gzip.open(shared / _GUARDIAN, "rt", encoding="utf-8") as docs:
        for doc in docs:
            english += json.loads(doc)["text"].split("\n")
    found["en"] = english
    return {lang: _unique(sentences) for lang, sentences in found.items()}


def _script_lines(shared: pathlib.Path) -> Dict[str, List[str]]:
    """Lines in Japanese, Chinese and Russian from the realistic samples' pages."""
    found = {lang: [] for lang in _SCRIPT_SOURCES}
    for name in _SCRIPT_FILES:
        with open(shared / "wet" / "realistic" / name, "rb") as stream:
            for record in ArchiveIterator(stream):
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                for lang, (hosts, script) in _SCRIPT_SOURCES.items():
                    if record.rec_type != "conversion" or not any(h in url for h in hosts):
                        continue
                    for line in record.content_stream().read().decode("utf-8").split("\n"):
                        line = line.strip()
                        if (len(re.findall(script, line)) >= max(5, len(line) // 4)
                                and "\\" not in line and _usable(line)):
                            found[lang].append(line)
    return {lang: _unique(lines) for lang, lines in found.items()}


def _badwords(shared: pathlib.Path) -> Dict[str, List[str]]:
    terms = {}
    for name in ("de", "fr", "fr-CA-u-sd-caqc", "en", "ja", "zh", "ru"):
        with open(shared / "badwords" / name, encoding="utf-8") as lines:
            terms[name] = [line.strip() for line in lines if line.strip()]
    return terms


class _Mentions:
    """Whether a text holds a term (as a word where `spaced`, anywhere otherwise): what keeps
    the clean pages clean, conservatively (any listed term, allowlisted or not, of any of the
    lists used here counts)."""

    def __init__(self, terms: Sequence[str], spaced: bool):
        lowered = {term.lower() for term in terms}
        self.words = {term for term in lowered if spaced and re.fullmatch(r"\w+", term)}
        self.others = sorted(lowered - self.words)

    def __call__(self, text: str) -> bool:
        lowered = text.lower()
        return (not self.words.isdisjoint(re.findall(r"\w+", lowered))
                or any(term in lowered for term in self.others))


# ---------------------------------------------------------------------------------------------
# Pages.

def _bare(url: str) -> str:
    """The normalized form of the URLs that are searched for a hash (no www, query or slash)."""
    assert url.startswith("https://") and "?" not in url and not url.endswith("/")
    assert not url.startswith("https://www.")
    return url[len("https://"):]


def _url_hash(url: str) -> int:
    return int(hashlib.md5(_bare(url).encode("utf-8")).hexdigest(), 16)


def _searched_url(template: str, wanted) -> str:
    """The first URL template.format(n), n = 0, 1, ..., whose URL hash satisfies wanted."""
    for number in range(10**6):
        url = template.format(n=number)
        if wanted(_url_hash(url)):
            return url
    raise AssertionError(template)


def in_validation(url_hash: int) -> bool:
    return url_hash % 1000 == 0


def soft_kept(url_hash: int) -> bool:
    """Whether a bad-words page at this URL hash is in the kept 0.1%."""
    numerator, denominator = SOFT_FILTER_FRACTION.as_integer_ratio()
    return url_hash % denominator >= numerator


class _Builder:
    def __init__(self, seed: int, shared: pathlib.Path):
        self.rng = random.Random(seed)
        self.terms = _badwords(shared)
        spaced = _Mentions([term for name in ("de", "fr", "fr-CA-u-sd-caqc", "en", "ru")
                            for term in self.terms[name]], spaced=True)
        unspaced = _Mentions(self.terms["ja"] + self.terms["zh"], spaced=False)
        self.pools = {}
        sentences_of = _sentences(shared)
        self.marsch = next(s for s in sentences_of["de"] if s.startswith(_MARSCH))
        for lang, sentences in {**sentences_of, **_script_lines(shared)}.items():
            self.rng.shuffle(sentences)
            self.pools[lang] = [s for s in sentences if not spaced(s) and _MARSCH not in s
                                and not (lang in ("ja", "zh") and unspaced(s))]
        self.pages: List[SyntheticPage] = []
        self.day = 0

    def sentence(self, lang: str, max_len: int = 400, wanted=lambda sentence: True) -> str:
        pool = self.pools[lang]
        for index in range(len(pool) - 1, -1, -1):
            if len(pool[index]) <= max_len and wanted(pool[index]):
                return pool.pop(index)
        raise AssertionError(f"out of {lang} sentences")

    def cut_bytes(self, lang: str, size: int) -> str:
        """A line of exactly `size` bytes in UTF-8 (whole characters, no whitespace at the
        ends), real text topped up with full stops."""
        text = self.line(lang, size)
        while len(text.encode("utf-8")) > size:
            text = text[:-1]
        text = text.rstrip()
        text += "." * (size - len(text.encode("utf-8")))
        assert len(text.encode("utf-8")) == size and text == text.strip()
        return text

    def line(self, lang: str, min_len: int = 200, max_len: int = 600) -> str:
        """A paragraph: real sentences joined until min_len characters or more."""
        sep = "" if lang in ("ja", "zh") else " "
        longest = min_len + 20 if lang in _SCRIPT_SOURCES else min(max_len, int(min_len * 1.8))
        target = self.rng.randint(min_len, max(min_len, longest))
        parts = [self.sentence(lang)]
        while len(sep.join(parts)) < target:
            parts.append(self.sentence(lang))
        return sep.join(parts)

    def cut(self, lang: str, length: int) -> str:
        """A line of exactly `length` characters, none of them whitespace at either end."""
        text = self.line(lang, length + 1)[:length]
        if text[-1].isspace():
            text = text[:-1] + "."
        assert len(text) == length and text == text.strip()
        return text

    def short(self, lang: str, max_len: int = 90) -> str:
        return self.sentence(lang, max_len)

    def date(self) -> str:
        self.day += 1
        return (f"2019-04-{1 + self.day % 28:02d}T{self.day % 24:02d}:"
                f"{self.rng.randrange(60):02d}:{self.rng.randrange(60):02d}Z")

    def add(self, url: str, text: str, kind: str, lang: str = "", date: str = "",
            file: int = 0) -> None:
        self.pages.append(SyntheticPage(url, date or self.date(), text, kind, lang, file))

    def paragraphs(self, lang: str, count: int) -> List[str]:
        return [self.line(lang) for _ in range(count)]


def _with_term(rng: random.Random, line: str, term: str, spaced: bool = True) -> str:
    """line with term put between two of its words (or characters, unspaced)."""
    if not spaced:
        at = rng.randrange(1, len(line) - 1)
        return line[:at] + term + line[at:]
    words = line.split(" ")
    at = rng.randrange(1, len(words))
    return " ".join(words[:at] + [term] + words[at:])


def multilingual_pages(seed: int = 0, shared_data: pathlib.Path = SHARED_DATA
                       ) -> List[SyntheticPage]:
    """The synthetic pages in input order (see the module's docstring)."""
    b = _Builder(seed, pathlib.Path(shared_data))
    rng = b.rng
    boilerplate = {lang: (b.paragraphs(lang, 3), [b.short(lang, 60) for _ in range(3)])
                   for lang in LANGUAGES}

    def ordinary(lang, kind="ordinary"):
        lines = b.paragraphs(lang, rng.randint(3, 6))
        if rng.random() < 0.5:
            lines.insert(0, b.short(lang))  # A title.
        shared_long, shared_short = boilerplate[lang]
        if rng.random() < 0.35:
            lines.insert(rng.randrange(len(lines) + 1), rng.choice(shared_long))
        if rng.random() < 0.35:
            lines.append(rng.choice(shared_short))
        return "\n".join(lines)

    for lang in LANGUAGES:
        site = f"https://{lang}-site{{k}}.example"
        for number in range(40):
            b.add(f"{site.format(k=number % 9)}/artikel/{number}.html", ordinary(lang),
                  "ordinary", lang)
        for number in range(2):
            url = _searched_url(f"https://{lang}-validation{number}.example/seite/{{n}}",
                                in_validation)
            b.add(url, ordinary(lang), "validation", lang)
        shared_long, shared_short = boilerplate[lang]
        # Line dedup.
        b.add(f"https://{lang}-case.example/upper", "\n".join(
            [shared_long[0].upper()] + b.paragraphs(lang, 3)), "line-dedup-case", lang)
        twice = b.paragraphs(lang, 3)
        b.add(f"https://{lang}-twice.example/page", "\n".join(twice + [twice[0]]),
              "line-dedup-local", lang)
        mirrored = ordinary(lang)
        b.add(f"https://{lang}-mirror-a.example/page", mirrored, "line-dedup-mirror", lang)
        b.add(f"https://{lang}-mirror-b.example/page", mirrored, "line-dedup-mirror", lang)
        for number in range(2):
            b.add(f"https://{lang}-boilerplate.example/only/{number}",
                  "\n".join(shared_long + [b.short(lang, 60)]), "line-dedup-to-und", lang)
        # Paragraph filter.
        b.add(f"https://{lang}-para.example/two", "\n".join(b.paragraphs(lang, 2)),
              "paragraph-two-lines", lang)
        b.add(f"https://{lang}-para.example/third-199", "\n".join(
            b.paragraphs(lang, 2) + [b.cut(lang, 199)]), "paragraph-third-199", lang)
        b.add(f"https://{lang}-para.example/third-200", "\n".join(
            b.paragraphs(lang, 2) + [b.cut(lang, 200)]), "paragraph-third-200", lang)
        b.add(f"https://{lang}-para.example/short-lines", "\n".join(
            b.line(lang, 100, 199)[:199].strip() for _ in range(8)), "paragraph-short-lines",
            lang)
        b.add(f"https://{lang}-para.example/many-short", "\n".join(
            [b.short(lang) for _ in range(10)] + b.paragraphs(lang, 3)),
            "paragraph-many-short-lines", lang)

    # URL dedup: (kind, [(URL, date)]); the page expected is marked by `kept`.
    groups = (
        ("url-newest-last", ["https://de-dup.example/a"] * 2, ["2019-04-10T00:00:00Z",
                                                               "2019-04-20T00:00:00Z"], 1),
        ("url-newest-first", ["https://fr-dup.example/b"] * 2, ["2019-04-20T00:00:00Z",
                                                                "2019-04-10T00:00:00Z"], 0),
        ("url-same-date", ["https://en-dup.example/c"] * 2, ["2019-04-15T00:00:00Z"] * 2, 0),
        ("url-newest-middle", ["https://ro-dup.example/d"] * 3,
         ["2019-04-11T00:00:00Z", "2019-04-21T08:00:00Z", "2019-04-21T07:59:59Z"], 1),
        ("url-normalized", ["http://www.de-norm.example/e/", "https://de-norm.example/e",
                            "https://www.de-norm.example/e?utm_source=feed"],
         ["2019-04-12T00:00:00Z", "2019-04-13T00:00:00Z", "2019-04-22T00:00:00Z"], 2),
    )
    for kind, urls, dates, kept in groups:
        lang = urls[0].split("//")[1].removeprefix("www.")[:2]
        for index, (url, date) in enumerate(zip(urls, dates)):
            b.add(url, ordinary(lang), kind + ("-kept" if index == kept else "-lost"), lang, date)
    b.add("https://de-dup.example/f", ordinary("de"), "url-newest-filtered-lost", "de",
          "2019-04-10T00:00:00Z")
    b.add("https://de-dup.example/f", "\n".join(b.paragraphs("de", 2)),
          "url-newest-filtered-lost", "de", "2019-04-24T00:00:00Z")
    not_kept = lambda value: not soft_kept(value)  # noqa: E731
    url = _searched_url("https://fr-dup.example/g{n}", not_kept)
    b.add(url, ordinary("fr"), "url-newest-badword-lost", "fr", "2019-04-10T00:00:00Z")
    lines = b.paragraphs("fr", 4)
    lines[1] = _with_term(rng, lines[1], "tabarnak")
    b.add(url, "\n".join(lines), "url-newest-badword-lost", "fr", "2019-04-24T00:00:00Z")

    # Bad words.
    de_terms = [t for t in b.terms["de"] if t == t.lower()]
    fr_terms = [t for t in b.terms["fr"] if t == t.lower()]
    fr_ca_only = [t for t in b.terms["fr-CA-u-sd-caqc"] if t not in b.terms["fr"]]
    for lang, terms, count in (("de", de_terms, 20), ("fr", fr_terms, 20),
                               ("en", b.terms["en"], 6)):
        for number in range(count):
            lines = b.paragraphs(lang, rng.randint(3, 5))
            at = rng.randrange(len(lines))
            lines[at] = _with_term(rng, lines[at], terms[number * 7 % len(terms)])
            url = _searched_url(f"https://{lang}-rude{number}.example/p{{n}}", not_kept)
            b.add(url, "\n".join(lines), "badword", lang)
        lines = b.paragraphs(lang, 4)
        lines[2] = _with_term(rng, lines[2], rng.choice(terms))
        b.add(_searched_url(f"https://{lang}-soft.example/p{{n}}", soft_kept),
              "\n".join(lines), "badword-soft-kept", lang)
    for number in range(3):
        lines = b.paragraphs("fr", 4)
        lines[number] = _with_term(rng, lines[number], fr_ca_only[number])
        url = _searched_url(f"https://fr-ca{number}.example/p{{n}}", not_kept)
        b.add(url, "\n".join(lines), "badword-fr-CA", "fr")
    lines = b.paragraphs("de", 3)
    lines[1] = lines[1] + " " + b.marsch
    b.add("https://de-words.example/inside-a-word", "\n".join(lines), "badword-inside-word", "de")
    lines = b.paragraphs("de", 3)
    lines[0] = _with_term(rng, lines[0], "ARSCHLOCH")
    b.add(_searched_url("https://de-words.example/capitals{n}", not_kept), "\n".join(lines),
          "badword-capitals", "de")
    lines = b.paragraphs("de", 3)
    lines[2] = _with_term(rng, lines[2], "MILF")
    b.add("https://de-words.example/milf", "\n".join(lines), "badword-capitalized-term", "de")
    lines = b.paragraphs("de", 3)
    lines[1] = _with_term(rng, lines[1], "tabarnak")  # fr-CA's, not de's.
    b.add("https://de-words.example/other-list", "\n".join(lines), "badword-other-list", "de")
    lines = b.paragraphs("ro", 3)
    lines[1] = _with_term(rng, lines[1], "arschloch")  # Romanian has no list.
    b.add("https://ro-words.example/no-list", "\n".join(lines), "badword-no-list", "ro")

    # Other scripts.
    for lang, allowed, listed in (("ja", "女の子", "オナニー"), ("zh", "性", "乳房"),
                                  ("ru", None, "mudack")):
        spaced = lang == "ru"
        b.add(f"https://{lang}-script.example/clean", "\n".join(b.paragraphs(lang, 3)),
              "script", lang)
        if allowed:
            lines = b.paragraphs(lang, 3)
            lines[1] = _with_term(rng, lines[1], allowed, spaced)
            b.add(f"https://{lang}-script.example/allowlisted", "\n".join(lines),
                  "script-allowlisted", lang)
        lines = b.paragraphs(lang, 3)
        lines[1] = _with_term(rng, lines[1], listed, spaced)
        b.add(_searched_url(f"https://{lang}-script.example/listed{{n}}", not_kept),
              "\n".join(lines), "script-badword", lang)

    # und.
    for number in range(3):
        lines = [" ".join(f"{rng.randrange(10**4):04d}" for _ in range(rng.randint(45, 60)))
                 for _ in range(4)]
        b.add(f"https://numbers.example/table/{number}", "\n".join(lines), "und-digits")
    lines = [" ".join(rng.choice("+-*/=<>#%&()[]|~^") * rng.randint(1, 4)
                      for _ in range(rng.randint(110, 130))) for _ in range(3)]
    b.add("https://numbers.example/symbols", "\n".join(lines), "und-symbols")
    for number in range(4):
        lines = [b.line(lang) for lang in LANGUAGES]
        rng.shuffle(lines)
        b.add(f"https://mixed.example/page/{number}", "\n".join(lines), "mixed")

    # The length limit, before dedup: lines repeated up to exactly 190,000 characters.
    block = b.paragraphs("de", 8)
    for length, kind in ((190_000, "length-190000-kept"), (190_001, "length-190001-lost")):
        lines, size = [], -1
        while size + 1 + len(block[len(lines) % 8]) + 1 + 200 <= length:
            lines.append(block[len(lines) % 8])
            size += 1 + len(lines[-1])
        tail = length - size - 1
        start = " ".join(block)[:tail].rstrip()
        lines.append(start + "." * (tail - len(start)))
        text = "\n".join(lines)
        assert len(text) == length, (len(text), length)
        b.add(f"https://de-long.example/{length}", text, kind, "de")

    # Parsing.
    lines = b.paragraphs("de", 4)
    b.add("https://de-parse.example/crlf", "\r\n".join(
        ["", "  " + lines[0] + " \t", "", "\xa0" + lines[1] + "\u3000", lines[2], "   ",
         lines[3], ""]), "parse-crlf", "de")
    lines = b.paragraphs("fr", 4)
    words = lines[1].split(" ")
    lines[1] = " ".join(words[:len(words) // 2]) + "\r" + " ".join(words[len(words) // 2:])
    b.add("https://fr-parse.example/lone-cr", "\n".join(lines), "parse-lone-cr", "fr")
    lines = b.paragraphs("de", 4)
    lines.insert(1, "Content-Marketing " + b.line("de"))
    lines.insert(3, "WARC " + b.line("de"))
    b.add("https://de-parse.example/header-like", "\n".join(lines), "parse-header-like", "de")
    lines = b.paragraphs("ro", 4)
    for index, mark in enumerate(("\u2028", "\x85", "\x0c")):
        words = lines[index].split(" ")
        lines[index] = " ".join(words[:3]) + mark + " ".join(words[3:])
    b.add("https://ro-parse.example/separators", "\n".join(lines), "parse-separators", "ro")
    b.add("https://empty.example/nothing", "", "parse-empty")
    b.add("https://empty.example/blank", "\n \n\t\n", "parse-blank")
    lines = b.paragraphs("de", 4)
    lines.insert(1, "Content-Type: text/html; charset=UTF-8")
    lines.insert(3, "Content-Length: 5120")
    b.add("https://de-parse.example/header-lines", "\n".join(lines), "parse-header-lines", "de")
    lines = b.paragraphs("de", 4)
    lines.insert(2, "WARC-Date: 2031-01-01T00:00:00Z")
    b.add("https://de-parse.example/warc-date", "\n".join(lines), "parse-warc-date", "de")
    lines = b.paragraphs("fr", 5)
    b.add("https://fr-parse.example/warc-delimiter",
          "\n".join(lines[:3] + ["WARC/1.0"] + lines[3:]), "parse-warc-delimiter", "fr")

    # Line dedup: `ß` upper-cases to `SS`, which lower-cases to `ss`: another line.
    sharp = b.sentence("de", wanted=lambda sentence: "ß" in sentence)
    sharp_line = sharp + " " + b.line("de")
    b.add("https://de-sharp-s.example/lower", "\n".join([sharp_line] + b.paragraphs("de", 3)),
          "line-dedup-sharp-s", "de")
    b.add("https://de-sharp-s.example/upper", "\n".join([sharp_line.upper()]
                                                        + b.paragraphs("de", 3)),
          "line-dedup-sharp-s", "de")
    # What CLD3 gets after dedup: a line of about its 100-byte minimum (umlauts: 2 bytes each).
    for size in (99, 100, 101, 130):
        b.add(f"https://de-boilerplate.example/short/{size}",
              "\n".join(boilerplate["de"][0] + [b.cut_bytes("de", size)]),
              "line-dedup-to-short", "de")

    # Bad words next to other characters (German `arschloch`, English `2 girls 1 cup` and the
    # emoji, Russian `dolboy'eb`).
    edges = ((1, "de", "match", lambda line: line.replace(" ", " arschloch! ", 1)),
             (0, "de", "match", lambda line: "Arschloch " + line),  # At the text's start,
             (2, "de", "match", lambda line: line + " arschloch"),  # at its end.
             (1, "de", "nomatch", lambda line: line.replace(" ", " arschloch2 ", 1)),
             (1, "de", "nomatch", lambda line: line.replace(" ", " arschloch_ ", 1)),
             (1, "de", "nomatch", lambda line: line.replace(" ", " arschloché ", 1)),
             (1, "en", "match", lambda line: line.replace(" ", " 2 girls 1 cup ", 1)),
             (1, "en", "match", lambda line: line.replace(" ", " \U0001f595 ", 1)),
             (1, "en", "nomatch", lambda line: line.replace(" ", "\U0001f595", 1)),
             (1, "ru", "match", lambda line: line.replace(" ", " dolboy'eb ", 1)))
    for number, (at, lang, outcome, edit) in enumerate(edges):
        lines = b.paragraphs(lang, 3)
        lines[at] = edit(lines[at])
        b.add(_searched_url(f"https://{lang}-edge{number}.example/p{{n}}", not_kept),
              "\n".join(lines), f"badword-edge-{outcome}", lang)

    # CLD3 reads the first 10,000 bytes: German up to there, French after.
    german, french = [], []
    while len("\n".join(german).encode("utf-8")) < 10_100:
        german.append(b.line("de"))
    while len("\n".join(french).encode("utf-8")) < 40_000:
        french.append(b.line("fr"))
    b.add("https://de-fr.example/long", "\n".join(german + french), "cld3-first-10000-bytes", "de")

    # URL spellings.
    for url, date, kind in (("http://www.q.example/p?ref=abc", "2019-04-02T00:00:00Z", "lost"),
                            ("https://q.example/p?refresh=1", "2019-04-03T00:00:00Z", "lost"),
                            ("https://q.example/p//", "2019-04-05T00:00:00Z", "kept"),
                            ("https://q.example/p?x=1&utm_source=a", "2019-04-04T00:00:00Z",
                             "distinct"),
                            ("HTTPS://q.example/p", "2019-04-04T00:00:00Z", "distinct")):
        b.add(url, ordinary("en"), f"url-quirks-{kind}", "en", date)

    # The second file: the same URLs again, and lines of the first file.
    for lang, kind, first_date, second_date in (
            ("de", "cross-newer", "2019-04-10T00:00:00Z", "2019-05-10T00:00:00Z"),
            ("fr", "cross-older", "2019-04-10T00:00:00Z", "2019-03-10T00:00:00Z"),
            ("ro", "cross-same-date", "2019-04-10T00:00:00Z", "2019-04-10T00:00:00Z")):
        url = f"https://{lang}-cross.example/{kind}"
        newer_second = second_date > first_date
        b.add(url, ordinary(lang), kind + ("-lost" if newer_second else "-kept"), lang, first_date)
        b.add(url, ordinary(lang), kind + ("-kept" if newer_second else "-lost"), lang,
              second_date, file=1)
    for lang in ("de", "en"):
        for number in range(2):
            lines = b.paragraphs(lang, 3) + [boilerplate[lang][0][number]]
            b.add(f"https://{lang}-cross.example/boilerplate/{number}", "\n".join(lines),
                  "cross-boilerplate", lang, file=1)
    return b.pages
