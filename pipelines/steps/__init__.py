"""The steps a run chains, without Beam: the Step base that declares its stage and reasons and
counts through Counts (base.py), the one plan of phases (plan.py), the filters as steps
(filter_steps.py), URL dedup, the OpenWebText join and the span dedup as steps, and what they
load (resources.py)."""
