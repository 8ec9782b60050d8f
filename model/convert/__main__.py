"""`python -m model.convert import|export ...`: the former name of `python -m model import`
and `python -m model export --format ...` (model/convert_command.py), with a notice."""
import sys

from model.trainer.verbosity import quiet_libraries, verbosity_in

if __name__ == "__main__":
    # TensorFlow reads its C++ log level when it is imported: set before the imports below, as
    # model/train.py's command line does.
    quiet_libraries(verbosity_in(sys.argv[1:]))

from model.convert_command import main  # noqa: E402  (after the log level above)

if __name__ == "__main__":
    from model.renamed import renamed
    direction = sys.argv[1] if len(sys.argv) > 1 else "import|export"
    renamed(f"model.convert {direction}", f"{direction}{' --format ...' if direction == 'export' else ''}")
    sys.exit(main())
