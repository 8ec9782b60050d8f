"""The rules as pure functions over one page or line, without Beam, an executor or a writer:
the two rule sets (rules.py), cleaning, the released C4's rules, bad words, domains, URLs, dedup,
mC4's rules and language identification (language/)."""
