# `make run` builds C4 `en` from the first WET file of CC-MAIN-2019-18 (needs the internet);
# offline, pass local files: make run INPUT="path/to/*.warc.wet.gz" BADWORDS=path/to/en, and
# for VARIANT=realnewslike REALNEWS_DOMAINS=path/to/domain_to_allowed_subdomains.json, for
# VARIANT=webtextlike WEBTEXT_URLS="path/to/*.gz" (the OpenWebText URL lists).
# `make test` runs the test suite but the tests marked slow; `make test-all` runs every test.
# Both create .venv from requirements.txt first.
# `make rehearse` runs the C4 job and the TFDS build with Beam's portable runner, their workers in
# lean environments (.venv-worker/) holding only a worker's install, against the DirectRunner.
# `make bench-extras` measures each setup.py extra's installed size and install time.
# `make mutation MODULE=pipelines/writers/exclusions.py [TESTS="tests/pipelines/test_x.py -k y"]`
# measures how many of a module's mutants its tests kill (mutmut, requirements-mutation.txt;
# bench/MUTATION.md).
PYTHON ?= python3.11
VENV := .venv
VARIANT ?= en
# Unset INPUT, BADWORDS, BADWORDS_DIR and REALNEWS_DOMAINS: the pipeline's defaults (the variant's Common Crawl
# dumps, the pinned lists; pipelines/readers/common_crawl.py and pipelines/readers/lists.py own them). A list is
# passed only when set; a variant that does not read it says so and ignores it (en.noclean and
# de-fr-ro read no bad-words list; multilingual reads BADWORDS_DIR, the folder of its lists per
# language). WEBTEXT_URLS has no default: webtextlike needs it.
INPUT ?=
# The default manifests list 56,000 files per dump: take the first. Inputs you name are read whole.
MAX_FILES ?= $(if $(INPUT),,1)
BADWORDS ?=
BADWORDS_DIR ?=
REALNEWS_DOMAINS ?=
WEBTEXT_URLS ?=
OUTPUT ?= out/$(VARIANT)

# The project itself is installed in editable mode (its dependencies are the pinned ones above),
# so `tfds build --imports tfds_c4` and `import pipelines` work from any folder, no PYTHONPATH.
$(VENV)/.installed: requirements.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r requirements.txt
	$(VENV)/bin/pip install -q --no-deps --no-build-isolation -e .
	touch $@

.PHONY: install browser run test test-all bench bench-extras rehearse mutation
install: $(VENV)/.installed

# The datasheet's test renders it in a real browser: Chromium from Debian's packages, installed
# where it is missing and apt-get may (as root); without it that test is skipped, saying why.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
	  && apt-get update -qq && apt-get install -y -qq chromium >/dev/null; } \
	  || echo "note: no Chromium (apt-get install chromium): the datasheet's browser test is skipped"

run: install
	$(VENV)/bin/python -m pipelines.c4 --variant $(VARIANT) $(if $(INPUT),--input $(INPUT)) $(if $(MAX_FILES),--max_files $(MAX_FILES)) $(if $(BADWORDS),--badwords $(BADWORDS)) $(if $(BADWORDS_DIR),--badwords_dir $(BADWORDS_DIR)) $(if $(REALNEWS_DOMAINS),--realnews_domains $(REALNEWS_DOMAINS)) $(if $(WEBTEXT_URLS),--webtext_urls $(WEBTEXT_URLS)) --output $(OUTPUT)

test: install browser
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile -m "not slow" tests

test-all: install browser
	$(VENV)/bin/python -m pytest -q -n 2 --dist loadfile tests

bench: install
	for script in $(filter-out bench/mutation.py,$(wildcard bench/*.py)); do $(VENV)/bin/python $$script || exit 1; done

rehearse: install
	$(VENV)/bin/python -m deploy.rehearse

bench-extras: install
	$(VENV)/bin/python bench/bench_extras.py

mutation: install
	$(VENV)/bin/pip install -q -r requirements-mutation.txt
	$(VENV)/bin/python bench/mutation.py --module $(MODULE) $(if $(TESTS),--tests "$(TESTS)")
