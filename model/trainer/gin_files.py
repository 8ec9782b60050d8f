"""Reading the literal bindings of a gin file without the configurables it names.

Launchers (deploy/) and tests need values that model/gin/ owns, such as a size's number of heads,
without importing TensorFlow or registering the trainer's classes. gin's own parser reads the
file, so the syntax is gin's; references (`@name`) and macros (`%name`) are returned as
`Unresolved` markers, as only gin's registry could resolve them.
"""
from __future__ import annotations

import dataclasses
import pathlib
from typing import Any

from gin import config_parser

GIN_DIR = pathlib.Path(__file__).resolve().parent.parent / "gin"


@dataclasses.dataclass(frozen=True)
class Unresolved:
    """A `@configurable` reference or `%macro` as written in the file."""

    text: str


class _LiteralsOnly(config_parser.ParserDelegate):
    def configurable_reference(self, scoped_name, evaluate):
        return Unresolved(f"@{scoped_name}{'()' if evaluate else ''}")

    def macro(self, name):
        return Unresolved(f"%{name}")


def gin_path(name: str | pathlib.Path) -> pathlib.Path:
    """A gin file given as a path, or as a name relative to model/gin/ (`bert/base.gin`)."""
    path = pathlib.Path(name)
    if path.is_file():
        return path
    path = GIN_DIR / name
    if not path.is_file():
        raise FileNotFoundError(f"gin file {name} not found (nor under {GIN_DIR})")
    return path


def literal_bindings(path: str | pathlib.Path) -> dict[str, Any]:
    """{"Selector.parameter": value} of a gin file (a path, or a name relative to model/gin/)."""
    text = gin_path(path).read_text()
    bindings = {}
    try:
        for statement in config_parser.ConfigParser(text, _LiteralsOnly()):
            if not isinstance(statement, config_parser.BindingStatement) or statement.scope:
                raise ValueError(f"{type(statement).__name__} is not a plain binding (includes, "
                                 f"imports and scopes need gin itself)")
            bindings[f"{statement.selector}.{statement.arg_name}"] = statement.value
    except (ValueError, SyntaxError) as error:
        raise ValueError(f"{path}: {error}") from None
    return bindings
