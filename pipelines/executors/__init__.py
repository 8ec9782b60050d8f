"""How a checked and loaded C4 job runs: in one Beam job (one_job.py), or in stages of tasks
(pipelines/executors/staged.py) that a rerun resumes, driven by in_stages.py and run by an executor
chosen
by name from base.EXECUTORS: local worker processes (local.py) or a Beam job per stage
(beam_stages.py). What every run shares, the lock of its output folder and the check of the
configuration found there, is base.py's.

A new executor is one module with a class taking (run, workers) and running a stage's tasks
(`run(run, stage, tasks, progress)` -> their markers), and one line in base.EXECUTORS.
"""
