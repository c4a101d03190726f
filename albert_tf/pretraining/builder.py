"""Pretraining data builder: raw text -> ALBERT masked-LM + sentence-order TFRecords.

Follows the recipe of Google's ``create_pretraining_data.py`` (SOP pairs, whole-word
n-gram masking, the same ``tf.train.Example`` features) and fixes its traps:

* one seeded ``random.Random`` per (input file, dupe round), derived from ``random_seed``,
  so a seed gives byte-identical output whatever the number of worker processes;
* documents are streamed: each input file is tokenised once into a compact on-disk
  cache, and every dupe round streams that cache with a bounded shuffle buffer of
  instances (Google held corpus x dupe_factor instances in RAM and shuffled globally);
* (file, round) jobs run in parallel processes (``num_workers``);
* every local output is written under a temporary name and renamed only when complete; a
  remote one (gs://...) is written straight to its final name and appears whole when closed
  (object stores have no rename); inputs, outputs and the tokenizer may be on any filesystem
  tf.io.gfile knows, the token caches and part files stay in a local scratch folder.

This module holds the jobs, the process pool and the public entry points; the parts are
documents (input text), tokens (tokenizer, token cache), masking, instances and writer
(tf.train.Example + tf.io.TFRecordWriter; every worker imports TensorFlow to write).
See docs/pretraining_data.md.
"""

from __future__ import annotations

from collections import Counter, deque
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
import os
import random
import time
from typing import Callable, Iterable, Iterator

from albert_tf.core import fileio
from albert_tf.pretraining.documents import (
    expand_input_files,
    iter_raw_documents,
    split_output_files,
)
from albert_tf.pretraining.instances import (
    TrainingInstance,
    iter_round_instances,
    round_seed,
)
from albert_tf.pretraining.options import BuilderOptions
from albert_tf.pretraining.tokens import (
    TokenCache,
    TokenizerSpec,
    VocabTables,
    load_tokenizer,
    tokenize_document,
)
from albert_tf.pretraining.writer import ExampleSerializer, OutputSet, record_writer

__all__ = [
    "build_pretraining_data",
    "create_instances",
    "iter_tokenized_documents",
    "peak_rss_bytes",
]


# --------------------------------------------------------------------------- jobs


class _Stats:
    """Counters gathered while instances are made."""

    def __init__(self):
        self.c = Counter()
        self.spans: list = []
        self.draws: list = []
        self.decisions: list = []

    def add(self, inst: TrainingInstance):
        """Counts one instance (its per-piece lists are folded in by flush)."""
        c = self.c
        c["instances"] += 1
        c["tokens"] += len(inst.input_ids)
        c["masked"] += len(inst.masked_lm_positions)
        c["label_1"] += inst.next_sentence_label
        c["random_document"] += inst.random_document
        self.decisions.extend(inst.decisions)
        self.draws.extend(inst.draws)
        self.spans.extend([s[3] for s in inst.spans])
        if len(self.decisions) > 100_000:
            self.flush()

    def flush(self) -> Counter:
        """Folds the buffered per-piece lists into the counters."""
        c = self.c
        for name, values in (
            ("decision", self.decisions),
            ("drawn", self.draws),
            ("span", self.spans),
        ):
            for value, count in Counter(values).items():
                c[(name, value)] += count
            values.clear()
        return c


def _tokenize_job(args) -> dict:
    """Worker: tokenise one input file into its cache directory."""
    path, directory, spec, options, vocab_size = args
    info = TokenCache.write(path, directory, spec, options, vocab_size)
    info["directory"] = directory
    return info


def _round_job(args) -> tuple:
    """Worker: one dupe round over one file -> a TFRecord part file; returns its counters."""
    (cache_dir, id_code, file_index, round_index, options, vocab, part_path) = args
    t0 = time.perf_counter()
    seed = round_seed(options.random_seed, file_index, round_index)
    rng = random.Random(seed)
    # the shuffle has its own stream, so the instances do not depend on the buffer size
    shuffle_rng = random.Random(seed ^ 0x5EED5EED)
    cache = TokenCache(cache_dir, id_code)
    serializer = ExampleSerializer(options.max_seq_length, options.max_predictions_per_seq)
    stats = _Stats()
    try:
        instances = iter_round_instances(cache, options, vocab, rng)
        records = _encoded(instances, stats, serializer)
        with record_writer(part_path) as out:
            for record in _shuffled(records, options.shuffle_buffer_size, shuffle_rng):
                out.write(record)
    finally:
        cache.close()
    stats.c["seconds"] = time.perf_counter() - t0
    return part_path, stats.flush(), peak_rss_bytes()


def _encoded(
    instances: Iterable[TrainingInstance], stats: _Stats, serializer: ExampleSerializer
) -> Iterator[bytes]:
    """Counts each instance into `stats` and yields its serialised Example."""
    for inst in instances:
        stats.add(inst)
        yield serializer.encode(inst)


def _shuffled(records: Iterable[bytes], size: int, rng: random.Random) -> Iterator[bytes]:
    """The records through a shuffle buffer of `size` (at least 1), drawn with `rng`."""
    size = max(1, size)
    buffer: list = []
    for record in records:
        if len(buffer) < size:
            buffer.append(record)
            continue
        k = rng.randrange(size)
        yield buffer[k]
        buffer[k] = record
    rng.shuffle(buffer)
    yield from buffer


def peak_rss_bytes() -> int:
    """Measure this process's peak resident memory.

    Reads VmHWM from /proc where it exists (a spawned worker's `ru_maxrss` starts at its
    parent's peak), else `resource.getrusage`'s `ru_maxrss`.

    Returns:
        int. The peak resident set size in bytes, or 0 where neither is available.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        # deferred: the resource module exists on Unix only
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    except (ImportError, AttributeError):  # pragma: no cover - non-POSIX
        return 0


# --------------------------------------------------------------------------- public API


def _prepare(spm_model_file, vocab_file, do_lower_case, options):
    """Tokenizer spec, vocabulary tables and validated options."""
    spec = TokenizerSpec(
        spm_model_file=spm_model_file if spm_model_file else None,
        vocab_file=vocab_file if (vocab_file and not spm_model_file) else None,
        do_lower_case=do_lower_case,
    )
    tokenizer = load_tokenizer(spec)
    vocab = VocabTables.from_tokenizer(tokenizer, spm=bool(spec.spm_model_file))
    return spec, vocab, options


def iter_tokenized_documents(
    input_file: str,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    **options,
) -> Iterator[list]:
    """Tokenize a text file's documents exactly as the builder does.

    Args:
        input_file: str. One input file (one sentence per line, a blank line between
            documents, or WikiExtractor output).
        spm_model_file: str or None. The SentencePiece model. Defaults to None.
        vocab_file: str or None. A WordPiece vocabulary, used only without
            `spm_model_file`. Defaults to None.
        do_lower_case: bool. Lower-case text before tokenizing. Defaults to True.
        **options: `BuilderOptions` fields (e.g. `input_format`).

    Yields:
        list of list of int. Each non-empty document, as a list of sentences, each a list
        of piece ids.

    Example:

    >>> from albert_tf.pretraining.builder import iter_tokenized_documents
    >>> docs = iter_tokenized_documents("tests/data/fixtures/corpus.txt",
    ...                                 spm_model_file="tests/data/fixtures/spm.model")
    >>> first = next(docs)
    >>> len(first), first[0][:4]
    (6, [13, 175, 443, 450])
    """
    opts = BuilderOptions(**options)
    spec, _, _ = _prepare(spm_model_file, vocab_file, do_lower_case, opts)
    tokenizer = load_tokenizer(spec)
    for raw in iter_raw_documents(input_file, opts):
        doc = tokenize_document(raw, tokenizer, spec)
        if doc:
            yield doc


def create_instances(
    input_file: str,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    round_index: int = 0,
    num_rounds: int = 1,
    file_index: int = 0,
    **options,
) -> list:
    """Make the training instances `build_pretraining_data` would write for one file.

    Gives the instances of dupe rounds `round_index` .. `round_index + num_rounds - 1`, in
    document order: not shuffled and not serialised. Useful to inspect the pairs and masks.

    Args:
        input_file: str. The input file (a glob or comma list: its first file is used).
        spm_model_file: str or None. The SentencePiece model. Defaults to None.
        vocab_file: str or None. A WordPiece vocabulary, used only without
            `spm_model_file`. Defaults to None.
        do_lower_case: bool. Lower-case text before tokenizing. Defaults to True.
        round_index: int. The first dupe round. Defaults to 0.
        num_rounds: int. How many rounds. Defaults to 1.
        file_index: int. The file's position among the builder's inputs, which selects its
            random seed. Defaults to 0.
        **options: `BuilderOptions` fields (e.g. `max_seq_length`, `random_seed`).

    Returns:
        list of `TrainingInstance`. Each has `input_ids` (after masking), `segment_ids`,
        `masked_lm_positions`, `masked_lm_ids` and `next_sentence_label`.

    Example:

    >>> from albert_tf.pretraining.builder import create_instances
    >>> instances = create_instances("tests/data/fixtures/corpus.txt",
    ...                              "tests/data/fixtures/spm.model", max_seq_length=64,
    ...                              max_predictions_per_seq=10)
    >>> len(instances), instances[0].input_ids[:4], len(instances[0].masked_lm_positions)
    (970, [2, 845, 19, 7], 10)
    """
    opts = BuilderOptions(**options)
    path = expand_input_files(input_file)[0]
    spec, vocab, opts = _prepare(spm_model_file, vocab_file, do_lower_case, opts)
    instances: list = []
    with fileio.scratch_folder(prefix="albert_tokens_") as tmp:
        info = TokenCache.write(path, tmp, spec, opts, vocab.size)
        cache = TokenCache(tmp, info["id_typecode"])
        try:
            for r in range(round_index, round_index + num_rounds):
                rng = random.Random(round_seed(opts.random_seed, file_index, r))
                instances.extend(iter_round_instances(cache, opts, vocab, rng))
        finally:
            cache.close()
    return instances


def build_pretraining_data(
    input_files,
    output_files,
    spm_model_file: str | None = None,
    vocab_file: str | None = None,
    do_lower_case: bool = True,
    num_workers: int = 1,
    one_output_per_input: bool = False,
    progress: Callable[[dict], None] | None = None,
    **options,
) -> dict:
    """Build ALBERT pretraining TFRecords (masked LM + sentence order) from text files.

    Follows Google's `create_pretraining_data.py` and writes the same `tf.train.Example`
    features, which `run_pretraining.py` reads. Input: one sentence per line with a blank line
    between documents, or WikiExtractor output. Records are dealt round-robin to the outputs,
    as Google's script does. The same `random_seed` gives byte-identical output for any
    `num_workers`. Each local output is written under a temporary name and renamed only when
    all are complete (a remote one, such as gs://, appears whole when closed); on any error the
    temporary files are removed. Memory stays flat in the corpus size.
    With `num_workers` > 1 the workers are "spawn" processes, which import the main module
    again: in a script the call must sit under `if __name__ == "__main__":`, or the build
    raises `BrokenProcessPool`. See docs/pretraining_data.md.

    Args:
        input_files: str or sequence of str. Input files: a comma-separated string or a
            list; globs are expanded (matches sorted).
        output_files: str or sequence of str. Output TFRecord files: a comma-separated
            string or a list.
        spm_model_file: str or None. The SentencePiece model. Defaults to None.
        vocab_file: str or None. A WordPiece vocabulary, used only without
            `spm_model_file`. Defaults to None.
        do_lower_case: bool. Lower-case text before tokenizing. Defaults to True.
        num_workers: int. Processes that run the (file, dupe round) jobs; 1 runs everything
            in this process. Defaults to 1.
        one_output_per_input: bool. Write every record of input i to output i instead of
            dealing records round-robin; needs as many outputs as inputs. Defaults to False.
        progress: callable or None. Called after each finished (file, round) job with a dict
            of `instances`, `seconds`, `instances_per_second` and `input_file`. Defaults to
            None.
        **options: `BuilderOptions` fields, with the names and defaults of Google's flags:
            `max_seq_length` (512), `max_predictions_per_seq` (20), `masked_lm_prob` (0.15),
            `short_seq_prob` (0.1), `dupe_factor` (40), `random_seed` (12345),
            `do_whole_word_mask`, `favor_shorter_ngram`, `random_next_sentence`, `ngram` (3),
            plus `shuffle_buffer_size`, `input_format`, `keep_wiki_titles` and
            `split_wiki_sentences`.

    Returns:
        dict of statistics: `input_files`, `output_files`, `records_per_output`,
        `documents`, `sentences`, `corpus_tokens`, `instances`, `tokens`, `masked_pieces`,
        `masked_fraction`, the [MASK] / kept / random split (`mask_token_fraction`,
        `kept_fraction`, `random_piece_fraction`), `sop_swapped_fraction` (label 1),
        `random_document_fraction`, `span_length_fractions`, `drawn_ngram_fractions`,
        `seconds`, `instances_per_second` and `worker_peak_rss_bytes`.

    Raises:
        ValueError: when `one_output_per_input` is set and the numbers of inputs and outputs
            differ, or an option is invalid.

    Example:

    >>> import os, tempfile, albert_tf
    >>> folder = tempfile.mkdtemp()
    >>> stats = albert_tf.build_pretraining_data(
    ...     "tests/data/fixtures/corpus.txt",
    ...     [os.path.join(folder, "train-0.tfrecord"), os.path.join(folder, "train-1.tfrecord")],
    ...     spm_model_file="tests/data/fixtures/spm.model",
    ...     max_seq_length=64, max_predictions_per_seq=10, dupe_factor=1)
    >>> stats["documents"], stats["instances"], stats["records_per_output"]
    (75, 970, [485, 485])
    >>> round(stats["masked_fraction"], 3)
    0.156
    >>> sorted(os.listdir(folder))
    ['train-0.tfrecord', 'train-1.tfrecord']
    """
    t_start = time.perf_counter()
    opts = BuilderOptions(**options)
    inputs = expand_input_files(input_files)
    outputs = split_output_files(output_files)
    if one_output_per_input and len(outputs) != len(inputs):
        raise ValueError(
            f"one_output_per_input needs one output per input: "
            f"{len(inputs)} inputs, {len(outputs)} outputs"
        )
    spec, vocab, opts = _prepare(spm_model_file, vocab_file, do_lower_case, opts)
    # the scratch folder beside a local output (the same disk), else the system's temp folder
    with fileio.scratch_folder(beside=outputs[0], prefix=".albert_pretraining_") as work:
        sink = OutputSet(outputs)
        run = _Run(
            inputs,
            opts,
            spec,
            vocab,
            work,
            sink=sink,
            per_input=one_output_per_input,
            progress=progress,
            t_start=t_start,
        )
        try:
            if num_workers <= 1:
                run.serial()
            else:
                run.parallel(num_workers)
            sink.commit()
        except BaseException:
            sink.abort()
            raise
    return run.summary(sink, outputs)


class _Run:
    """Schedules tokenise and round jobs and merges their parts in a fixed order."""

    def __init__(self, inputs, opts, spec, vocab, work, *, sink, per_input, progress, t_start):
        self.inputs, self.opts, self.spec, self.vocab = inputs, opts, spec, vocab
        self.work, self.sink, self.per_input = work, sink, per_input
        self.progress, self.t_start = progress, t_start
        self.counters = Counter()
        self.corpus = Counter()
        self.worker_peak_rss = 0

    def _tok_args(self, f: int):
        return (
            self.inputs[f],
            os.path.join(self.work, f"tokens-{f:05d}"),
            self.spec,
            self.opts,
            self.vocab.size,
        )

    def _round_args(self, f: int, r: int, info: dict):
        return (
            info["directory"],
            info["id_typecode"],
            f,
            r,
            self.opts,
            self.vocab,
            os.path.join(self.work, f"part-{f:05d}-{r:05d}.tfrecord"),
        )

    def _merge(self, f: int, result: tuple):
        """Adds one finished round's part file to the outputs, then deletes it."""
        part, counters, peak = result
        if self.per_input:
            self.sink.add_part_to(f, part)
        else:
            self.sink.add_part_round_robin(part)
        fileio.remove(part)
        seconds = counters.pop("seconds", 0.0)
        self.counters.update(counters)
        self.counters["job_seconds"] += seconds
        self.worker_peak_rss = max(self.worker_peak_rss, peak)
        if self.progress:
            elapsed = time.perf_counter() - self.t_start
            self.progress(
                {
                    "instances": self.counters["instances"],
                    "seconds": elapsed,
                    "instances_per_second": self.counters["instances"] / elapsed,
                    "input_file": self.inputs[f],
                }
            )

    def _corpus(self, info: dict):
        for key in ("documents", "sentences", "tokens"):
            self.corpus[key] += info[key]

    def serial(self):
        """Everything in this process, file by file."""
        for f in range(len(self.inputs)):
            info = _tokenize_job(self._tok_args(f))
            self._corpus(info)
            for r in range(self.opts.dupe_factor):
                self._merge(f, _round_job(self._round_args(f, r, info)))
            fileio.rmtree(info["directory"])

    def parallel(self, num_workers: int):
        """Tokenise jobs first, then round jobs, merged in (file, round) order.

        Uses 'spawn' worker processes (safe when the parent has TensorFlow threads); a
        worker that dies raises BrokenProcessPool instead of hanging.
        """
        ctx = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(max_workers=num_workers, mp_context=ctx)
        try:
            tok = [pool.submit(_tokenize_job, self._tok_args(f)) for f in range(len(self.inputs))]
            pending: deque = deque()
            rounds_left: dict = {}
            for f in range(len(self.inputs)):
                info = tok[f].result()
                self._corpus(info)
                for r in range(self.opts.dupe_factor):
                    pending.append((f, pool.submit(_round_job, self._round_args(f, r, info))))
                rounds_left[f] = [info["directory"], self.opts.dupe_factor]
                while pending and pending[0][1].done():
                    self._merge_pending(pending, rounds_left)
            while pending:
                self._merge_pending(pending, rounds_left)
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _merge_pending(self, pending: deque, rounds_left: dict):
        """Merges the oldest pending round; drops a file's cache after its last round."""
        f, future = pending.popleft()
        self._merge(f, future.result())
        rounds_left[f][1] -= 1
        if rounds_left[f][1] == 0:
            fileio.rmtree(rounds_left[f][0])

    def summary(self, sink: OutputSet, outputs: list) -> dict:
        """The statistics dictionary returned by build_pretraining_data."""
        c = self.counters
        n, masked = c["instances"], c["masked"]
        spans = {k[1]: v for k, v in c.items() if isinstance(k, tuple) and k[0] == "span"}
        drawn = {k[1]: v for k, v in c.items() if isinstance(k, tuple) and k[0] == "drawn"}
        total_spans, total_drawn = sum(spans.values()), sum(drawn.values())
        seconds = time.perf_counter() - self.t_start
        return {
            "input_files": list(self.inputs),
            "output_files": list(outputs),
            "records_per_output": list(sink.counts),
            "documents": self.corpus["documents"],
            "sentences": self.corpus["sentences"],
            "corpus_tokens": self.corpus["tokens"],
            "instances": n,
            "tokens": c["tokens"],
            "masked_pieces": masked,
            "masked_fraction": masked / max(1, c["tokens"]),
            "mask_token_fraction": c[("decision", 0)] / max(1, masked),
            "kept_fraction": c[("decision", 1)] / max(1, masked),
            "random_piece_fraction": c[("decision", 2)] / max(1, masked),
            "sop_swapped_fraction": c["label_1"] / max(1, n),
            "random_document_fraction": c["random_document"] / max(1, n),
            "span_length_fractions": {k: v / total_spans for k, v in sorted(spans.items())},
            "drawn_ngram_fractions": {k: v / total_drawn for k, v in sorted(drawn.items())},
            "seconds": seconds,
            "instances_per_second": n / seconds if seconds > 0 else 0.0,
            "worker_peak_rss_bytes": self.worker_peak_rss,
        }
