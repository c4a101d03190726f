"""One progress display over a whole training run: step / total, elapsed time, ETA, loss,
learning rate and steps/s.

On a terminal it is a live bar on one line that log lines never tear (the log handler clears it,
writes its line, then draws it again); in a log file or pipe it is a plain line every few steps,
so a run's log reads the same on a TPU VM as in a terminal.
"""

from __future__ import annotations

import sys
import time
from typing import Optional

_BAR_WIDTH = 24
_REDRAW_SECONDS = 0.2
_ACTIVE: Optional[ProgressBar] = None


def format_duration(seconds: float) -> str:
    """`seconds` as H:MM:SS (or M:SS under an hour).

    Args:
        seconds: A duration; negative values count as 0.

    Returns:
        The duration, e.g. "1:05" or "2:03:07".

    Example:

    >>> format_duration(65), format_duration(7387)
    ('1:05', '2:03:07')
    """
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


def active_bar() -> Optional[ProgressBar]:
    """The live progress bar of this process, if one is on screen (for the log handler)."""
    return _ACTIVE


class ProgressBar:
    """The progress of a run of `total` steps that starts at step `start` (a resumed run).

    Args:
        total: The step the run ends at.
        start: The step it starts from (0, or where a resumed run picks up).
        label: The word in front of the bar.
        stream: Where to write; default `sys.stderr` at each write.
        live: Redraw one line in place (a terminal); default: whether the stream is a
            terminal. When False, `update` prints a line every `every` steps instead.
        every: Steps between lines when not live.

    Example:

    >>> import io
    >>> out = io.StringIO()
    >>> bar = ProgressBar(total=4, label="training", stream=out, live=False, every=2)
    >>> for step in range(1, 5):
    ...     bar.update(step, loss=0.5, learning_rate=1e-3)
    >>> bar.close()
    >>> [line.split(" · ")[0] for line in out.getvalue().splitlines()]
    ['training 2/4 steps (50%)', 'training 4/4 steps (100%)']
    """

    def __init__(
        self,
        total: int,
        start: int = 0,
        *,
        label: str = "training",
        stream=None,
        live: Optional[bool] = None,
        every: int = 100,
    ):
        self.total, self.start, self.label = int(total), int(start), label
        self._stream = stream
        target = self.stream
        self.live = bool(live) if live is not None else bool(getattr(target, "isatty", bool)())
        self.every = max(1, int(every))
        self.t0 = time.time()
        self.step, self.fields = self.start, {}
        self._drawn, self._last_draw, self._last_line_step = False, 0.0, self.start

    @property
    def stream(self):
        return self._stream if self._stream is not None else sys.stderr

    def __enter__(self):
        self.open()
        return self

    def __exit__(self, *exc):
        self.close()

    def open(self):
        """Makes this the bar the log handler clears and redraws around its lines."""
        global _ACTIVE
        _ACTIVE = self if self.live else None

    def steps_per_second(self) -> float:
        """Steps per second since the bar started."""
        return (self.step - self.start) / max(time.time() - self.t0, 1e-9)

    def text(self) -> str:
        """The progress as one line of text (no bar glyphs when not live)."""
        done, total = self.step, max(self.total, 1)
        elapsed = time.time() - self.t0
        rate = self.steps_per_second()
        eta = (self.total - done) / rate if rate > 0 else float("nan")
        parts = [
            f"{done}/{self.total} steps ({100 * done // total}%)",
            f"{format_duration(elapsed)} elapsed",
            f"ETA {format_duration(eta) if eta == eta else '?'}",
        ]
        if self.fields.get("loss") is not None:
            parts.append(f"loss {self.fields['loss']:.4g}")
        if self.fields.get("learning_rate") is not None:
            parts.append(f"lr {self.fields['learning_rate']:.3g}")
        parts.append(f"{rate:.3g} steps/s")
        head = self.label
        if self.live:
            filled = int(_BAR_WIDTH * min(done, total) / total)
            head = f"{self.label} {'━' * filled}{'╺' if filled < _BAR_WIDTH else ''}"
            head += "─" * max(0, _BAR_WIDTH - filled - 1)
        return f"{head} " + " · ".join(parts)

    def update(self, step: int, **fields):
        """Records `step` and fields such as `loss=` and `learning_rate=`, and shows them."""
        self.step = int(step)
        self.fields.update(fields)
        if self.live:
            now = time.time()
            if now - self._last_draw >= _REDRAW_SECONDS or self.step >= self.total:
                self.redraw()
                self._last_draw = now
        elif self.step - self._last_line_step >= self.every or self.step >= self.total:
            if self.step != self._last_line_step:
                print(self.text(), file=self.stream, flush=True)
                self._last_line_step = self.step

    def clear(self):
        """Removes the live bar from the screen (before a log line)."""
        if self.live and self._drawn:
            self.stream.write("\r\033[K")
            self._drawn = False

    def redraw(self):
        """Draws the live bar again (after a log line)."""
        if self.live:
            self.stream.write("\r\033[K" + self.text())
            self.stream.flush()
            self._drawn = True

    def close(self):
        """Leaves the final state on screen and stops redrawing."""
        global _ACTIVE
        if self.live:
            self.redraw()
            self.stream.write("\n")
            self.stream.flush()
        elif self.step != self._last_line_step:
            print(self.text(), file=self.stream, flush=True)
            self._last_line_step = self.step
        if _ACTIVE is self:
            _ACTIVE = None
