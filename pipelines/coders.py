"""The page's bytes between two steps that cross a shuffle or a file: the tuple of its fields,
which Beam's own coder writes natively (registered as Page's coder for the graph); without it, a
page through a shuffle is pickled, several times slower. Here, beside page.py, so the steps that
encode pages (the span dedup, the OpenWebText join) and the staged tasks reach no more of Beam.
"""
import dataclasses
import operator

import apache_beam as beam

from pipelines.page import Page


class PageCoder(beam.coders.Coder):
    """A page as the tuple of its fields, which Beam's own coder writes natively; without it, a
    page through a shuffle is pickled, several times slower."""
    _FIELDS = operator.attrgetter(*(field.name for field in dataclasses.fields(Page)))
    _TUPLE = beam.coders.FastPrimitivesCoder().get_impl()

    def encode(self, page: Page) -> bytes:
        return self._TUPLE.encode(self._FIELDS(page))

    def decode(self, encoded: bytes) -> Page:
        return Page(*self._TUPLE.decode(encoded))

    def is_deterministic(self) -> bool:
        return True

    def to_type_hint(self):
        return Page


beam.coders.registry.register_coder(Page, PageCoder)
PAGE_CODER = PageCoder()
