"""What the tests share: fixtures' builders, reference models, tiny configs and the documents'
runner. Test modules import these; no test module imports another (tests/project/test_layout.py
keeps the
project's own import rules, these keep the tests')."""
