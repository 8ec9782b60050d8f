"""`python -m model.convert import|export ...`: the former name of `python -m model import` and
`python -m model export --format ...` (model/convert_command.py), until the next release. It runs
`python -m model.renamed model.convert ...` (model/renamed.py: the notice, then the new name) in
a new process, and imports nothing: a package below never imports the command line above it."""
import subprocess
import sys

if __name__ == "__main__":
    sys.exit(subprocess.call([sys.executable, "-m", "model.renamed", "model.convert",
                              *sys.argv[1:]]))
