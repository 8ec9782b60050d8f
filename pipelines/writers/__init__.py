"""What a run writes: the sharded output, JSON lines or Parquet (output.py, parquet_shards.py),
the exclusion files (exclusions.py) and the Hugging Face dataset card (dataset_card.py)."""
