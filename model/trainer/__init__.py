"""The trainer library: run configuration, estimator and model function, mesh, schedules, losses,
hooks, decoding, warm start, input positions and checkpoint state. It knows no model family by name:
a run carries its family class, which implements the trainer's own contract (family.py: what
the model function and a run call), and the trainer calls it."""
