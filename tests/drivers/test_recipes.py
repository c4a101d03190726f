"""--recipe: the paper's per-task hyperparameters fill the flags the command line left out;
explicit flags win; unknown or mismatched recipes are one-line errors."""

from absl import flags
import pytest

from albert_tf.core.errors import InputError
from albert_tf.drivers.recipes import RECIPES, apply_recipe, recipe_for


def _flags(argv):
    fv = flags.FlagValues()
    for name, default in (
        ("learning_rate", 5e-5),
        ("albert_dropout_prob", None),
        ("dropout_prob", 0.1),
    ):
        flags.DEFINE_float(name, default, "", flag_values=fv)
    for name, default in (
        ("train_batch_size", 32),
        ("train_step", 1000),
        ("warmup_step", 0),
        ("max_seq_length", 512),
        ("save_checkpoints_steps", 1000),
    ):
        flags.DEFINE_integer(name, default, "", flag_values=fv)
    flags.DEFINE_bool("version_2_with_negative", False, "", flag_values=fv)
    flags.DEFINE_string("recipe", None, "", flag_values=fv)
    flags.DEFINE_string("task_name", None, "", flag_values=fv)
    fv(["prog"] + argv)
    return fv


def test_recipe_fills_what_the_command_line_left_out():
    fv = _flags(["--recipe=MNLI", "--task_name=mnli", "--train_batch_size=16"])
    chosen = apply_recipe(fv, "run_classifier.py")
    assert (fv.learning_rate, fv.train_step, fv.warmup_step, fv.max_seq_length) == (
        3e-5,
        10000,
        1000,
        512,
    )
    assert fv.train_batch_size == 16 and chosen["train_batch_size"] == (16, "command line")
    assert chosen["learning_rate"] == (3e-5, "recipe") and fv.albert_dropout_prob == 0.0
    assert fv.save_checkpoints_steps == 100  # run_glue.sh's


def test_squad_v2_recipe_sets_the_version_and_race_v2_googles_readme():
    fv = _flags(["--recipe=squad_v2"])
    apply_recipe(fv, "run_squad.py")
    assert fv.version_2_with_negative and (fv.learning_rate, fv.train_step, fv.warmup_step) == (
        3e-5,
        8144,
        814,
    )
    assert (RECIPES["race"].learning_rate, RECIPES["race_v2"].learning_rate) == (2e-5, 1e-5)
    assert (RECIPES["race"].albert_dropout_prob, RECIPES["race_v2"].albert_dropout_prob) == (
        0.1,
        0.0,
    )


def test_every_recipe_is_complete_and_cited():
    assert set(RECIPES) >= {
        "cola",
        "sts-b",
        "sst-2",
        "mnli",
        "qnli",
        "qqp",
        "rte",
        "mrpc",
        "wnli",
        "squad_v1",
        "squad_v2",
        "race",
    }
    for name, r in RECIPES.items():
        assert (
            r.warmup_step < r.train_step
            and r.max_seq_length in (384, 512)
            and "Table 14" in r.source
        ), name
        assert r.driver in ("run_classifier.py", "run_squad.py", "run_race.py")


def test_bad_recipes_are_one_line_errors():
    with pytest.raises(InputError, match="unknown; use one of"):
        recipe_for("mnlii", "run_classifier.py")
    with pytest.raises(
        InputError, match="is for run_race.py, not run_squad.py; use one of squad_v1, squad_v2"
    ):
        recipe_for("race", "run_squad.py")
    with pytest.raises(InputError, match="not of --task_name=cola"):
        recipe_for("mnli", "run_classifier.py", "cola")
    assert (
        recipe_for("mnli", "run_classifier.py", "custom") is RECIPES["mnli"]
    )  # any for your own data
    with pytest.raises(InputError, match="not run_ner.py; the paper publishes none for it"):
        recipe_for("mnli", "run_ner.py")
