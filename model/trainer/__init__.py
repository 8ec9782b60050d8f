"""The trainer library: run configuration, estimator and model function, mesh, schedules, losses,
hooks, decoding, warm start, input positions and checkpoints. It knows no model family by name:
a run carries its family class (model/families/base.py's interface) and the trainer calls it."""
