"""`predict` of every model class on the tiny TF1 checkpoint (random head weights, seeded),
computed in whatever Keras backend this process has, so two processes on two backends can be
compared. Run as a script it writes them: `python tests/modeling/task_outputs.py OUT.npz`."""

import sys

import numpy as np

from albert_tf import (
    AlbertClassifier,
    AlbertConfig,
    AlbertModel,
    AlbertMultipleChoice,
    AlbertSquadV1,
    AlbertSquadV2,
    AlbertTokenClassifier,
    load_original_checkpoint,
)

FEATURES = ("input_ids", "input_mask", "segment_ids")


def models(config):
    """name -> (model, extra features), one of each class and classifier kind."""
    return {
        "encoder": (AlbertModel(config), {}),
        "single": (AlbertClassifier(config, 3), {}),
        "multi_label": (AlbertClassifier(config, 4, multi_label=True), {}),
        "regression": (AlbertClassifier(config, 1, is_regression=True), {}),
        "tokens": (AlbertTokenClassifier(config, 5), {}),
        "choice": (AlbertMultipleChoice(config, num_choices=2), {}),
        "squad_v1": (AlbertSquadV1(config), {"unique_ids": np.arange(4)}),
        "squad_v2": (AlbertSquadV2(config, start_n_top=3, end_n_top=2), {"p_mask": None}),
    }


def outputs(fixtures):
    """{"<model>/<output>": array} of `predict` on the reference's four examples, and the
    encoder's outputs as called ("call/<output>")."""
    config = AlbertConfig.from_json_file(fixtures / "albert_tiny" / "albert_config.json")
    google = dict(np.load(fixtures / "albert_tiny_reference.npz"))
    features = {k: google[k].astype(np.int32) for k in FEATURES}
    found = {}
    for seed, (name, (model, extra)) in enumerate(models(config).items()):
        load_original_checkpoint(model, fixtures / "albert_tiny" / "model.ckpt-best")
        rng = np.random.default_rng(seed)
        heads = getattr(model, "original_head_variables", dict)()  # AlbertModel has none
        for variable in heads.values():
            variable.assign(rng.normal(0, 0.2, variable.shape).astype("float32"))
        inputs = dict(features)
        if name == "choice":  # two questions of two choices each
            inputs = {k: v.reshape(2, 2, -1) for k, v in features.items()}
        if "p_mask" in extra:  # the first segment and padding are no answer
            extra = {"p_mask": np.maximum(features["segment_ids"] == 0, 1 - features["input_mask"])}
            extra["p_mask"] = extra["p_mask"].astype(np.int32)
        predicted = model.predict({**inputs, **extra}, batch_size=2, verbose=0)
        for key, value in predicted.items():
            if isinstance(value, np.ndarray):
                found[f"{name}/{key}"] = value
    return found


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    from repo_paths import FIXTURES

    np.savez(sys.argv[1], **outputs(FIXTURES))
