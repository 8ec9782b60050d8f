"""Reading the input: WET files record by record (wet.py), opened on local paths, any Beam
filesystem or https:// (files.py); the input list planned at launch (inputs.py); where Common
Crawl is read from (common_crawl.py); the external lists, pinned by URL and checksum (lists.py)."""
