"""Infer a fenced-code language tag from a file path."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

__all__ = ["EXTENSION_TO_LANGUAGE", "infer_language"]

EXTENSION_TO_LANGUAGE: Final[Mapping[str, str]] = MappingProxyType(
    {
        # Web
        "ts": "typescript",
        "mts": "typescript",
        "cts": "typescript",
        "tsx": "tsx",
        "js": "javascript",
        "mjs": "javascript",
        "cjs": "javascript",
        "jsx": "jsx",
        "html": "html",
        "htm": "html",
        "css": "css",
        "scss": "scss",
        "sass": "sass",
        "less": "less",
        "vue": "vue",
        "svelte": "svelte",
        # Data and config
        "json": "json",
        "jsonc": "jsonc",
        "json5": "json5",
        "yaml": "yaml",
        "yml": "yaml",
        "toml": "toml",
        "ini": "ini",
        "cfg": "ini",
        "conf": "ini",
        "env": "dotenv",
        "xml": "xml",
        "svg": "xml",
        "csv": "csv",
        "tsv": "tsv",
        "sql": "sql",
        "graphql": "graphql",
        "gql": "graphql",
        "proto": "protobuf",
        # Prose
        "md": "markdown",
        "markdown": "markdown",
        "mdx": "mdx",
        "rst": "rst",
        "tex": "latex",
        "txt": "text",
        "text": "text",
        "log": "text",
        # Shells and build
        "sh": "bash",
        "bash": "bash",
        "zsh": "zsh",
        "fish": "fish",
        "ps1": "powershell",
        "bat": "batch",
        "cmd": "batch",
        "mk": "makefile",
        "cmake": "cmake",
        "gradle": "groovy",
        "dockerfile": "dockerfile",
        "tf": "hcl",
        "hcl": "hcl",
        "nix": "nix",
        # Languages
        "py": "python",
        "pyi": "python",
        "pyw": "python",
        "ipynb": "json",
        "go": "go",
        "rs": "rust",
        "java": "java",
        "kt": "kotlin",
        "kts": "kotlin",
        "scala": "scala",
        "groovy": "groovy",
        "c": "c",
        "h": "c",
        "cpp": "cpp",
        "cc": "cpp",
        "cxx": "cpp",
        "hpp": "cpp",
        "hh": "cpp",
        "hxx": "cpp",
        "cs": "csharp",
        "fs": "fsharp",
        "m": "objectivec",
        "mm": "objectivec",
        "swift": "swift",
        "dart": "dart",
        "rb": "ruby",
        "php": "php",
        "pl": "perl",
        "pm": "perl",
        "lua": "lua",
        "r": "r",
        "jl": "julia",
        "ex": "elixir",
        "exs": "elixir",
        "erl": "erlang",
        "hs": "haskell",
        "ml": "ocaml",
        "clj": "clojure",
        "zig": "zig",
        "sol": "solidity",
        "asm": "asm",
        "s": "asm",
        "vim": "vim",
        "diff": "diff",
        "patch": "diff",
    }
)


def infer_language(path: str) -> str:
    """The language tag for ``path``'s extension (last dot of the file name, any case).

    Unknown or extension-less paths give ``"text"``.
    """
    name = path.replace("\\", "/").rsplit("/", 1)[-1]
    dot = name.rfind(".")
    if dot < 0:
        return "text"
    return EXTENSION_TO_LANGUAGE.get(name[dot + 1 :].lower(), "text")
