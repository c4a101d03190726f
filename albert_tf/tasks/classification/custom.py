"""Reading your own sentence (pair) classification or regression data.

CSV, TSV or JSONL files with named columns are read into InputExamples, so they train
through the generic classifier: `run_classifier.py --task_name=custom`, or
`ClassifierTask(CustomProcessor(...), ...)` (`GlueTask(..., processor=...)` too).

Files: `.csv` (a header row, then comma-separated rows with standard CSV quoting), `.tsv` (a
header row, tab-separated, no quoting: as GLUE's files) or `.jsonl` (one JSON object a line).
Each split is an explicit file or `<data_dir>/<split>.<csv|tsv|jsonl>`. Labels are the sorted
unique values of the train split's label column (numerically when all are numbers), unless
given; `labels.json` stores them with a run so later runs map labels to the same ids.
"""

from __future__ import annotations

import csv
import io
import json
import os
from typing import List, Optional, Sequence

from albert_tf.core import fileio
from albert_tf.core.errors import InputError
from albert_tf.core.fileio import write_text_atomic
from albert_tf.tasks.classification.reader import DataProcessor, GlueFormatError, InputExample

EXTENSIONS = (".csv", ".tsv", ".jsonl")
SPLITS = ("train", "dev", "test")
LABELS_FILE = "labels.json"


def check_extension(path, argument=None) -> str:
    """Returns a data file's extension, checking that albert_tf can read it.

    Args:
        path: str or path-like. The data file.
        argument: str or None. The argument that named the file (e.g. "train_file"); the
            error message starts with it (`train_file: ...`). Default None.

    Returns:
        str. The lowercase extension: one of ".csv", ".tsv", ".jsonl".

    Raises:
        InputError: when the extension is none of those.

    Example:

    >>> from albert_tf.tasks.classification.custom import check_extension
    >>> check_extension("data/Train.CSV")
    '.csv'
    """
    ext = os.path.splitext(os.fspath(path))[1].lower()
    if ext not in EXTENSIONS:
        where = f"{argument}: " if argument else ""
        raise InputError(
            f"{where}{path} has the unknown extension {ext or '(none)'!r}; "
            f"use one of {', '.join(EXTENSIONS)}"
        )
    return ext


def find_split_file(data_dir, split) -> str:
    """Finds the file of a split in a data folder: `<data_dir>/<split>.<csv|tsv|jsonl>`.

    Args:
        data_dir: str. The folder to look in (any filesystem albert_tf reads).
        split: str. "train", "dev" or "test".

    Returns:
        str. The path of the one file found.

    Raises:
        FileNotFoundError: when no such file exists.
        InputError: when several exist (e.g. both train.csv and train.tsv).
    """
    found = [
        fileio.join(data_dir, split + ext)
        for ext in EXTENSIONS
        if fileio.isfile(fileio.join(data_dir, split + ext))
    ]
    if not found:
        raise FileNotFoundError(
            f"no {split} file in {data_dir} (looked for {', '.join(split + e for e in EXTENSIONS)})"
        )
    if len(found) > 1:
        raise InputError(
            f"data_dir: {data_dir} holds several {split} files "
            f"({', '.join(fileio.basename(p) for p in found)}); keep one"
        )
    return found[0]


def _decode(path) -> str:
    """The whole file as UTF-8 text (optional BOM); a bad byte names its line."""
    raw = fileio.read_bytes(path)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[: e.start].count(b"\n") + 1
        raise GlueFormatError(
            f"{path}, line {line}: not UTF-8 text (byte {raw[e.start]:#04x})"
        ) from None


def read_table(path) -> tuple:
    """Reads a CSV, TSV or JSONL file into its column names and rows.

    CSV files use standard quoting; TSV files are split on tabs with no quoting (as GLUE's
    files). The columns of a CSV or TSV file are its header row; those of a JSONL file are
    the keys of its first object. Blank lines are skipped. The text is UTF-8 (an optional
    BOM is dropped).

    Args:
        path: str or path-like. A `.csv`, `.tsv` or `.jsonl` file.

    Returns:
        tuple. `(columns, rows)`: the list of column names, and a list of
        `(line number, {column: value})` pairs, line numbers counted from 1.

    Raises:
        InputError: when the extension is not one of those.
        GlueFormatError: when the file is empty, is not UTF-8, a row has a different number
            of fields than the header, or a JSONL line is not one JSON object (the message
            names the line).

    Example:

    >>> from albert_tf.tasks.classification.custom import read_table
    >>> columns, rows = read_table("tests/data/samples/SST-2/train.tsv")
    >>> columns, len(rows), rows[0][0], rows[0][1]["label"]
    (['sentence', 'label'], 50, 2, '0')
    """
    path = os.fspath(path)
    ext = check_extension(path)
    text = _decode(path)
    if not text.strip():
        raise GlueFormatError(f"{path} is empty")
    if ext == ".jsonl":
        return _read_jsonl(path, text)
    quoting = csv.QUOTE_NONE if ext == ".tsv" else csv.QUOTE_MINIMAL
    reader = csv.reader(
        io.StringIO(text, newline=""), delimiter="\t" if ext == ".tsv" else ",", quoting=quoting
    )
    try:
        columns = [c.strip() for c in next(reader)]
        rows = []
        for fields in reader:
            if not any(f.strip() for f in fields):
                continue
            if len(fields) != len(columns):
                raise GlueFormatError(
                    f"{path}, line {reader.line_num}: {len(fields)} fields, "
                    f"but the header has {len(columns)} ({', '.join(columns)})"
                )
            rows.append((reader.line_num, dict(zip(columns, fields))))
    except csv.Error as e:
        raise GlueFormatError(f"{path}, line {reader.line_num}: {e}") from None
    return columns, rows


def _read_jsonl(path, text) -> tuple:
    """(keys of the first object, rows) of JSON lines; each line must be one JSON object."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise GlueFormatError(f"{path}, line {lineno}: not valid JSON ({e.msg})") from None
        if not isinstance(row, dict):
            raise GlueFormatError(
                f"{path}, line {lineno}: a JSON object is needed, got {type(row).__name__}"
            )
        rows.append((lineno, row))
    return list(rows[0][1]), rows


def _sorted_labels(values) -> List[str]:
    """Unique label names, in numeric order when every one is a number, else in string order."""
    unique = set(values)
    try:
        return sorted(unique, key=float)
    except ValueError:
        return sorted(unique)


def _label_name(value):
    """A classification label as its name: JSON numbers and booleans as written in CSV."""
    if isinstance(value, bool):
        return str(value).lower()
    return value if isinstance(value, str) else json.dumps(value)


class CustomProcessor(DataProcessor):
    """Reads the named text and label columns of your own CSV, TSV or JSONL files.

    A data processor (task name "custom") for any sentence or sentence-pair
    classification, multi-label classification or regression data. Pass it to
    `ClassifierTask` (or `GlueTask`'s `processor=`) to fine-tune on the data, or use
    `run_classifier.py --task_name=custom`.

    Each split is the file given in `files`, or else `<data_dir>/<split>.<csv|tsv|jsonl>`.
    The label names, in id order, are `labels` when given, else the sorted unique labels of
    the train split (in numeric order when every label is a number). JSON numbers and
    booleans in a label column are read as they would be written in CSV (`1`, `true`). Test
    files need no label column: test labels are never read. A train or dev label that is not
    among the label names raises a GlueFormatError naming its line.

    Args:
        files: dict or None. Maps a split ("train", "dev", "test") to its file. A split
            not in it is looked for in `data_dir`. Default None.
        data_dir: str or None. The folder holding `train.csv` (or `.tsv`, `.jsonl`),
            `dev.*` and `test.*`. Default None.
        text_a_column: str. The column of the first text. Default "text".
        text_b_column: str or None. The column of the second text of a pair; None for
            single sentences. Default None.
        label_column: str. The column of the label. Default "label".
        is_regression: bool. The label is a number to predict (read as float), not a class.
            Default False.
        labels: sequence of str, or None. The label names in id order; None infers them
            from the train split. Ignored for regression. Default None.
        multi_label: bool. The label column holds several labels per example: a JSON list,
            or names separated by `label_separator` in CSV/TSV (an empty cell is an example
            with no label). An example's label is then the sorted tuple of its names.
            Default False.
        label_separator: str. What separates the labels of a multi-label CSV/TSV cell.
            Default ",".

    Example:

    >>> import albert_tf
    >>> processor = albert_tf.CustomProcessor(
    ...     {"train": "tests/data/samples/SST-2/train.tsv"}, text_a_column="sentence")
    >>> processor.labels
    ['0', '1']
    >>> example = processor.get_train_examples(None)[0]
    >>> example.guid, example.text_a, example.label
    ('train-0', 'hide new secretions from the parental units ', '0')

    A multi-label file, written here to a temporary folder:

    >>> import os, tempfile
    >>> data_dir = tempfile.mkdtemp()
    >>> with open(os.path.join(data_dir, "train.csv"), "w") as f:
    ...     _ = f.write('text,label\\ngood and cheap,"price,quality"\\nslow,speed\\n')
    >>> processor = albert_tf.CustomProcessor(data_dir=data_dir, multi_label=True)
    >>> processor.labels, processor.get_train_examples(data_dir)[0].label
    (['price', 'quality', 'speed'], ('price', 'quality'))
    """

    task_name, task_dir = "custom", ""

    def __init__(
        self,
        files: Optional[dict] = None,
        data_dir=None,
        *,
        text_a_column="text",
        text_b_column=None,
        label_column="label",
        is_regression=False,
        labels: Optional[Sequence[str]] = None,
        multi_label=False,
        label_separator=",",
    ):
        self.files = {k: os.fspath(v) for k, v in (files or {}).items() if v}
        self.data_dir = os.fspath(data_dir) if data_dir else None
        self.text_a_column, self.text_b_column = text_a_column, text_b_column
        self.label_column, self.is_regression = label_column, bool(is_regression)
        self.multi_label, self.label_separator = bool(multi_label), label_separator
        self._labels = None if labels is None or is_regression else [str(x) for x in labels]
        self._cache = {}

    @property
    def labels(self) -> List[str]:
        """The label names in id order: those given, else the train split's.

        Returns:
            list of str. The label names (empty for regression).
        """
        if self.is_regression:
            return []
        if self._labels is None:
            self._labels = self.train_labels()
        return self._labels

    def train_labels(self) -> List[str]:
        """The sorted unique labels of the train split, whatever labels were given.

        Returns:
            list of str. The label names, in numeric order when every one is a number.
        """
        examples = self._read("train", check_labels=False)
        if self.multi_label:
            return _sorted_labels(name for e in examples for name in e.label)
        return _sorted_labels(e.label for e in examples)

    def path(self, split) -> str:
        """The file of a split: the one given in `files`, or the one found in `data_dir`.

        Args:
            split: str. "train", "dev" or "test".

        Returns:
            str. The file's path.

        Raises:
            FileNotFoundError: when the split has no file given and there is no `data_dir`
                (or no file for it there).
        """
        if split in self.files:
            return self.files[split]
        if self.data_dir is None:
            raise FileNotFoundError(f"no {split} file given (and no data_dir to look in)")
        return find_split_file(self.data_dir, split)

    def has_text_b(self) -> bool:
        """Whether examples are sentence pairs.

        Returns:
            bool. True when a `text_b_column` is given.
        """
        return self.text_b_column is not None

    def cache_key(self, data_dir, split) -> dict:
        """What of the files and columns changes the features of a split (for cache keys).

        Args:
            data_dir: str. Unused (the processor knows its files); kept for the GLUE
                processors' interface.
            split: str. "train", "dev" or "test".

        Returns:
            dict. The file's absolute path and content digest, the columns, the labels and
            the regression / multi-label settings.
        """
        path = self.path(split)
        digest = fileio.file_fingerprint(path)
        return {
            "data": [fileio.abspath(path), digest],
            "columns": [self.text_a_column, self.text_b_column, self.label_column],
            "labels": self.labels,
            "is_regression": self.is_regression,
            **({"multi_label": self.label_separator} if self.multi_label else {}),
        }

    def _read_split(self, data_dir, split) -> List[InputExample]:
        return self._read(split, check_labels=True)

    def _read(self, split, check_labels) -> List[InputExample]:
        """The examples of `split` (cached); labels checked against the label set if asked."""
        if split not in self._cache:
            self._cache[split] = self._read_file(self.path(split), split)
        examples, lines = self._cache[split]
        if check_labels and split != "test" and not self.is_regression:
            known = set(self.labels)
            for e, lineno in zip(examples, lines):
                for name in e.label if self.multi_label else (e.label,):
                    if name not in known:
                        raise GlueFormatError(
                            f"{self.path(split)}, line {lineno}: label {name!r} "
                            f"is not among the train labels {self.labels}"
                        )
        return examples

    def _columns(self, split):
        """(flag, column) pairs the split must have."""
        wanted = [("text_a_column", self.text_a_column)]
        if self.text_b_column:
            wanted.append(("text_b_column", self.text_b_column))
        if split != "test":
            wanted.append(("label_column", self.label_column))
        return wanted

    def _read_file(self, path, split) -> tuple:
        """(examples, their line numbers) of one file; a missing column lists those present."""
        columns, rows = read_table(path)
        wanted = self._columns(split)
        for flag, column in wanted:
            if column not in columns and not path.endswith(".jsonl"):
                raise GlueFormatError(
                    f"{path} has no column {column!r} ({flag}); its columns "
                    f"are: {', '.join(columns)}"
                )
        examples = [
            self._example(path, lineno, row, wanted, split, number)
            for number, (lineno, row) in enumerate(rows)
        ]
        if not examples:
            raise GlueFormatError(f"{path} has no examples (only a header)")
        return examples, [lineno for lineno, _ in rows]

    def _example(self, path, lineno, row, wanted, split, number) -> InputExample:
        """One row as an InputExample; a missing or non-text value names the line and column."""
        values = {}
        for flag, column in wanted:
            value = row.get(column)
            if value is None:
                raise GlueFormatError(
                    f"{path}, line {lineno}: no {column!r} ({flag}); the row has: {', '.join(row)}"
                )
            if flag != "label_column" and not isinstance(value, str):
                raise GlueFormatError(f"{path}, line {lineno}: {column!r} is not text: {value!r}")
            values[flag] = value
        label = values.get("label_column")
        if label is not None and self.multi_label:
            label = self._parse_labels(label, path, lineno)
        elif label is not None:
            label = self._parse_label(label) if self.is_regression else _label_name(label)
            if label == "":
                raise GlueFormatError(f"{path}, line {lineno}: empty label ({self.label_column!r})")
        guid = str(number) if split == "test" else f"{split}-{number}"
        return InputExample(
            guid=guid,
            text_a=values["text_a_column"],
            text_b=values.get("text_b_column"),
            label=label,
        )

    def _parse_labels(self, raw, path, lineno) -> tuple:
        """A multi-label cell: a JSON list of names, or names split on label_separator."""
        if isinstance(raw, list):
            names = [_label_name(x) for x in raw]
        elif isinstance(raw, str):
            names = [x.strip() for x in raw.split(self.label_separator)]
        else:
            raise GlueFormatError(
                f"{path}, line {lineno}: {self.label_column!r} is not a list "
                f"of labels: {raw!r} (multi_label)"
            )
        return tuple(sorted({x for x in names if x}))

    def _parse_label(self, raw):
        """A regression label as a float."""
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise GlueFormatError(f"label {raw!r} is not a number (is_regression)") from None

    # -- the label file of a run --------------------------------------------------------------
    def label_record(self) -> dict:
        """What a run's labels.json holds.

        Returns:
            dict. The task name, the label names in id order, `is_regression`, the three
            column names, `multi_label` and `label_separator`.
        """
        return {
            "task": self.task_name,
            "labels": self.labels,
            "is_regression": self.is_regression,
            "text_a_column": self.text_a_column,
            "text_b_column": self.text_b_column,
            "label_column": self.label_column,
            "multi_label": self.multi_label,
            "label_separator": self.label_separator,
        }

    def save_labels(self, folder) -> str:
        """Writes `folder/labels.json` (atomically): the label ids of this run.

        Later runs read it (see `settle_labels`) so that they map labels to the same ids.

        Args:
            folder: str or path-like. The run's output folder.

        Returns:
            str. The path written.
        """
        path = fileio.join(os.fspath(folder), LABELS_FILE)
        return write_text_atomic(path, json.dumps(self.label_record(), indent=2) + "\n")


def load_labels(path) -> dict:
    """Reads a run's labels.json.

    Args:
        path: str. The labels.json file.

    Returns:
        dict. Its content (as `CustomProcessor.label_record` wrote it).

    Raises:
        InputError: when the file is not JSON, not UTF-8 or has no "labels" list.
    """
    try:
        record = fileio.read_json(path)
        if not isinstance(record.get("labels"), list):
            raise ValueError("no 'labels' list")
        return record
    except (ValueError, UnicodeDecodeError, AttributeError) as e:
        raise InputError(f"{path}: not a labels file of a custom run ({e})") from None


def settle_labels(processor: CustomProcessor, output_dir, init_checkpoint=None, do_train=False):
    """Fixes the processor's label ids for a run from a stored labels.json or the train file.

    Training takes the train split's labels, which must equal those of
    `output_dir/labels.json` when there is one. Otherwise (evaluation or prediction only) a
    labels.json in `output_dir`, or else beside `init_checkpoint`, wins over the train
    split's labels, so a later run maps labels to the ids the model was trained with.

    Args:
        processor: CustomProcessor. The processor whose label ids are set.
        output_dir: str. The run's output folder.
        init_checkpoint: str or None. The checkpoint a non-training run starts from; a
            labels.json beside it is read. Default None.
        do_train: bool. Whether the run trains. Default False.

    Returns:
        str or None. The labels.json the labels came from, or None when they came from the
        train split.

    Raises:
        InputError: when there is neither a labels.json nor a train file; when the stored
            file is from a multi-label run and this one is not (or the other way round), or
            from a regression run and this one is not (or the other way round); or when
            training on labels that differ from the stored ones.
    """
    folders = [output_dir] + (
        [] if do_train or not init_checkpoint else [fileio.dirname(fileio.abspath(init_checkpoint))]
    )
    stored = next(
        (
            fileio.join(f, LABELS_FILE)
            for f in folders
            if f and fileio.isfile(fileio.join(f, LABELS_FILE))
        ),
        None,
    )
    if stored is None:
        try:
            processor.labels  # noqa: B018  inferred from train now, so its errors come here
        except FileNotFoundError as e:
            raise InputError(
                f"no {LABELS_FILE} in output_dir {output_dir} (nor beside "
                f"init_checkpoint) and no train file to take the labels from: {e}"
            ) from None
        return None
    record = load_labels(stored)
    if bool(record.get("multi_label")) != processor.multi_label:
        raise InputError(
            f"{stored} is from a {'multi-label' if record.get('multi_label') else 'single-label'}"
            f" run; give the same multi_label or a fresh output_dir"
        )
    if bool(record.get("is_regression")) != processor.is_regression:
        raise InputError(
            f"{stored} is from a "
            f"{'regression' if record.get('is_regression') else 'classification'}"
            f" run; give the same is_regression or a fresh output_dir"
        )
    if do_train and not processor.is_regression and processor.train_labels() != record["labels"]:
        raise InputError(
            f"{stored} lists the labels {record['labels']} but the train file has "
            f"{processor.train_labels()}; use a fresh output_dir"
        )
    processor._labels = None if processor.is_regression else [str(x) for x in record["labels"]]
    return stored


def load_text_classification_data(
    path,
    text_a_column="text",
    text_b_column=None,
    label_column="label",
    is_regression=False,
    split="train",
) -> List[InputExample]:
    """Reads the examples of one CSV, TSV or JSONL file.

    Labels are kept as written (names; floats when `is_regression`) and are not checked
    against a label set. A convenience over `CustomProcessor` for one file.

    Args:
        path: str or path-like. A `.csv`, `.tsv` or `.jsonl` file with a header (CSV/TSV).
        text_a_column: str. The column of the first text. Default "text".
        text_b_column: str or None. The column of the second text of a pair. Default None.
        label_column: str. The column of the label. Default "label".
        is_regression: bool. Read labels as floats. Default False.
        split: str. "train", "dev" or "test": names the examples' guids
            (`"<split>-<n>"`, or `"<n>"` for test); "test" reads no labels. Default "train".

    Returns:
        list of InputExample. One per row, with `guid`, `text_a`, `text_b` and `label`.

    Example:

    >>> import albert_tf
    >>> examples = albert_tf.load_text_classification_data(
    ...     "tests/data/samples/STS-B/train.tsv", text_a_column="sentence1",
    ...     text_b_column="sentence2", label_column="score", is_regression=True)
    >>> len(examples), examples[0].text_a, examples[0].text_b, examples[0].label
    (50, 'A plane is taking off.', 'An air plane is taking off.', 5.0)
    >>> albert_tf.load_text_classification_data(
    ...     "tests/data/samples/SST-2/test.tsv", text_a_column="sentence", split="test")[0]
    InputExample(guid='0', text_a=..., text_b=None, label=None)
    """
    processor = CustomProcessor(
        {split: path},
        text_a_column=text_a_column,
        text_b_column=text_b_column,
        label_column=label_column,
        is_regression=is_regression,
    )
    return processor._read(split, check_labels=False)
