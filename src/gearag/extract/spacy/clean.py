"""Text repairs before parsing, title splitting, and cutting huge texts into parseable pieces."""

from __future__ import annotations

import re

#: Longer texts are parsed in pieces (spaCy's parser is memory-hungry on huge docs).
MAX_PIECE_CHARS = 20_000

_GLUED_PAREN = re.compile(r"(?<=[\w,.;])\((?=\s*\w)")
_PAREN_INNER_SPACE = re.compile(r"\(\s+")
_ABBREV_LIFE = re.compile(r"\((b|d)\.\s*(?=[\w(])")
_BROKEN_HYPHEN = re.compile(r"(?<=[a-z])- (?=[a-z])")
_SPACED_POSSESSIVE = re.compile(r"(?<=\w) ([’']s)\b")
_SPACE_BEFORE_PUNCT = re.compile(r" +(?=[,.;:?!)])")
_SPACES = re.compile(r"\s+")
_TRAILING_PAREN = re.compile(r"^(.*?\S)\s*\(([^()]*)\)\s*$")


def _fix_quotes(text: str) -> str:
    """``book" What is God?" first`` → ``book "What is God?" first`` (balanced quotes only)."""
    parts = text.split('"')
    if len(parts) < 3 or len(parts) % 2 == 0:
        return text
    out = [parts[0].rstrip()]
    for i in range(1, len(parts)):
        if i % 2:  # inside quotes
            out.append(' "' + parts[i].strip() + '"')
        else:
            rest = parts[i]
            out.append(rest if rest[:1] in (",", ".", ";", ":", "?", "!", ")") else " " + rest.lstrip())
    return "".join(out)


def clean_text(text: str) -> str:
    """Undo scraping artefacts that derail the tokenizer (``"Name( born 1950)"``, ``"half- brother"``)."""
    text = _GLUED_PAREN.sub(" (", text)
    text = _PAREN_INNER_SPACE.sub("(", text)
    text = _ABBREV_LIFE.sub(lambda m: "(born " if m.group(1) == "b" else "(died ", text)
    text = _BROKEN_HYPHEN.sub("-", text)
    text = _SPACED_POSSESSIVE.sub(r"\1", text)
    if '"' in text:
        text = _fix_quotes(text)
    text = _SPACES.sub(" ", text)
    text = _SPACE_BEFORE_PUNCT.sub("", text)
    return text.strip()


def split_title(title: str) -> tuple[str, str]:
    """``"Rosemary (1958 film)"`` → ``("Rosemary", "1958 film")``; no disambiguator → ``(title, "")``."""
    title = " ".join(title.split())
    m = _TRAILING_PAREN.match(title)
    if m and m.group(2).strip():
        return m.group(1).strip(), m.group(2).strip()
    return title, ""


def split_pieces(text: str) -> list[str]:
    """Split a very long text at sentence-ish boundaries into parseable pieces."""
    if len(text) <= MAX_PIECE_CHARS:
        return [text] if text else []
    out: list[str] = []
    start = 0
    while start < len(text):
        end = min(start + MAX_PIECE_CHARS, len(text))
        if end < len(text):
            cut = max(text.rfind(". ", start, end), text.rfind("\n", start, end))
            if cut <= start + MAX_PIECE_CHARS // 2:
                cut = text.rfind(" ", start, end)
            if cut > start:
                end = cut + 1
        out.append(text[start:end])
        start = end
    return out

