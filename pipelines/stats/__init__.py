"""What a run counts and records: stats.json and its table (stats.py), run_config.json
(provenance.py), funnel.svg (funnel.py)."""
