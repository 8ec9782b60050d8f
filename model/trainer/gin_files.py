"""Gin files and bindings as a person gives them: where a named file is, what a syntax error
in a file or a `--gin_param` means (`file_syntax_error`, `binding_syntax_error`), and the
literal bindings of a file read without the configurables it names.

Launchers (deploy/) and tests need values that model/gin/ owns, such as a size's number of heads,
without importing TensorFlow or registering the trainer's classes. gin's own parser reads the
file, so the syntax is gin's; references (`@name`) and macros (`%name`) are returned as
`Unresolved` markers, as only gin's registry could resolve them.
"""
from __future__ import annotations

import dataclasses
import pathlib
import shlex
import tokenize
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


def _parses(text: str) -> bool:
    """Whether `text` is gin syntax (whatever the names it binds)."""
    try:
        list(config_parser.ConfigParser(text, _LiteralsOnly()))
    except (SyntaxError, ValueError, tokenize.TokenError):
        return False
    return True


def _reason(error: Exception) -> str:
    """gin's complaint without its parser's internals (an ast node's repr, the line number)."""
    if isinstance(error, tokenize.TokenError):
        return f"{error.args[0]} (an unclosed bracket or quote?)"
    return str(error.msg).splitlines()[-1].strip().rstrip(".")


def _quoted(statement: str) -> str:
    """`NAME = "VALUE"` for a binding whose value is text without quotes or brackets (which gin
    reads as a name or an expression, not a string) and parses so; "" otherwise."""
    name, equals, value = statement.partition("=")
    value = value.strip()
    if not equals or not value or set("'\"()[]{}") & set(value):
        return ""
    quoted = f'{name.strip()} = "{value}"'
    return quoted if _parses(quoted) else ""


def _shell_word(text: str) -> str:
    """`text` quoted for a shell command line, in double quotes where it holds single ones."""
    return f'"{text}"' if "'" in text and not set('"$`\\') & set(text) else shlex.quote(text)


def binding_syntax_error(binding: str, error: Exception) -> ValueError:
    """The error for a `--gin_param` that is not gin syntax: the binding, gin's reason and,
    for a value that is text without quotes (`DataConfig.source = ../shared/x`), the binding
    with the quotes a gin string needs."""
    message = f"--gin_param {_shell_word(binding)} does not parse: {_reason(error)}"
    quoted = _quoted(binding)
    if quoted:
        message += (f"; a string value needs quotes inside the binding: --gin_param "
                    f"{_shell_word(quoted)}")
    return ValueError(message)


def file_syntax_error(path: str | pathlib.Path, error: Exception) -> ValueError:
    """The error for a gin file that is not gin syntax: the file (an included one where the
    error is there), the line, gin's reason and, for text without quotes, the quoted binding."""
    if isinstance(error, tokenize.TokenError):
        return ValueError(f"gin file {path}, line {error.args[1][0]}: {_reason(error)}")
    location = error.args[1] if len(error.args) > 1 else None
    if not isinstance(location, config_parser.Location):
        return ValueError(f"gin file {path}: {error}")
    statement = location.line_content.strip()
    quoted = _quoted(statement)
    return ValueError(f"gin file {location.filename or path}, line {location.line_num}: "
                      f"{_reason(error)}: {statement}"
                      + (f" (a string value needs quotes: {quoted})" if quoted else ""))
