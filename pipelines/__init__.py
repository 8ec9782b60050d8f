"""The C4 pipeline: one module per rule, thin Beam stages, the job's graph and command line."""
import logging

# Logged by Apache Beam on the root logger each time it is imported without BigQuery's client
# libraries: nothing about the user's data or code.
BEAM_APITOOLS_NOTE = "apitools not found"


def _not_beam_apitools_note(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith(BEAM_APITOOLS_NOTE)


def drop_beam_import_notes() -> None:
    """Keeps Beam's import note off stderr; every other record of the root logger still shows.
    Runs when this package is imported, before any of its modules imports apache_beam."""
    logging.getLogger().addFilter(_not_beam_apitools_note)


drop_beam_import_notes()
