"""The paper's fine-tuning recipes: Google's published per-task hyperparameters as `--recipe=<task>`
on the drivers. Flags given on the command line win; every value is logged with where it came
from. Sources (docs/training.md has the table and the disagreements between them):

- the ALBERT paper, arXiv 1909.11942 v6 (ICLR 2020), Appendix A.4, Table 14: learning rate,
  batch size, ALBERT dropout, classifier dropout, training and warmup steps, sequence length;
- Google's run_glue.sh (google-research/ALBERT): checkpoint frequency of the GLUE tasks (its
  other values equal Table 14's);
- Google's README: `race_v2` (its line 46: for the v2 models RACE used lr 1e-5 and ALBERT
  dropout 0, "the original (v1) RACE hyperparameter will cause model divergence for v2 models").

>>> RECIPES["mnli"].learning_rate, RECIPES["mnli"].train_batch_size, RECIPES["mnli"].train_step
(3e-05, 128, 10000)
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from absl import logging

from albert_tf.core.errors import InputError
from albert_tf.engine.validation import scaled_warmup

PAPER = "ALBERT paper (arXiv 1909.11942 v6) Table 14"


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One task's hyperparameters, in the drivers' flag names."""

    driver: str  # the driver it is for
    learning_rate: float
    train_batch_size: int
    albert_dropout_prob: float  # the paper's "ALBERT DR": the encoder's dropout
    dropout_prob: float  # the paper's "Classifier DR"
    train_step: int
    warmup_step: int
    max_seq_length: int
    save_checkpoints_steps: Optional[int] = None
    version_2_with_negative: Optional[bool] = None
    source: str = PAPER


def _glue(lr, bsz, albert_dr, ts, ws, every=100):
    return Recipe(
        "run_classifier.py",
        lr,
        bsz,
        albert_dr,
        0.1,
        ts,
        ws,
        512,
        every,
        source=PAPER + "; save_checkpoints_steps from Google's run_glue.sh",
    )


RECIPES = {
    "cola": _glue(1e-5, 16, 0.0, 5336, 320),
    "sts-b": _glue(2e-5, 16, 0.0, 3598, 214),
    "sst-2": _glue(1e-5, 32, 0.0, 20935, 1256),
    "mnli": _glue(3e-5, 128, 0.0, 10000, 1000),
    "qnli": _glue(1e-5, 32, 0.0, 33112, 1986, every=200),
    "qqp": _glue(5e-5, 128, 0.1, 14000, 1000),
    "rte": _glue(3e-5, 32, 0.1, 800, 200),
    "mrpc": _glue(2e-5, 32, 0.0, 800, 200),
    "wnli": Recipe("run_classifier.py", 2e-5, 16, 0.1, 0.1, 2000, 250, 512),
    "squad_v1": Recipe(
        "run_squad.py", 5e-5, 48, 0.0, 0.1, 3649, 365, 384, version_2_with_negative=False
    ),
    "squad_v2": Recipe(
        "run_squad.py", 3e-5, 48, 0.0, 0.1, 8144, 814, 512, version_2_with_negative=True
    ),
    "race": Recipe("run_race.py", 2e-5, 32, 0.1, 0.1, 12000, 1000, 512, 100),
    "race_v2": Recipe(
        "run_race.py",
        1e-5,
        32,
        0.0,
        0.1,
        12000,
        1000,
        512,
        100,
        source="Google's README (RACE with the v2 models); the rest Table 14",
    ),
}
GLUE_TASKS = {name for name, r in RECIPES.items() if r.driver == "run_classifier.py"}


def recipe_for(name: str, driver: str, task_name: Optional[str] = None) -> Recipe:
    """The recipe `name` for `driver`; InputError (one line) for an unknown name, another
    driver's recipe, or a GLUE recipe on another GLUE task (a custom task may take any)."""
    key = name.strip().lower()
    if key not in RECIPES:
        raise InputError(f"--recipe={name}: unknown; use one of {', '.join(sorted(RECIPES))}")
    recipe = RECIPES[key]
    if recipe.driver != driver:
        mine = sorted(k for k, r in RECIPES.items() if r.driver == driver)
        hint = f"use one of {', '.join(mine)}" if mine else "the paper publishes none for it"
        raise InputError(f"--recipe={name} is for {recipe.driver}, not {driver}; {hint}")
    task = (task_name or "").strip().lower()
    if task in GLUE_TASKS and task != key:
        raise InputError(
            f"--recipe={name} is the recipe of {key.upper()}, not of "
            f"--task_name={task_name}; use --recipe={task} (or a custom task)"
        )
    return recipe


def _fit_recipe_warmup(FLAGS, recipe, chosen):
    """A recipe's warmup longer than a run the user shortened keeps its share of the run."""
    warmup = chosen.get("warmup_step")
    train = FLAGS["train_step"].value if "train_step" in FLAGS else None
    if warmup is None or warmup[1] != "recipe" or train is None or warmup[0] <= train:
        return
    value = scaled_warmup(warmup[0], recipe.train_step or train, train)
    FLAGS["warmup_step"].value = value
    chosen["warmup_step"] = (value, f"recipe's {warmup[0]} scaled to --train_step={train}")


def apply_recipe(FLAGS, driver: str) -> dict:
    """Set the flags of --recipe that the command line did not give; returns {flag: (value,
    origin)} of every recipe flag, origin "recipe" or "command line", and logs it."""
    if not getattr(FLAGS, "recipe", None):
        return {}
    recipe = recipe_for(
        FLAGS.recipe, driver, FLAGS["task_name"].value if "task_name" in FLAGS else None
    )
    chosen = {}
    for field in dataclasses.fields(recipe):
        value = getattr(recipe, field.name)
        if field.name in ("driver", "source") or value is None or field.name not in FLAGS:
            continue
        if FLAGS[field.name].present:
            chosen[field.name] = (FLAGS[field.name].value, "command line")
        else:
            FLAGS[field.name].value = value
            chosen[field.name] = (value, "recipe")
    _fit_recipe_warmup(FLAGS, recipe, chosen)
    logging.info(
        "--recipe=%s (%s): %s",
        FLAGS.recipe,
        recipe.source,
        ", ".join(f"--{k}={v} ({o})" for k, (v, o) in chosen.items()),
    )
    return chosen
