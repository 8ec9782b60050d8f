"""Checkpoint conversion: the machinery every family's formats build on (checkpoints.py: a
transformers link, reading and writing our checkpoints, the checks of an import), what an
export says of itself (card.py: a classifier's label names, the model card); __main__.py keeps
the former `python -m model.convert` for a release (the command line is `python -m model
import|export`, model/convert_command.py). The formats
themselves are the families' (a module of each family's package, `ModelFamily.checkpoint_formats`).
This package imports nothing itself, so a family's format imports checkpoints.py alone.
"""
