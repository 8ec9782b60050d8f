"""Auditing a finished run: the datasheet (datasheet.py, `python -m pipelines.report`) and the
blocklist study (blocklist.py, `python -m pipelines.blocklist`)."""
