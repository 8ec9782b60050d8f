"""Durations for a person: what the progress lines of long jobs (a C4 run in parts, a training
run) print as the time left."""


def duration(seconds: float) -> str:
    """`seconds` rounded to the two units that matter: "42 s", "3 min 07 s", "5 h 02 min"."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds // 60 % 60:02d} min"
