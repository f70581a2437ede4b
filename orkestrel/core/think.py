"""The ``<think>…</think>`` separator a provider routes its streamed content through.

Thinking models write their reasoning inline, between ``THINK_OPEN`` and ``THINK_CLOSE``. A
``ThinkSplitter`` takes the raw wire deltas one by one and hands back only the clean answer,
accumulating the reasoning on ``thinking``. One splitter serves one stream.

Decisions worth knowing:

- A tag cut across deltas (``"<thi"`` + ``"nk>"``) is held back until the next delta decides
  it; ``flush()`` returns a hold that never completed as content (it was real text).
- Some chat templates (qwen3) pre-seed ``<think>`` into the prompt, so only a bare
  ``</think>`` reaches the wire. When that bare close is the stream's first tag event,
  everything surfaced so far is reclassified as thinking (once; later bare closes are plain
  text). Deltas already returned cannot be recalled, so the joined return values can then
  over-report by that prefix; ``content`` is the authoritative accumulation.
- After any close, the answer's leading whitespace is dropped once (models emit ``"\\n\\n"``
  after ``</think>``). It is applied to the character stream, so it does not depend on where
  the deltas were cut. Reasoning text is kept verbatim.
"""

from __future__ import annotations

from .constants import THINK_CLOSE, THINK_OPEN

__all__ = ["ThinkSplitter", "create_think_splitter"]

_OPEN_LEN = len(THINK_OPEN)
_CLOSE_LEN = len(THINK_CLOSE)
# A hold can only start at a '<' this close to the end (a full tag would have been found).
_HOLD_WINDOW = max(_OPEN_LEN, _CLOSE_LEN) - 1


def _hold_length(text: str, start: int, tags: tuple[str, ...]) -> int:
    """Length of the suffix of ``text[start:]`` that could still become one of ``tags``.

    A tag has a single ``'<'``, at its front, so only the last ``'<'`` can begin a hold.
    """
    end = len(text)
    at = text.rfind("<", max(start, end - _HOLD_WINDOW))
    if at < 0:
        return 0
    tail = text[at:]
    for tag in tags:
        if tag.startswith(tail):
            return end - at
    return 0


def _collapse(parts: list[str]) -> str:
    # Keep the accumulation as one string after a read, so repeated reads stay cheap.
    if len(parts) > 1:
        parts[:] = ["".join(parts)]
    return parts[0] if parts else ""


_INSIDE_TAGS = (THINK_CLOSE,)
_OUTSIDE_TAGS = (THINK_OPEN,)
_LEADING_TAGS = (THINK_OPEN, THINK_CLOSE)


class ThinkSplitter:
    """Separates inline ``<think>`` reasoning from the answer, one raw delta at a time.

    ``split(delta)`` returns the clean content to surface for that delta (possibly ``''``)
    and sets ``last_thinking`` to the reasoning that delta produced, so a provider can yield
    both channels live::

        clean = splitter.split(raw)
        if splitter.last_thinking:
            yield ThinkingDelta(splitter.last_thinking)
        if clean:
            yield ContentDelta(clean)

    The joined ``last_thinking`` values (after each ``split`` and ``flush``) always equal
    ``thinking``. ``content`` and ``thinking`` are the authoritative accumulations.
    """

    __slots__ = ("_content", "_held", "_inside", "_seen", "_strip", "_thinking", "last_thinking")

    def __init__(self) -> None:
        self._content: list[str] = []
        self._thinking: list[str] = []
        # A trailing fragment that may still turn into a tag.
        self._held = ""
        self._inside = False
        # Any tag event so far: from then on a bare close is plain text.
        self._seen = False
        # A span just closed: drop the answer's leading whitespace.
        self._strip = False
        self.last_thinking = ""

    @property
    def content(self) -> str:
        """The clean answer so far (corrected when an implicit open is discovered)."""
        return _collapse(self._content)

    @property
    def thinking(self) -> str:
        """The reasoning so far."""
        return _collapse(self._thinking)

    def split(self, delta: str) -> str:
        """Feed one raw delta; return the clean content to surface for it (maybe ``''``).

        Raises:
            TypeError: ``delta`` is not a string.
        """
        if not isinstance(delta, str):
            raise TypeError(f"delta must be a string, not {type(delta).__name__}")
        if self._held or "<" in delta:
            return self._scan(self._held + delta)
        # The hot path: no tag can start or end in this delta.
        if self._inside:
            if delta:
                self._thinking.append(delta)
            self.last_thinking = delta
            return ""
        self.last_thinking = ""
        if self._strip:
            delta = delta.lstrip()
            if not delta:
                return ""
            self._strip = False
        if delta:
            self._content.append(delta)
        return delta

    def flush(self) -> str:
        """Settle the stream end; return the last content to surface (maybe ``''``).

        A held fragment that never became a tag is returned as content, or lands on
        ``thinking`` inside an unclosed span (the model was cut off mid-thought).
        """
        held, self._held = self._held, ""
        self.last_thinking = ""
        if not held:
            return ""
        if self._inside:
            self._thinking.append(held)
            self.last_thinking = held
            return ""
        out: list[str] = []
        self._emit(held, out)
        return "".join(out)

    def _emit(self, text: str, out: list[str]) -> None:
        if self._strip:
            text = text.lstrip()
            if not text:
                return
            self._strip = False
        if text:
            self._content.append(text)
            out.append(text)

    def _scan(self, text: str) -> str:
        self._held = ""
        out: list[str] = []
        thought: list[str] = []
        pos, end = 0, len(text)
        while pos < end:
            if self._inside:
                close_at = text.find(THINK_CLOSE, pos)
                if close_at < 0:
                    keep = end - _hold_length(text, pos, _INSIDE_TAGS)
                    if keep > pos:
                        thought.append(text[pos:keep])
                    self._held = text[keep:]
                    break
                if close_at > pos:
                    thought.append(text[pos:close_at])
                pos = close_at + _CLOSE_LEN
                self._inside = False
                self._seen = True
                self._strip = True
                continue
            open_at = text.find(THINK_OPEN, pos)
            close_at = -1 if self._seen else text.find(THINK_CLOSE, pos)
            if close_at >= 0 and (open_at < 0 or close_at < open_at):
                # The implicit open: all content so far was reasoning. Nothing is on
                # ``thinking`` yet, since no span has been entered before a first tag event.
                self._emit(text[pos:close_at], out)
                moved = "".join(self._content)
                self._content.clear()
                out.clear()
                if moved:
                    thought.append(moved)
                pos = close_at + _CLOSE_LEN
                self._seen = True
                self._strip = True
                continue
            if open_at >= 0:
                self._emit(text[pos:open_at], out)
                pos = open_at + _OPEN_LEN
                self._inside = True
                self._seen = True
                continue
            tags = _OUTSIDE_TAGS if self._seen else _LEADING_TAGS
            keep = end - _hold_length(text, pos, tags)
            self._emit(text[pos:keep], out)
            self._held = text[keep:]
            break
        if thought:
            produced = "".join(thought)
            self._thinking.append(produced)
            self.last_thinking = produced
        else:
            self.last_thinking = ""
        return "".join(out)

    def __repr__(self) -> str:
        state = "inside" if self._inside else "outside"
        return f"<ThinkSplitter {state} held={self._held!r}>"


def create_think_splitter() -> ThinkSplitter:
    """Create a fresh ``ThinkSplitter`` (one per stream)."""
    return ThinkSplitter()
