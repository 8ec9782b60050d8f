"""`python -m model.convert import|export ...`: the conversion command line (command.py)."""
import sys

from model.trainer.verbosity import quiet_libraries, verbosity_in

if __name__ == "__main__":
    # TensorFlow reads its C++ log level when it is imported: set before the imports below, as
    # model/train.py's command line does.
    quiet_libraries(verbosity_in(sys.argv[1:]))

from model.convert.command import main  # noqa: E402  (after the log level above)

if __name__ == "__main__":
    sys.exit(main())
