"""Launchers: C4 on Dataflow (dataflow), its local rehearsal (rehearse), pre-training on Cloud
TPU (tpu)."""
import pathlib

# The checkout the launchers ship and run in.
REPO_ROOT = pathlib.Path(__file__).resolve().parents[1]
