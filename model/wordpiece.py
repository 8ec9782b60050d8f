"""`python -m model.wordpiece`, the former name of `python -m model wordpiece`: trains BERT's
WordPiece vocabulary (model/families/bert/wordpiece.py)."""
import sys

from model.trainer.verbosity import quiet_libraries, verbosity_in

if __name__ == "__main__":
    # TensorFlow (imported by the module below) reads its C++ log level when it is imported, as
    # model/train.py's command line says.
    quiet_libraries(verbosity_in(sys.argv[1:]))

from model.families.bert.wordpiece import main  # noqa: E402  (after the log levels above)

if __name__ == "__main__":
    from model.renamed import renamed
    renamed("model.wordpiece", "wordpiece")
    sys.exit(main())
