"""The TFLite Task Library itself (tflite-support 0.4.4 in its own venv, .ci/tasklib_env.sh) on
albert_tf's LiteRT files: BertNLClassifier takes raw text and returns the Keras model's
probabilities under the label names, on Google's ids; BertQuestionAnswerer answers as the Keras
model's logits say; a dynamic-range int8 file is refused (its FULLY_CONNECTED version is newer
than the library's runtime) while a full int8 file runs."""

from deploy_helpers import CONFIG, SPM, random_features, run_tasklib
import numpy as np
import pytest
import sentencepiece as spm
from task_library_inputs import classifier_inputs, qa_answers, qa_inputs

import albert_tf
from albert_tf import AlbertConfig, export_litert
from albert_tf.core import fileio
from albert_tf.deploy.spm_normalizer import preprocessing_model
from albert_tf.text.encoding import TextEncoder

LABELS = ["negative", "neutral", "positive"]
LENGTH = 24
TEXTS = [
    "a charming and often affecting journey",
    "Hello, World!  Tabs\tand CAPITALS",
    "the movie was dull.",
]


def _embedded_processor():
    """The SentencePiece model export_litert puts in the metadata (Google's preprocessing in its
    normalizer), as the Task Library's tokenizer loads it."""
    sp = spm.SentencePieceProcessor()
    sp.LoadFromSerializedProto(preprocessing_model(fileio.read_bytes(str(SPM))))
    return sp


@pytest.fixture(scope="module")
def classifier_file(tmp_path_factory):
    model = albert_tf.AlbertClassifier(CONFIG, len(LABELS))
    path = tmp_path_factory.mktemp("tasklib") / "classifier.tflite"
    out = export_litert(model, path, max_seq_length=LENGTH, spm_model_file=str(SPM), labels=LABELS)
    assert out.task_library == "BertNLClassifier"
    return model, path


def test_classifier_gives_keras_probabilities_on_googles_ids(
    classifier_file, tasklib_python, tmp_path
):
    model, path = classifier_file
    code, out = run_tasklib(tasklib_python, "classifier", path, TEXTS, tmp_path)
    assert code == 0, out
    sp = _embedded_processor()
    encoder = TextEncoder.from_files(spm_model_file=str(SPM))
    for text, result in zip(TEXTS, out["results"]):
        feats = classifier_inputs(sp, text, LENGTH)
        # the embedded model's normalizer gives Google's ids (lowercase, spaces, accents)
        n = int(feats["input_mask"].sum())
        assert feats["input_ids"][0, 1 : n - 1].tolist() == encoder.ids(text)[: LENGTH - 2]
        want = model(feats, training=False)["probabilities"].numpy()[0]
        got = {c["name"]: c["score"] for c in result["categories"]}
        assert sorted(got) == sorted(LABELS)
        np.testing.assert_allclose([got[name] for name in LABELS], want, atol=1e-5)


def test_question_answerer_answers_as_the_keras_logits_say(tasklib_python, tmp_path):
    config = AlbertConfig.from_dict({**CONFIG.to_dict(), "max_position_embeddings": 384})
    model = albert_tf.AlbertSquadV1(config)
    qa = qa_inputs(_embedded_processor(), "x", "y")
    model(qa.features)  # built
    # start logits = end logits: the best starts are the best ends, so untrained weights still
    # give one-word answers (on a context that fills the window)
    head = next(v for v in model.weights if v.path.endswith("output_weights"))
    bias = next(v for v in model.weights if v.path.endswith("output_bias"))
    head.assign(np.stack([head.numpy()[0]] * 2))
    bias.assign([bias.numpy()[0]] * 2)
    out = export_litert(model, tmp_path / "qa.tflite", max_seq_length=384, spm_model_file=str(SPM))
    assert out.task_library == "BertQuestionAnswerer"
    items = [
        {
            "context": " ".join(["The model was released by Google in 2019."] * 40),
            "question": "Who released the model?",
        }
    ]
    code, got = run_tasklib(tasklib_python, "question_answerer", out.path, items, tmp_path)
    assert code == 0, got
    qa = qa_inputs(_embedded_processor(), items[0]["context"], items[0]["question"])
    logits = model(qa.features, training=False)
    want = qa_answers(qa, logits["start_logits"].numpy(), logits["end_logits"].numpy())
    answers = got["results"][0]["answers"]
    assert [a["text"] for a in answers] == [w["text"] for w in want] and answers
    np.testing.assert_allclose([a["logit"] for a in answers], [w["logit"] for w in want], atol=1e-4)


def test_int8_files_the_library_runs_and_the_one_it_refuses(tasklib_python, tmp_path):
    model = albert_tf.AlbertClassifier(CONFIG, len(LABELS))
    shapes = {name: [1, LENGTH] for name in ("input_ids", "input_mask", "segment_ids")}
    calibration = [random_features(shapes, seed) for seed in range(4)]
    common = dict(max_seq_length=LENGTH, spm_model_file=str(SPM), labels=LABELS)
    full = export_litert(
        model,
        tmp_path / "int8.tflite",
        quantize="int8",
        representative_dataset=calibration,
        **common,
    )
    code, out = run_tasklib(tasklib_python, "classifier", full.path, TEXTS[:1], tmp_path)
    assert code == 0, out
    assert sorted(c["name"] for c in out["results"][0]["categories"]) == sorted(LABELS)
    dynamic = export_litert(model, tmp_path / "dyn.tflite", quantize="dynamic_int8", **common)
    code, out = run_tasklib(tasklib_python, "classifier", dynamic.path, TEXTS[:1], tmp_path)
    # documented in docs/deployment.md: ai-edge-litert runs this file, the 2023 runtime not
    assert code == 2 and out["stage"] == "create" and "FULLY_CONNECTED" in out["error"]
