"""DoFns of the toy jobs that the workers have too (tests/deploy/test_rehearsal.py puts this folder
on
the worker pool's path, as if installed): one well behaved, two that break on remote workers."""
import apache_beam as beam

# Filled by the launcher before it builds the job (tests/rehearsal_toys/__init__.py): a worker
# imports this module afresh and sees it empty.
TABLE: dict[str, int] = {}


class Upper(beam.DoFn):
    def process(self, word: str):
        yield word.upper()


class NeedsGin(beam.DoFn):
    def process(self, word: str):
        import gin  # in the launcher's environment, not in the pipeline extra
        yield f"{word} {gin.__name__}"


class Lookup(beam.DoFn):
    def process(self, word: str):
        yield f"{word}={TABLE.get(word, 'missing')}"
