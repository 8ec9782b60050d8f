"""The steps on Beam: the one-job graph (graph.py), a phase of steps as a DoFn and the page
coder (phases.py), the WET read, URL dedup, the OpenWebText join and the span dedup as
transforms, and the local runner (embedded.py)."""
