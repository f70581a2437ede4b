"""infer_language and the extension table."""

from __future__ import annotations

import pytest

from orkestrel.core import EXTENSION_TO_LANGUAGE, infer_language


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("src/main.ts", "typescript"),
        ("App.tsx", "tsx"),
        ("index.js", "javascript"),
        ("tool.py", "python"),
        ("README.md", "markdown"),
        ("package.json", "json"),
        ("ci.yaml", "yaml"),
        ("ci.yml", "yaml"),
        ("pyproject.toml", "toml"),
        ("index.html", "html"),
        ("site.css", "css"),
        ("run.sh", "bash"),
        ("run.bash", "bash"),
        ("main.go", "go"),
        ("lib.rs", "rust"),
        ("Main.java", "java"),
        ("x.c", "c"),
        ("x.h", "c"),
        ("x.cpp", "cpp"),
        ("app.rb", "ruby"),
        ("index.php", "php"),
        ("schema.sql", "sql"),
        ("feed.xml", "xml"),
        ("notes.txt", "text"),
    ],
)
def test_known_extension_maps_to_its_language(path: str, language: str) -> None:
    assert infer_language(path) == language


def test_unknown_extension_is_text() -> None:
    assert infer_language("archive.zzz") == "text"


@pytest.mark.parametrize("path", ["Makefile", "bin/tool", "", "dir.d/LICENSE", "trailing."])
def test_extension_less_path_is_text(path: str) -> None:
    assert infer_language(path) == "text"


def test_extension_match_is_case_insensitive() -> None:
    assert infer_language("SRC/MAIN.TS") == "typescript"
    assert infer_language("Script.Py") == "python"


def test_the_last_dot_of_the_file_name_decides() -> None:
    assert infer_language("types.d.ts") == "typescript"
    assert infer_language("data.json.md") == "markdown"
    assert infer_language("C:\\code\\app.min.js") == "javascript"


def test_extension_table_is_read_only() -> None:
    assert EXTENSION_TO_LANGUAGE["py"] == "python"
    with pytest.raises(TypeError):
        EXTENSION_TO_LANGUAGE["py"] = "snake"  # type: ignore[index]
