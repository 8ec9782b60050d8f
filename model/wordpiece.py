"""`python -m model.wordpiece`: trains BERT's WordPiece vocabulary (model/families/bert/wordpiece.py)."""
import sys

from model.families.bert.wordpiece import main

if __name__ == "__main__":
    sys.exit(main())
