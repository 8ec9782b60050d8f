"""Where the studies of a C4 run lie in its output folder: OUT/report/, the datasheet
(pipelines/report.py) and the studies it shows, which other tools write there (the blocklist
study, pipelines/blocklist.py; the contamination study, model/tasks/contamination.py).

Here, below both sides, because a pipeline tool and a model tool write them and model/ never
imports pipelines/ (../shared/DESIGN.md); no Beam, no file system: names and paths only.
"""
REPORT_DIR = "report"
DATASHEET_FILE = "index.html"
CONTAMINATION_FILE = "contamination.json"
BLOCKLIST_FILE = "blocklist.json"


def report_file(output_dir: str, name: str) -> str:
    """OUT/report/NAME of the output folder `output_dir`, a local path or a URL (gs://...):
    joined with "/", as both name their folders."""
    return f"{str(output_dir).rstrip('/')}/{REPORT_DIR}/{name}"
