"""The closing summary of a driver run: the final metrics and every file the run wrote, printed
and saved as `run_summary.json` in the output folder (what a script reads afterwards).

`run_summary.json` also records what the run trained (driver, task, labels, the model's class
and config), so `python -m albert_tf.convert --input <output_dir>` can rebuild the fine-tuned
model with its head instead of guessing.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import time
from typing import Optional

from albert_tf.core import fileio
from albert_tf.core.config import CONFIG_FILE
from albert_tf.engine.progress import format_duration
from albert_tf.engine.results import format_metrics

SUMMARY_FILE = "run_summary.json"
# what the output folder's other files hold, by name (a pattern: a leading * for a suffix,
# a trailing * for a prefix), for those of them no step of the run listed itself
FOLDER_FILES = (
    (CONFIG_FILE, "the config its checkpoints are written with"),
    ("checkpoint", "TensorFlow's list of the checkpoints"),
    ("ckpt-*", "a checkpoint (model + optimizer)"),
    ("*.tf_record", "cached features (the next run reuses them)"),
    ("*.tf_record.json", "the cached features' description"),
    ("eval_history.json", "every evaluation, across restarts"),
    ("best_trial*", "the best evaluation so far"),
    ("train", "TensorBoard events of training"),
    ("eval", "TensorBoard events of evaluation"),
)
CHECKPOINT_PART = re.compile(r"\.(index|data-\d+-of-\d+)$")  # a checkpoint's files


def _what(name) -> str:
    for pattern, what in FOLDER_FILES:
        if (
            name == pattern
            or (pattern.startswith("*") and name.endswith(pattern[1:]))
            or (pattern.endswith("*") and name.startswith(pattern[:-1]))
        ):
            return what
    return "written in the output folder"


@dataclasses.dataclass
class WrittenFile:
    """One output of a run: where it is and what it holds."""

    path: str
    what: str


@dataclasses.dataclass
class RunSummary:
    """What a run did, for the closing summary and run_summary.json.

    Args:
        output_dir: The run's output folder.
        driver: The script, e.g. "run_classifier.py".
        started: `time.time()` when the run started.
        metrics: The final evaluation (empty without one).
        files: The files and folders the run wrote.
        model: What the run trains: `{"class": ..., "config": ..., "task": ..., "labels": ...}`.
        global_step: The step the model was trained to, when known.
        warnings: What the run warned about that its user must not miss (e.g. a quantized
            file deciding unlike the model), repeated as `warning:` lines at the end.
    """

    output_dir: str
    driver: str
    started: float = dataclasses.field(default_factory=time.time)
    metrics: dict = dataclasses.field(default_factory=dict)
    files: list = dataclasses.field(default_factory=list)
    model: dict = dataclasses.field(default_factory=dict)
    global_step: Optional[int] = None
    warnings: list = dataclasses.field(default_factory=list)

    def add(self, path, what: str):
        """Records an output (skipped when `path` is empty).

        Args:
            path: The file or folder.
            what: A few words on what it holds.
        """
        if path:
            self.files.append(WrittenFile(str(path), what))

    def write_in(self, name: str, data: bytes, what: str):
        """Writes a file into the output folder as `name` and records it.

        Args:
            name: Its name in the output folder.
            data: Its bytes.
            what: A few words on what it holds.
        """
        self.add(fileio.write_bytes(fileio.join(self.output_dir, name), data), what)

    def add_unlisted(self):
        """Records every entry of the output folder that no step listed (a checkpoint once,
        not its .index and .data files), so the summary names every file of the run."""
        if not fileio.isdir(self.output_dir):
            return
        listed = {f.path.rstrip("/") for f in self.files}
        names = []
        for name in sorted(fileio.listdir(self.output_dir)):
            name = CHECKPOINT_PART.sub("", name.rstrip("/"))
            if name not in names and name != SUMMARY_FILE:
                names.append(name)
        for name in names:
            path = fileio.join(self.output_dir, name)
            if path not in listed:
                self.add(path, _what(name))

    def to_dict(self) -> dict:
        """The summary as run_summary.json holds it.

        Returns:
            A JSON-serialisable dict.
        """
        return {
            "driver": self.driver,
            "output_dir": self.output_dir,
            "seconds": round(time.time() - self.started, 1),
            "global_step": self.global_step,
            "metrics": self.metrics,
            "files": [dataclasses.asdict(f) for f in self.files],
            "model": self.model,
            "warnings": list(self.warnings),
        }

    def lines(self) -> list:
        """The closing summary as printed.

        Returns:
            The lines of text.
        """
        head = f"done in {format_duration(time.time() - self.started)}"
        if self.global_step is not None:
            head += f" (step {self.global_step})"
        out = [head]
        if self.metrics:
            out.append(f"final eval: {format_metrics(self.metrics)}")
        if self.files:
            width = max(len(f.path) for f in self.files)
            out.append("wrote:")
            out += [f"  {f.path:<{width}}  {f.what}" for f in self.files]
        return out + [f"warning: {w}" for w in self.warnings]

    def finish(self, chief: bool = True, stream=None, show: bool = True) -> dict:
        """Writes run_summary.json (chief only) and prints the summary.

        Args:
            chief: Whether this worker writes files (tf.distribute's chief).
            stream: Where to print; default stdout.
            show: False writes the file only (a run with `verbose=0`).

        Returns:
            The summary dict.
        """
        path = fileio.join(self.output_dir, SUMMARY_FILE)
        if chief:
            self.add_unlisted()
            self.add(path, "this summary (metrics and files, as JSON)")
            data = self.to_dict()
            fileio.write_text(path, json.dumps(data, indent=1, default=str) + "\n")
        else:
            data = self.to_dict()
        if show:
            print("\n".join(self.lines()), file=stream or sys.stdout, flush=True)
        return data


def read_run_summary(output_dir) -> Optional[dict]:
    """The run_summary.json of a run folder, or None when it has none.

    Args:
        output_dir: A driver's output folder.

    Returns:
        The summary dict, or None.
    """
    path = fileio.join(output_dir, SUMMARY_FILE)
    return fileio.read_json(path) if fileio.exists(path) else None
