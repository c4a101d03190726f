"""Shared pieces of the deployment tests: the tiny model's config and tokenizers, random
features shaped as a LiteRT file's inputs, a tiny classifier fitted to the SST-2 sample, and
running the Task Library in its venv."""

import json
import pathlib
import subprocess

import numpy as np
from repo_paths import DATA, FIXTURES

from albert_tf import AlbertConfig

RUNNER = pathlib.Path(__file__).resolve().parent / "tasklib_runner.py"
CONFIG = AlbertConfig.from_json_file(FIXTURES / "albert_tiny" / "albert_config.json")
SPM = FIXTURES / "spm.model"
WORDPIECE_VOCAB = FIXTURES / "albert_zh" / "vocab.txt"
# ops that would mean variables survived the conversion (the Task Library never initialises)
RESOURCE_OPS = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")
FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")


def random_features(shapes: dict, seed=0) -> dict:
    """int32 features for a file's {input: shape}: random ids, the last positions padding,
    the second half segment 1, p_mask on the first positions."""
    rng = np.random.default_rng(seed)
    length = shapes["input_ids"][-1]
    feats = {name: np.zeros(shape, np.int32) for name, shape in shapes.items()}
    feats["input_ids"] = rng.integers(5, CONFIG.vocab_size, shapes["input_ids"]).astype(np.int32)
    feats["input_ids"][..., length - 3 :] = 0
    feats["input_mask"][..., : length - 3] = 1
    feats["segment_ids"][..., length // 2 : length - 3] = 1
    if "p_mask" in feats:
        feats["p_mask"][..., :3] = 1
    return feats


def attention_score_dtypes(path, heads: int, length: int) -> list:
    """The dtypes of a LiteRT file's attention scores plus mask (one per block application):
    the `.../attention_group.../add` tensors of shape [..., heads, length, length]."""
    from ai_edge_litert.interpreter import Interpreter

    return [
        np.dtype(d["dtype"]).name
        for d in Interpreter(model_path=str(path)).get_tensor_details()
        if d["name"].endswith("/add")
        and "attention_group" in d["name"]
        and list(d["shape"])[-3:] == [heads, length, length]
    ]


def run_tasklib(python, client, model_path, inputs, tmp_path):
    """(return code, JSON output) of tasklib_runner.py on a model in the Task Library venv."""
    path = tmp_path / f"inputs-{len(list(tmp_path.iterdir()))}.json"
    path.write_text(json.dumps(inputs), encoding="utf-8")
    r = subprocess.run(
        [python, str(RUNNER), client, str(model_path), str(path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        return r.returncode, json.loads(r.stdout)
    except json.JSONDecodeError:
        return r.returncode, {"error": r.stderr[-2000:]}


def sst2_sample_features(length: int):
    """The SST-2 sample's 50 training sentences as [50, length] features (SentencePiece, the
    tiny model's tokenizer; [CLS] text [SEP], padded) and their 0/1 labels."""
    from albert_tf import TextEncoder

    encoder = TextEncoder.from_files(spm_model_file=FIXTURES / "albert_tiny" / "30k-clean.model")
    lines = (DATA / "SST-2" / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    rows = [line.split("\t") for line in lines]
    feats = {name: np.zeros((len(rows), length), np.int32) for name in FEATURE_NAMES}
    for i, (text, _) in enumerate(rows):
        ids = [encoder.cls_id, *encoder.ids(text)[: length - 2], encoder.sep_id]
        feats["input_ids"][i, : len(ids)] = ids
        feats["input_mask"][i, : len(ids)] = 1
    return feats, np.array([int(label) for _, label in rows])


def fit_classifier(feats, labels, steps: int, learning_rate=1e-3, seed=0):
    """The tiny fixture model (its pretrained checkpoint) fine-tuned with Adam on the whole
    set each step: a classifier that has learned its data."""
    import keras
    import tensorflow as tf

    import albert_tf

    y = tf.constant(labels)
    loss = lambda outputs, _: tf.reduce_mean(
        keras.losses.sparse_categorical_crossentropy(y, outputs["probabilities"])
    )
    build = lambda: albert_tf.AlbertClassifier(CONFIG, int(labels.max()) + 1)
    checkpoint = str(FIXTURES / "albert_tiny" / "model.ckpt-best")
    return fit_model(build, feats, loss, steps, checkpoint, learning_rate, seed)


def fit_model(build, feats, loss, steps: int, checkpoint, learning_rate=1e-3, seed=0):
    """`build()`'s model from a Google checkpoint (or from the encoder of a model given in its
    place), fitted with Adam on the whole set `feats` each step to `loss(outputs, features)`."""
    import keras
    import tensorflow as tf

    import albert_tf

    keras.utils.set_random_seed(seed)
    model = build()
    if isinstance(checkpoint, keras.Model):
        model({k: v[:1] for k, v in feats.items()})
        model.albert.set_weights(checkpoint.albert.get_weights())
    else:
        albert_tf.load_original_checkpoint(model, checkpoint)
    optimizer = keras.optimizers.Adam(learning_rate)
    x = {k: tf.constant(v) for k, v in feats.items()}

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            value = loss(model(x, training=True), x)
        optimizer.apply(tape.gradient(value, model.trainable_variables), model.trainable_variables)

    for _ in range(steps):
        step()
    return model
