"""Writes google_trajectories.npz: twelve training steps of Google's own ALBERT code from the
tiny checkpoint (the reference of tests/engine/test_trajectories.py).

Run outside the repository's tests, from this folder, with Google's ALBERT code unpacked and the
TF1 shim of the project's shared tools:

    pip download --no-deps albert-tensorflow==1.1
    python -m zipfile -e albert_tensorflow-1.1-py3-none-any.whl orig/
    ALBERT_ORIG_ROOT=orig PYTHONPATH=<shared>/tools python make_google_trajectories.py

Two runs on the fixed batch of ../fixtures/albert_tiny_reference.npz (dropout 0 in the tiny
config), each twelve steps of Google's `optimization.create_optimizer` (its warmup + linear
decay schedule, global-norm clipping at 1.0, Google's exclusion lists):

* `lamb/`: pretraining, `modeling.AlbertModel` with run_pretraining's
  `get_masked_lm_output` + `get_sentence_order_output` (loss MLM + SOP), `optimizer="lamb"`.
* `adamw/`: run_classifier's `classifier_utils.create_model` (3 labels; `is_training=False`,
  which only drops its hard-coded 0.1 dropout on the pooled output) on the tiny config with
  `num_hidden_groups=2`, both groups filled from the checkpoint's group 0, the head's initial
  weights the fixed values saved as `adamw/init/...`; `optimizer="adamw"`. run_classifier
  loads with `modeling.get_assignment_map_from_checkpoint(tvars, ckpt)`, which leaves group 1
  unset; its `num_of_group` argument (run_pretraining's `--init_from_group0`) cannot fill it
  either: every variable name holds `/attention_1/` or `/ffn_1/`, so it files group 0's
  variables under group 1's map too, where group 1's overwrite them, and group 0's attention
  and FFN weights keep their random initializers. So group 1 is filled here by a second
  `tf.train.init_from_checkpoint` from group 0's names, after Google's map has loaded the rest.

Per step it records the loss the step trained on; after the twelfth, a few weights by
Google's names. As the shim's README says, the global-step increment gets a control dependency
on the update, so each update uses the documented schedule's rate for its own step.
"""

import json

import numpy as np
import tensorflow.compat.v1 as tf
import tf1_shim  # sets TF1 behaviour (graphs, sessions) and imports Google's modules

modeling, optimization, run_pretraining, classifier_utils = tf1_shim.import_original(
    ["modeling", "optimization", "run_pretraining", "classifier_utils"]
)

CKPT = "../fixtures/albert_tiny/model.ckpt-best"
CONFIG = "../fixtures/albert_tiny/albert_config.json"
BATCH = dict(np.load("../fixtures/albert_tiny_reference.npz"))
STEPS, WARMUP = 12, 3
RUNS = {"lamb": dict(lr=1e-2, groups=1), "adamw": dict(lr=1e-3, groups=2)}
CLASSIFIER_LABELS = np.array([0, 2, 1, 2], "int32")
KEEP = {
    "lamb": [
        "bert/embeddings/word_embeddings",
        "bert/encoder/transformer/group_0/inner_group_0/attention_1/self/query/kernel",
        "bert/pooler/dense/kernel",
        "cls/predictions/output_bias",
        "cls/predictions/transform/LayerNorm/gamma",
        "cls/seq_relationship/output_weights",
    ],
    "adamw": [
        "bert/embeddings/word_embeddings",
        "bert/encoder/transformer/group_0/inner_group_0/ffn_1/intermediate/dense/kernel",
        "bert/encoder/transformer/group_1/inner_group_0/ffn_1/intermediate/dense/kernel",
        "bert/encoder/transformer/group_1/inner_group_0/LayerNorm_1/beta",
        "output_weights",
        "output_bias",
    ],
}


class _OrderedTf:
    """`tf` for Google's optimization module, whose `tf.group(update, [increment])` gets the
    increment after the update (see the module docstring)."""

    def __getattr__(self, name):
        return getattr(tf, name)

    def group(self, *inputs, **kwargs):
        if kwargs or len(inputs) != 2 or not isinstance(inputs[1], list):
            return tf.group(*inputs, **kwargs)  # the optimizers' own groups
        update = inputs[0]  # inputs[1]: the unordered increment, built but never run
        with tf.control_dependencies([update]):
            step = tf.train.get_or_create_global_step()
            return tf.group(update, step.assign_add(1))


optimization.tf = _OrderedTf()


def albert_config(groups):
    with open(CONFIG) as f:
        config = json.load(f)
    config["num_hidden_groups"] = groups
    return modeling.AlbertConfig.from_dict(config)


def build(kind, config):
    ids, mask, segments = (
        tf.constant(BATCH[k]) for k in ("input_ids", "input_mask", "segment_ids")
    )
    if kind == "adamw":
        loss = classifier_utils.create_model(
            config, False, ids, mask, segments, tf.constant(CLASSIFIER_LABELS), 3, False, "mnli"
        )[0]
        return loss
    model = modeling.AlbertModel(
        config=config,
        is_training=True,
        input_ids=ids,
        input_mask=mask,
        token_type_ids=segments,
        use_one_hot_embeddings=False,
    )
    mlm = run_pretraining.get_masked_lm_output(
        config,
        model.get_sequence_output(),
        model.get_embedding_table(),
        tf.constant(BATCH["masked_lm_positions"]),
        tf.constant(BATCH["masked_lm_ids"]),
        tf.constant(BATCH["masked_lm_weights"]),
    )[0]
    sop = run_pretraining.get_sentence_order_output(
        config, model.get_pooled_output(), tf.constant(BATCH["sentence_order_labels"])
    )[0]
    return mlm + sop


def run(kind, lr, groups, seed):
    config = albert_config(groups)
    rng = np.random.default_rng(seed)
    head_init = {
        "output_weights": (0.02 * rng.normal(size=(3, 32))).astype("float32"),
        "output_bias": (0.01 * rng.normal(size=(3,))).astype("float32"),
    }
    graph = tf.Graph()
    with graph.as_default():
        loss = build(kind, config)
        tvars = tf.trainable_variables()
        assignment, _ = modeling.get_assignment_map_from_checkpoint(tvars, CKPT)
        tf.train.init_from_checkpoint(CKPT, assignment)
        for gid in range(1, groups):  # filled from group 0 (see the module docstring)
            scope = f"/group_{gid}/"
            tf.train.init_from_checkpoint(
                CKPT,
                {v.op.name.replace(scope, "/group_0/"): v for v in tvars if scope in v.op.name},
            )
        train = optimization.create_optimizer(loss, lr, STEPS, WARMUP, False, optimizer=kind)
        by_name = {v.op.name: v for v in tvars}
        with tf.Session(graph=graph) as sess:
            sess.run(tf.global_variables_initializer())
            out = {}
            if kind == "adamw":
                for name, value in head_init.items():
                    by_name[name].load(value, sess)
                    out[f"{kind}/init/{name}"] = value
            losses = [sess.run([loss, train])[0] for _ in range(STEPS)]
            assert sess.run(tf.train.get_global_step()) == STEPS
            out[f"{kind}/loss"] = np.array(losses, "float32")
            for name in KEEP[kind]:
                out[f"{kind}/final/{name}"] = sess.run(by_name[name])
    return out


def main():
    arrays = {}
    for seed, (kind, args) in enumerate(RUNS.items()):
        arrays.update(run(kind, seed=seed, **args))
        print(kind, "losses:", arrays[f"{kind}/loss"])
    np.savez_compressed("google_trajectories.npz", **arrays)
    print("wrote google_trajectories.npz:", sorted(arrays))


if __name__ == "__main__":
    main()
