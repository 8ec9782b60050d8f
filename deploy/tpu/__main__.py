"""`python -m deploy.tpu`: see the package's docstring."""
from deploy.tpu.command import main

main()
