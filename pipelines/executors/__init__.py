"""How a checked and loaded C4 job runs: in one Beam job (one_job.py), or in stages of tasks
that a rerun resumes (staged.py: the task and marker types; task_files.py, tasks.py,
planning.py, progress.py), driven by in_stages.py and run by an executor chosen by name from
base.EXECUTORS: local worker processes (local.py) or a Beam job per stage (beam_stages.py).
What every run shares, the lock of its output folder and the check of the configuration found
there, is base.py's.

A new executor is one module with a class taking (run, workers) and running a stage's tasks
(`run(run, stage, tasks, progress)` -> their markers, each task run by tasks.run_task), and one
line in base.EXECUTORS.
"""
