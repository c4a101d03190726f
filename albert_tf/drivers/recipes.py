"""The paper's fine-tuning recipes: Google's published hyperparameters of each task.

The drivers take them as `--recipe=<task>`. Flags given on the command line win; every value
is logged with where it came from. Sources (docs/training.md has the table and the
disagreements between them):

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
from albert_tf.engine.warmup import scaled_warmup

PAPER = "ALBERT paper (arXiv 1909.11942 v6) Table 14"


@dataclasses.dataclass(frozen=True)
class Recipe:
    """One task's fine-tuning hyperparameters, named as the drivers' flags.

    Args:
        driver: str. The driver the recipe is for (e.g. "run_classifier.py").
        learning_rate: float. The peak learning rate.
        train_batch_size: int. The training batch size.
        albert_dropout_prob: float. The encoder's dropout (the paper's "ALBERT DR").
        dropout_prob: float. The dropout before the task head (the paper's
            "Classifier DR").
        train_step: int. The number of training steps.
        warmup_step: int. The number of linear warmup steps.
        max_seq_length: int. The sequence length, in pieces.
        save_checkpoints_steps: int or None. How often to save (and evaluate) a checkpoint;
            None leaves the flag's value. Default None.
        version_2_with_negative: bool or None. SQuAD v2.0 (True) or v1.1 (False); None for
            other tasks. Default None.
        source: str. Where the values come from. Default: the ALBERT paper's Table 14.

    Example:

    >>> from albert_tf.drivers.recipes import RECIPES
    >>> RECIPES["rte"].train_step, RECIPES["rte"].warmup_step
    (800, 200)
    """

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
    """Looks up a recipe by name, checking that it fits the driver and the task.

    Args:
        name: str. The recipe's name, case-insensitive (e.g. "mnli", "squad_v2",
            "race_v2").
        driver: str. The driver asking (e.g. "run_classifier.py").
        task_name: str or None. The driver's --task_name (GLUE): a GLUE task must take its
            own recipe; a custom task may take any GLUE recipe. Default None.

    Returns:
        Recipe. The recipe.

    Raises:
        InputError: when the name is unknown, the recipe is for another driver, or it is
            another GLUE task's recipe.

    Example:

    >>> from albert_tf.drivers.recipes import recipe_for
    >>> recipe_for("SQuAD_v2", "run_squad.py").learning_rate
    3e-05
    """
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
    """Sets the flags of --recipe that the command line did not give, and logs them.

    Args:
        FLAGS: absl.flags.FlagValues. The driver's parsed flags (with `recipe`).
        driver: str. The driver's file name (e.g. "run_classifier.py").

    Returns:
        dict. Flag name -> (value, origin) for every flag of the recipe that the driver has,
        origin being "recipe" or "command line"; empty without --recipe.

    Raises:
        InputError: when the recipe does not fit the driver or task (see `recipe_for`).
    """
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


def fit_warmup_to_run(FLAGS):
    """A default --warmup_step longer than the run is scaled down to keep its share of the
    run (one log line says so); a --warmup_step the user gave explicitly must fit.

    Args:
        FLAGS: The parsed flags (warmup_step and train_step are read, warmup_step may be set).

    Raises:
        InputError: An explicit --warmup_step exceeds --train_step.
    """
    warmup, train = FLAGS.warmup_step, FLAGS.train_step
    if train is None or warmup is None or warmup <= train:
        return
    if FLAGS["warmup_step"].present:
        raise InputError(f"--warmup_step={warmup} exceeds --train_step={train}")
    paired = FLAGS["train_step"].default or train
    FLAGS.warmup_step = scaled_warmup(warmup, paired, train)
    logging.info(
        "--warmup_step: the default %d exceeds --train_step=%d; using %d (the same share of "
        "the run; give --warmup_step to choose)",
        warmup,
        train,
        FLAGS.warmup_step,
    )
