"""export_litert: every task model's LiteRT file equals Keras (float32 to 1e-5, quantized within
measured tolerances), built-in ops only and no variables left, the Task Library metadata reads
back, ram:// paths, Keras text models, and one clear error per bad argument."""

import re

from deploy_helpers import CONFIG, RESOURCE_OPS, SPM, random_features
import numpy as np
import pytest

import albert_tf
from albert_tf import AlbertConfig, export_litert, load_litert
from albert_tf.core import fileio
from albert_tf.deploy.quantization import compare_outputs
from albert_tf.deploy.spm_normalizer import preprocessing_model
from albert_tf.deploy.tflite_metadata import AssociatedFileType, SentencePieceTokenizerOptions
from albert_tf.deploy.tflite_model import read_metadata

MODELS = {
    "classifier": lambda: albert_tf.AlbertClassifier(CONFIG, 3),
    "multi_label": lambda: albert_tf.AlbertClassifier(CONFIG, 4, multi_label=True),
    "regression": lambda: albert_tf.AlbertClassifier(CONFIG, 1, is_regression=True),
    "token_classifier": lambda: albert_tf.AlbertTokenClassifier(CONFIG, 5),
    "multiple_choice": lambda: albert_tf.AlbertMultipleChoice(CONFIG, num_choices=3),
    "squad_v1": lambda: albert_tf.AlbertSquadV1(CONFIG),
    "squad_v2": lambda: albert_tf.AlbertSquadV2(CONFIG, start_n_top=2, end_n_top=3),
    "encoder": lambda: albert_tf.AlbertModel(CONFIG),
}
LENGTH = 16
SHAPES = {name: [1, LENGTH] for name in ("input_ids", "input_mask", "segment_ids")}


def _assert_equal_to_keras(lite, model, atol, seed=0):
    feats = random_features(lite.input_shapes, seed)
    got = lite(**feats)
    want = model(feats, training=False)
    for name, value in got.items():
        np.testing.assert_allclose(
            value.reshape(-1), np.asarray(want[name]).reshape(-1), atol=atol, err_msg=name
        )
    return got


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_every_kind_equals_keras_with_builtin_ops_only(kind, tmp_path):
    model = MODELS[kind]()
    out = export_litert(model, tmp_path / "m.tflite", max_seq_length=LENGTH)
    assert out.kind == kind and out.size == (tmp_path / "m.tflite").stat().st_size
    # built-in ops only (nothing for the Flex delegate) and no variables left to initialise
    assert [op for op in out.operators if op.startswith("CUSTOM") or op in RESOURCE_OPS] == []
    lite = load_litert(out.path)
    assert all(shape[0] == 1 and shape[-1] == LENGTH for shape in lite.input_shapes.values())
    _assert_equal_to_keras(lite, model, atol=1e-5)


# measured on this model (docs/deployment.md): largest output change vs float32 Keras
QUANTIZED_TOLERANCE = {"float16": 1e-4, "dynamic_int8": 2e-3, "int8": 2e-2}


@pytest.fixture(scope="module")
def checkpoint_classifier(tmp_path_factory):
    """(the tiny checkpoint's 3-label classifier, the size of its float32 file): one model and
    one float conversion for every quantization mode's test."""
    model = albert_tf.AlbertClassifier(CONFIG, 3)
    albert_tf.load_original_checkpoint(model, str(SPM.parent / "albert_tiny" / "model.ckpt-best"))
    path = tmp_path_factory.mktemp("float") / "f.tflite"
    return model, export_litert(model, path, max_seq_length=LENGTH).size


@pytest.mark.filterwarnings("ignore:.*tf.lite.Interpreter is deprecated")
@pytest.mark.parametrize("quantize", sorted(QUANTIZED_TOLERANCE))
def test_quantized_classifier_within_measured_tolerance(quantize, checkpoint_classifier, tmp_path):
    model, float_size = checkpoint_classifier
    calibration = [random_features(SHAPES, seed) for seed in range(8)]
    out = export_litert(
        model,
        tmp_path / "q.tflite",
        max_seq_length=LENGTH,
        quantize=quantize,
        representative_dataset=calibration,
    )
    assert out.size < float_size
    lite = load_litert(out.path)
    feats = random_features(lite.input_shapes, seed=99)
    got, want = lite(**feats), {k: np.asarray(v) for k, v in model(feats).items()}
    report = compare_outputs("classifier", want, got, feats["input_mask"])
    assert report["max_abs_difference"] <= QUANTIZED_TOLERANCE[quantize], report
    if quantize == "int8":
        assert "QUANTIZE" in out.operators and "DEQUANTIZE" in out.operators


def test_task_library_metadata_reads_back(tmp_path):
    model = albert_tf.AlbertClassifier(CONFIG, 2)
    out = export_litert(
        model,
        tmp_path / "c.tflite",
        max_seq_length=LENGTH,
        spm_model_file=SPM,
        labels=["no", "yes"],
    )
    assert out.task_library == "BertNLClassifier" and list(out.outputs) == ["probabilities"]
    metadata, files = read_metadata(fileio.read_bytes(out.path))
    subgraph = metadata.subgraph_metadata[0]
    assert sorted(t.name for t in subgraph.input_tensor_metadata) == ["ids", "mask", "segment_ids"]
    (output,) = subgraph.output_tensor_metadata
    assert output.associated_files[0].type == AssociatedFileType.TENSOR_AXIS_LABELS
    assert files["labels.txt"] == b"no\nyes\n"
    (unit,) = subgraph.input_process_units
    assert isinstance(unit, SentencePieceTokenizerOptions)
    # the SentencePiece model inside does Google's preprocessing itself
    model_file = unit.sentencepiece_model[0].name
    assert files[model_file] == preprocessing_model(fileio.read_bytes(SPM))
    assert metadata.min_parser_version == "1.1.0"
    never = export_litert(
        model, tmp_path / "n.tflite", max_seq_length=LENGTH, spm_model_file=SPM, task_library=False
    )
    assert never.task_library is None and read_metadata(fileio.read_bytes(never.path))[0] is None


def test_squad_v1_at_384_gets_question_answerer_metadata(tmp_path):
    config = AlbertConfig.from_dict({**CONFIG.to_dict(), "max_position_embeddings": 384})
    out = export_litert(
        albert_tf.AlbertSquadV1(config),
        tmp_path / "qa.tflite",
        max_seq_length=384,
        spm_model_file=SPM,
    )
    assert out.task_library == "BertQuestionAnswerer"
    metadata, _ = read_metadata(fileio.read_bytes(out.path))
    names = {t.name for t in metadata.subgraph_metadata[0].output_tensor_metadata}
    assert names == {"start_logits", "end_logits"}
    short = export_litert(
        albert_tf.AlbertSquadV1(CONFIG),
        tmp_path / "s.tflite",
        max_seq_length=64,
        spm_model_file=SPM,
    )
    assert short.task_library is None and "384" in short.note


def test_ram_paths_and_keras_text_models(fixtures_dir, ram_bucket):
    """A Keras text model brings its own tokenizer; the file lands on ram:// atomically."""
    model = albert_tf.AlbertTextClassifier.from_pretrained(
        fixtures_dir / "albert_tiny", num_labels=2, sequence_length=LENGTH
    )
    path = f"{ram_bucket}/deploy/model.tflite"
    out = export_litert(model, path, max_seq_length=LENGTH, labels=["neg", "pos"])
    assert out.task_library == "BertNLClassifier" and fileio.exists(path)
    assert [n for n in fileio.listdir(f"{ram_bucket}/deploy")] == ["model.tflite"]
    lite = load_litert(path)
    texts = ["a fine film", "Hello, World!"]
    features = model.preprocessor(np.array(texts))
    got = lite.run({k: np.asarray(v) for k, v in features.items()})["probabilities"]
    np.testing.assert_allclose(got, model.predict(texts, verbose=0)["probabilities"], atol=1e-5)


def _quantized_keras_model():
    model = albert_tf.AlbertClassifier(CONFIG, 2)
    model.quantize("int8")
    return model


CONFIG_FILE = SPM.parent / "albert_tiny" / "albert_config.json"


def _rows(length, token=7):
    """One calibration example of `length` positions, every id `token`."""
    ids = np.full(length, token, np.int32)
    return {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": 0 * ids}


BAD_ARGUMENTS = [
    (lambda: albert_tf.AlbertPretrainer(CONFIG), {}, "model: a AlbertPretrainer"),
    (_quantized_keras_model, {}, "model: it was quantized with Keras"),
    (MODELS["classifier"], {"max_seq_length": 65}, "max_seq_length=65"),
    (MODELS["classifier"], {"quantize": "int4"}, "quantize='int4'"),
    (MODELS["classifier"], {"quantize": "int8"}, "representative_dataset"),
    (MODELS["classifier"], {"labels": ["a", "b"]}, "labels: 2 names"),
    (MODELS["encoder"], {"labels": ["a"]}, "labels: a encoder"),
    (MODELS["encoder"], {"task_library": True, "spm_model_file": SPM}, "task_library=True"),
    (MODELS["classifier"], {"task_library": "yes"}, "task_library='yes'"),
    (MODELS["squad_v1"], {"text_input": True, "spm_model_file": SPM}, "text_input: a squad_v1"),
    (MODELS["classifier"], {"text_input": True}, "text_input: give spm_model_file"),
    (
        MODELS["classifier"],
        {"spm_model_file": SPM, "vocab_file": SPM},
        "spm_model_file, vocab_file",
    ),
    (
        MODELS["classifier"],
        {"quantize": "int8", "text_input": True, "representative_dataset": [{}]},
        "quantize='int8' with text_input",
    ),
    (
        MODELS["classifier"],
        {"quantize": "int8", "representative_dataset": [{"input_ids": [1]}]},
        "representative_dataset: each item",
    ),
    (
        MODELS["classifier"],
        {"spm_model_file": CONFIG_FILE},
        f"spm_model_file: {CONFIG_FILE} is",
    ),
    (
        MODELS["classifier"],
        {"task_library": True, "spm_model_file": SPM, "text_pair": True},
        "task_library=True: BertNLClassifier feeds one text, and this model takes pairs",
    ),
    (
        MODELS["classifier"],
        {"quantize": "int8", "representative_dataset": [_rows(2 * LENGTH)]},
        f"representative_dataset: input_ids of shape ({2 * LENGTH},) does not fit the file's "
        f"rows of [{LENGTH}]",
    ),
    (
        MODELS["classifier"],
        {"quantize": "int8", "representative_dataset": [_rows(LENGTH, 10**6)]},
        f"representative_dataset: input_ids 1000000 is outside the model's vocabulary "
        f"[0, {CONFIG.vocab_size})",
    ),
]


@pytest.mark.filterwarnings("ignore:Layer .* does not have a `quantize` method")
@pytest.mark.parametrize("make,kwargs,message", BAD_ARGUMENTS, ids=[b[2] for b in BAD_ARGUMENTS])
def test_bad_arguments_are_one_clear_error(make, kwargs, message, tmp_path):
    kwargs = {"max_seq_length": LENGTH, **kwargs}
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        export_litert(make(), tmp_path / "bad.tflite", **kwargs)
    assert not (tmp_path / "bad.tflite").exists()


def test_a_pair_model_gets_no_one_text_metadata(tmp_path):
    """task_library='auto' on a pair model: no BertNLClassifier metadata (it feeds one text)."""
    out = export_litert(
        MODELS["classifier"](),
        tmp_path / "pair.tflite",
        max_seq_length=LENGTH,
        spm_model_file=SPM,
        text_pair=True,
    )
    assert out.task_library is None and "feeds one text" in out.note


def test_a_folder_as_the_file_to_write_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="^" + re.escape(f"path: {tmp_path} is a folder")):
        export_litert(MODELS["encoder"](), tmp_path, max_seq_length=LENGTH)
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def encoder_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("lite") / "encoder.tflite"
    export_litert(MODELS["encoder"](), path, max_seq_length=LENGTH)
    return path


def test_load_litert_says_what_the_file_is(encoder_file, tmp_path):
    """Empty, cut-off, ONNX, missing: each one error naming the path, not a struct.error."""
    import onnx

    data = encoder_file.read_bytes()
    (tmp_path / "empty.tflite").write_bytes(b"")
    (tmp_path / "cut.tflite").write_bytes(data[: len(data) // 3])
    graph = onnx.helper.make_graph([], "g", [], [])
    onnx.save(onnx.helper.make_model(graph, producer_name="pytorch"), tmp_path / "m.onnx")
    cases = {
        "empty.tflite": "an empty file, not a LiteRT model",
        "cut.tflite": "a truncated or damaged LiteRT model",
        "m.onnx": "not a LiteRT model (no TFL3 identifier; it looks like ONNX",
        "none.tflite": "no such LiteRT file",
    }
    for name, message in cases.items():
        path = tmp_path / name
        with pytest.raises(ValueError, match="^" + re.escape(f"path {path}: {message}")):
            load_litert(path)


def test_litert_model_inputs_are_checked_by_name_and_size(encoder_file):
    lite = load_litert(encoder_file)
    good = random_features(lite.input_shapes)
    bad = [
        ({**good, "input_ids": np.zeros(2 * LENGTH, np.int32)}, "input_ids: shape (32,) does not"),
        ({k: v for k, v in good.items() if k != "input_mask"}, "inputs: missing input_mask; "),
        (
            {"input_msk" if k == "input_mask" else k: v for k, v in good.items()},
            "inputs: missing input_mask; 'input_msk' is not an input (did you mean 'input_mask'?)",
        ),
    ]
    for inputs, message in bad:
        with pytest.raises(ValueError, match="^" + re.escape(message)):
            lite(**inputs)
    assert lite(**good)["pooled_output"].shape == (1, CONFIG.hidden_size)


def test_no_ai_edge_litert_says_how_to_install_it(encoder_file, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    with pytest.raises(ImportError, match="needs ai-edge-litert: pip install ai-edge-litert"):
        load_litert(encoder_file)
