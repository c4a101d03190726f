"""What the engine does at each save point: write a ckpt-<step> object checkpoint (the index
rewritten only once it is complete), evaluate it, record the results, export the best one."""
from __future__ import annotations

import json
import os

from absl import logging
import tensorflow as tf

from albert_tf.engine.compiling import one_step_per_call
from albert_tf.engine.kill_points import _kill_point
from albert_tf.engine.results import append_results, format_results
from albert_tf.fileio import write_text_atomic

BEST_CHECKPOINT = "model.ckpt-best"
EVAL_HISTORY = "eval_history.json"  # every evaluation so far, across restarts


class _CheckpointFiles:
    """ckpt-<step> object checkpoints of one directory. The `checkpoint` index file (what
    tf.train.latest_checkpoint reads) is rewritten atomically only after a checkpoint is
    complete, so a kill during a write leaves the previous checkpoint the latest."""

    def __init__(self, checkpoint, directory, keep):
        self.checkpoint, self.directory, self.keep = checkpoint, directory, keep
        checkpoint.save_counter  # noqa: B018  created now, so `write` saves it and restores match

    def latest(self):
        return tf.train.latest_checkpoint(self.directory)

    def save(self, step) -> str:
        name = f"ckpt-{step}"
        self.checkpoint.write(os.path.join(self.directory, name))
        _kill_point("checkpoint_written", step)
        state = tf.train.get_checkpoint_state(self.directory)
        old = [os.path.basename(p) for p in (state.all_model_checkpoint_paths if state else [])]
        kept = [p for p in old if p != name][-(self.keep - 1):] if self.keep > 1 else []
        tf.compat.v1.train.update_checkpoint_state(self.directory, name, kept + [name])
        for gone in set(old) - set(kept) - {name}:
            for f in tf.io.gfile.glob(os.path.join(self.directory, gone) + ".*"):
                tf.io.gfile.remove(f)
        return os.path.join(self.directory, name)


class _Engine:
    """State shared by the callbacks of one `train` call."""

    def __init__(self, model, checkpoint, run, evaluate_fn, export_best_fn, chief, write_dir):
        self.model, self.run, self.evaluate_fn = model, run, evaluate_fn
        self.export_best_fn = export_best_fn
        self.chief, self.write_dir = chief, write_dir
        self.files = _CheckpointFiles(checkpoint, write_dir, run.keep_checkpoint_max)
        self.writer = tf.summary.create_file_writer(os.path.join(write_dir, "eval"))
        self.history = []
        self.best = self._load_best()
        self.last_saved_step = self.step()
        self.failed = False

    def step(self):
        """Optimizer updates so far (with gradient accumulation, one per N micro-batches)."""
        return int(self.model.optimizer.iterations.numpy())

    def latest_checkpoint(self):
        return tf.train.latest_checkpoint(self.run.output_dir)

    def _best_path(self):
        return os.path.join(self.run.output_dir, "best_trial.json")

    def _load_best(self):
        if os.path.exists(self._best_path()):
            with open(self._best_path(), encoding="utf-8") as f:
                return json.load(f)
        return None

    def _previous_history(self):
        path = os.path.join(self.run.output_dir, EVAL_HISTORY)
        if not os.path.exists(path):
            return []
        with open(path, encoding="utf-8") as f:
            return [h for h in json.load(f) if h["global_step"] < self.history[-1]["global_step"]]

    def evaluated_steps(self):
        """Steps already evaluated, by this run or before a restart."""
        path = os.path.join(self.run.output_dir, EVAL_HISTORY)
        if not os.path.exists(path):
            return set()
        with open(path, encoding="utf-8") as f:
            return {h["global_step"] for h in json.load(f)}

    def _is_better(self, value):
        if self.best is None:
            return True
        old = self.best[self.run.best_metric]
        return value > old if self.run.best_mode == "max" else value < old

    def save_and_evaluate(self):
        step = self.step()
        path = self.files.save(step)
        self.last_saved_step = step
        logging.info("saved checkpoint %s at step %d", path, step)
        _kill_point("saved", step)
        self.evaluate()

    def evaluate(self):
        """Evaluate the model at its current step: summaries, eval_results.txt, best export."""
        if self.evaluate_fn is None:
            return
        step = self.step()
        with one_step_per_call(self.model):
            results = {k: float(v) for k, v in self.evaluate_fn(self.model).items()}
        results["global_step"] = step
        self.history.append(results)
        logging.info("eval at step %d: %s", step, results)
        with self.writer.as_default(step=step), tf.summary.record_if(True):
            for k, v in results.items():
                if k != "global_step":
                    tf.summary.scalar(k, v)
        self.writer.flush()
        if not self.chief:
            return
        append_results(self.run.output_dir, results)
        write_text_atomic(os.path.join(self.run.output_dir, EVAL_HISTORY),
                          json.dumps(self._previous_history() + [results], indent=1))
        metric = self.run.best_metric
        if metric is not None:
            if metric not in results:
                raise ValueError(f"best metric {metric!r} is not among the eval results {sorted(results)}")
            if self._is_better(results[metric]):
                self.best = dict(results)
                export = self.export_best_fn or _export_tf1
                export(self.model, os.path.join(self.run.output_dir, BEST_CHECKPOINT), step)
                write_text_atomic(self._best_path(), json.dumps(self.best, indent=1, sort_keys=True))
                write_text_atomic(os.path.join(self.run.output_dir, "best_trial.txt"),
                                   format_results(self.best))
                logging.info("new best %s = %s at step %d", metric, results[metric], step)


def _export_tf1(model, path, step):
    from albert_tf.formats.tf1 import save_original_checkpoint
    save_original_checkpoint(model, path, global_step=step)
