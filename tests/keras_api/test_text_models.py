"""The Keras-native task API on raw strings (tiny model): strings through the preprocessor give
the logits of the Python feature path; fit takes lists, pandas columns and tf.data of strings;
compile() defaults to Google's AdamW schedule; `.keras` files carry the tokenizer;
from_pretrained loads Google's release folder exactly."""

import shutil

import keras
import numpy as np
import pandas as pd
import pytest
from repo_paths import DATA, FIXTURES
import tensorflow as tf

import albert_tf
from albert_tf import (
    AdamWeightDecay,
    AlbertTextClassifier,
    AlbertTextMultipleChoice,
    AlbertTextSpanExtractor,
    WarmupPolynomialDecay,
)
from albert_tf.core.errors import InputError
from albert_tf.tasks.classification.task import example_to_record
from albert_tf.tasks.glue.processors import get_processor
from albert_tf.tasks.race.data import encode_race_example, read_race_examples
from albert_tf.text.encoding import TextEncoder

RELEASE = FIXTURES / "albert_tiny"
KEYS = ("input_ids", "input_mask", "segment_ids")


@pytest.fixture(scope="module")
def encoder():
    return TextEncoder.from_files(spm_model_file=str(RELEASE / "30k-clean.model"))


@pytest.fixture(scope="module")
def mrpc():
    examples = get_processor("mrpc").get_dev_examples(str(DATA / "MRPC"))[:8]
    return pd.DataFrame(
        {
            "a": [e.text_a for e in examples],
            "b": [e.text_b for e in examples],
            "label": [int(e.label) for e in examples],
        }
    ), examples


@pytest.fixture(scope="module")
def race():
    examples = read_race_examples(str(DATA), "train") + read_race_examples(str(DATA), "test")
    x = {
        "article": [e.article for e in examples],
        "question": [e.question for e in examples],
        "options": [list(e.options) for e in examples],
    }
    return x, [e.label for e in examples], examples


@pytest.fixture(scope="module")
def classifier():
    return AlbertTextClassifier.from_pretrained(
        RELEASE, num_labels=2, sequence_length=32, text_pair=True
    )


@pytest.fixture(scope="module")
def multiple_choice():
    """At the default lengths (64, the release's positions, and the qa length cut in proportion),
    shared: one load and one traced predict for the tests that read it."""
    return AlbertTextMultipleChoice.from_pretrained(RELEASE)


@pytest.fixture(scope="module")
def span_extractor():
    """At the default sequence length (64) with the query and answer lengths set, shared."""
    return AlbertTextSpanExtractor.from_pretrained(RELEASE, max_query_length=8, max_answer_length=5)


@pytest.mark.backends
def test_from_pretrained_equals_the_original_encoder(classifier):
    """Padding-free (the text models' default): Google's outputs at real positions, zeros at
    padding; the padded computation (set_padding_free False) equals them everywhere."""
    from albert_tf.modeling.padding_free import set_padding_free

    ref = np.load(FIXTURES / "albert_tiny_reference.npz")
    real = ref["input_mask"].astype(bool)
    assert classifier.albert.encoder.padding_free and not real.all()
    out = classifier.albert({k: ref[k] for k in KEYS}, training=False)
    sequence = np.asarray(out["sequence_output"])
    np.testing.assert_allclose(sequence[real], ref["sequence_output"][real], atol=2e-5)
    if keras.backend.backend() == "tensorflow":  # on JAX (XLA, static shapes): padded anyway
        assert np.all(sequence[~real] == 0)
    np.testing.assert_allclose(out["pooled_output"], ref["pooled_output"], atol=2e-5)
    set_padding_free(classifier, False)
    try:
        out = classifier.albert({k: ref[k] for k in KEYS}, training=False)
    finally:
        set_padding_free(classifier, True)
    np.testing.assert_allclose(out["sequence_output"], ref["sequence_output"], atol=2e-5)


@pytest.mark.backends
def test_raw_strings_give_the_logits_of_the_glue_features(classifier, mrpc, encoder):
    df, examples = mrpc
    got = classifier.predict((df.a, df.b), batch_size=3, verbose=0)
    label_map = get_processor("mrpc").label_map()
    records = [example_to_record(e, label_map, encoder, 32, False) for e in examples]
    features = {k: np.array([r[k] for r in records], np.int32) for k in KEYS}
    want = np.asarray(classifier(features, training=False)["logits"])
    np.testing.assert_allclose(got["logits"], want, atol=1e-5)
    assert got["label_ids"].tolist() == np.argmax(want, -1).tolist()
    direct = classifier((tf.constant(df.a.tolist()), tf.constant(df.b.tolist())))["logits"]
    np.testing.assert_allclose(direct, want, atol=1e-5)


@pytest.mark.backends
def test_raw_strings_give_the_logits_of_the_race_features(multiple_choice, race, encoder):
    x, _, examples = race
    model = multiple_choice
    got = model.predict(x, batch_size=4, verbose=0)
    lengths = model.preprocessor.sequence_length, model.preprocessor.max_qa_length
    assert lengths[1] < lengths[0]  # the question-option text is cut
    records = [encode_race_example(e, encoder, *lengths) for e in examples]
    features = {k: np.array([r[k] for r in records], np.int32) for k in KEYS}
    want = np.asarray(model(features, training=False)["logits"])
    np.testing.assert_allclose(got["logits"], want, atol=1e-5)
    assert got["choice"].tolist() == np.argmax(got["logits"], -1).tolist()
    # the chosen option has the top logit of the feature path too; rows whose options truncate
    # to the same input tie exactly, and float noise (~1e-7) picks among the tied ones
    chosen = np.take_along_axis(want, got["choice"][:, None], -1)[:, 0]
    assert (chosen >= want.max(-1) - 1e-5).all()
    texts = model.chosen_options(x, got)
    assert texts == [e.options[c] for e, c in zip(examples, got["choice"])]


def test_fit_on_a_list_a_pandas_column_and_tf_data_with_default_compile(mrpc):
    df, _ = mrpc
    model = AlbertTextClassifier.from_pretrained(RELEASE, num_labels=2, sequence_length=24)
    model.fit(df.a.tolist(), df.label.tolist(), batch_size=2, epochs=3, verbose=0)  # uncompiled
    opt = model.optimizer
    assert isinstance(opt, AdamWeightDecay) and opt.weight_decay_rate == 0.01
    schedule = opt._learning_rate  # Google's: 10% warmup of the 4 x 3 steps, then linear decay
    assert isinstance(schedule, WarmupPolynomialDecay)
    assert (schedule.init_lr, schedule.num_train_steps, schedule.num_warmup_steps) == (2e-5, 12, 1)
    assert float(schedule(0)) == 0 and float(schedule(6)) == pytest.approx(1e-5)
    steps = [int(opt.iterations.numpy())]
    for x, y in (
        (df.a, df.label),
        (tf.data.Dataset.from_tensor_slices((df.a.values, df.label.values)), None),
    ):
        history = model.fit(x, y, batch_size=2, epochs=1, verbose=0)
        assert np.isfinite(history.history["loss"]).all()
        steps.append(int(model.optimizer.iterations.numpy()))
    features = (
        tf.data.Dataset.from_tensor_slices((df.a.values, df.label.values))
        .batch(2)
        .map(model.preprocessor)
    )  # feature dicts pass through fit untouched
    model.fit(features, verbose=0)
    steps.append(int(model.optimizer.iterations.numpy()))
    assert steps == [12, 16, 20, 24] and model.optimizer is opt  # later fits keep the schedule
    metrics = model.evaluate(df.a, df.label, batch_size=2, verbose=0, return_dict=True)
    assert set(metrics) >= {"loss", "accuracy"}


@pytest.mark.backends
def test_fit_evaluate_predict_on_raw_strings_with_a_keras_optimizer(mrpc):
    """Raw strings are tokenized in tf.data on the host, and the model trains on the features
    on any backend (here with a Keras optimizer). At from_pretrained's default length (the
    release's 64 positions): the first fit at the default length works."""
    df, _ = mrpc
    model = AlbertTextClassifier.from_pretrained(RELEASE, num_labels=2)
    assert model.preprocessor.sequence_length == 64
    model.compile(optimizer=keras.optimizers.Adam(1e-3))
    watched = [
        model.classifier.output_weights,
        model.albert.encoder.ffn_sublayers[0].output_dense.kernel,
    ]
    before = [np.array(v) for v in watched]
    history = model.fit(df.a.tolist(), df.label.tolist(), batch_size=4, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2 and np.isfinite(history.history["loss"]).all()
    for old, variable in zip(before, watched):
        assert not np.array_equal(old, np.asarray(variable)), variable.path
    metrics = model.evaluate(df.a, df.label, batch_size=4, verbose=0, return_dict=True)
    assert set(metrics) >= {"loss", "accuracy"}
    got = model.predict(df.a, batch_size=4, verbose=0)
    assert got["logits"].shape == (len(df), 2) and got["label_ids"].shape == (len(df),)


@pytest.mark.backends
def test_compile_arguments_set_the_schedule(classifier, mrpc):
    from albert_tf.keras_api import data

    df, _ = mrpc
    config = albert_tf.AlbertConfig.from_json_file(str(RELEASE / "albert_config.json"))
    fresh = AlbertTextClassifier(config, num_labels=2, preprocessor=classifier.preprocessor)
    fresh.compile(learning_rate=3e-5, warmup_proportion=0.5)
    ds = data.make_dataset(fresh.preprocessor, df.a, df.label, batch_size=4)
    fresh._schedule_optimizer(ds, epochs=3, steps_per_epoch=None)  # what fit does first
    schedule = fresh.optimizer._learning_rate
    assert (schedule.init_lr, schedule.num_train_steps, schedule.num_warmup_steps) == (3e-5, 6, 3)
    endless = tf.data.Dataset.from_tensor_slices((df.a.values, df.label.values)).repeat()
    with pytest.raises(ValueError, match="steps_per_epoch"):
        AlbertTextClassifier(config, num_labels=2, preprocessor=classifier.preprocessor).fit(
            endless.batch(2)
        )


@pytest.mark.backends
def test_keras_file_carries_the_tokenizer(tmp_path, mrpc):
    df, _ = mrpc
    folder = tmp_path / "release"
    shutil.copytree(RELEASE, folder)
    model = AlbertTextClassifier.from_pretrained(folder, num_labels=3, sequence_length=24)
    model.compile()
    model.optimizer.build(model.trainable_variables)  # its slots are saved too
    texts = tf.constant(df.a.tolist())
    want = np.asarray(model(texts)["logits"])
    path = tmp_path / "classifier.keras"
    model.save(path)
    shutil.rmtree(folder)  # the SentencePiece model must come from the .keras file
    for loaded in (albert_tf.load_model(path), AlbertTextClassifier.from_pretrained(path)):
        assert type(loaded) is AlbertTextClassifier and loaded.num_labels == 3
        assert loaded.get_config() == model.get_config()
        np.testing.assert_allclose(loaded(texts)["logits"], want, atol=1e-6)
        assert isinstance(loaded.optimizer, AdamWeightDecay)
        assert len(loaded.optimizer.variables) == len(model.optimizer.variables)
    with pytest.raises(InputError, match="not a AlbertTextMultipleChoice"):
        AlbertTextMultipleChoice.from_pretrained(path)


@pytest.mark.backends
def test_from_pretrained_of_a_run_output_dir_keeps_the_fine_tuned_head(tmp_path, classifier):
    out = tmp_path / "run"
    albert_tf.save_original_checkpoint(classifier, str(out / "model.ckpt-best"))
    with pytest.raises(InputError, match="albert_config.json"):
        AlbertTextClassifier.from_pretrained(out)
    loaded = AlbertTextClassifier.from_pretrained(
        out,
        albert_config_file=RELEASE / "albert_config.json",
        spm_model_file=RELEASE / "30k-clean.model",
        sequence_length=32,
        text_pair=True,
    )
    for a, b in zip(loaded.weights, classifier.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    empty = tmp_path / "empty"
    empty.mkdir()
    shutil.copy(RELEASE / "albert_config.json", empty)
    with pytest.raises(InputError, match="from_pretrained: no TF checkpoint"):
        AlbertTextClassifier.from_pretrained(empty, spm_model_file=RELEASE / "30k-clean.model")
    with pytest.raises(InputError, match="not a folder or a .keras file"):
        AlbertTextClassifier.from_pretrained(tmp_path / "missing")


@pytest.mark.backends
def test_raw_text_savedmodel_serves_strings(tmp_path, classifier, mrpc):
    df, _ = mrpc
    if keras.backend.backend() != "tensorflow":
        with pytest.raises(ValueError, match="raw_text=False"):
            classifier.export(str(tmp_path / "saved"), verbose=False)
        classifier.export(str(tmp_path / "saved"), verbose=False, raw_text=False)
        served = tf.saved_model.load(str(tmp_path / "saved"))
        features = classifier.preprocessor((df.a.tolist(), df.b.tolist()))
        out = served.serve({k: tf.constant(np.asarray(v)) for k, v in features.items()})
        want = classifier.predict((df.a, df.b), verbose=0)["logits"]
        np.testing.assert_allclose(out["logits"].numpy(), want, atol=1e-5)
        return
    classifier.export(str(tmp_path / "saved"), verbose=False)
    served = tf.saved_model.load(str(tmp_path / "saved"))
    out = served.serve((tf.constant(df.a.tolist()), tf.constant(df.b.tolist())))
    want = classifier.predict((df.a, df.b), verbose=0)["logits"]
    np.testing.assert_allclose(out["logits"].numpy(), want, atol=1e-5)


@pytest.mark.backends
def test_span_extractor_predicts_answer_text_and_offsets(span_extractor, encoder):
    model = span_extractor
    length = model.preprocessor.sequence_length
    x = {
        "question": ["Who likes apples?", "Empty?"],
        "context": ["Rose  and Paul like THE apples very much, said Jenny.", ""],
    }
    out = model.predict(x, verbose=0)
    assert out["answer_start"][1] == -1 and out["answer_text"][1] == ""
    start, end = out["answer_start"][0], out["answer_end"][0]
    assert 0 <= start <= end and out["answer_text"][0] == x["context"][0][start:end]
    # the offsets of a chosen span: logits peaked at the context piece of "the"
    ids = model.preprocessor(x)
    offset = int(ids["context_offset"][0])
    pieces = encoder.tokenize(x["context"][0])
    k = pieces.index("▁the")
    logits = np.full((2, length), -10.0, np.float32)
    logits[0, offset + k] = 10.0
    fake = {
        "start_logits": logits,
        "end_logits": logits.copy(),
        "context_offset": np.asarray(ids["context_offset"]),
        "context_length": np.asarray(ids["context_length"]),
    }
    got = model._postprocess(x, fake)
    assert got["answer_text"][0] == "THE"
    assert x["context"][0][got["answer_start"][0] : got["answer_end"][0]] == "THE"


@pytest.mark.backends
def test_multiple_choice_and_span_keras_files_round_trip(
    tmp_path, race, multiple_choice, span_extractor
):
    x, _, _ = race
    mc, span = multiple_choice, span_extractor
    inputs = [
        {k: tf.constant(v[:2]) for k, v in x.items()},
        {"question": tf.constant(x["question"][:2]), "context": tf.constant(x["article"][:2])},
    ]
    for model, x_model in zip((mc, span), inputs):
        path = tmp_path / f"{model.name}.keras"
        model.save(path)
        loaded = albert_tf.load_model(path)
        assert type(loaded) is type(model) and loaded.get_config() == model.get_config()
        want, got = model(x_model), loaded(x_model)
        for key in want:
            np.testing.assert_allclose(got[key], want[key], atol=1e-6)
    assert loaded.max_answer_length == 5 and loaded.preprocessor.max_query_length == 8


@pytest.mark.backends
def test_strings_without_a_preprocessor_fail_clearly():
    config = albert_tf.AlbertConfig.from_json_file(str(RELEASE / "albert_config.json"))
    model = AlbertTextClassifier(config, num_labels=2)
    with pytest.raises(ValueError, match="has no preprocessor"):
        model(tf.constant(["text"]))
    with pytest.raises(ValueError, match="raw text needs a preprocessor"):
        model.predict(["text"])


@pytest.mark.backends
@pytest.mark.parametrize(
    "cls", ["AlbertTextClassifier", "AlbertTextMultipleChoice", "AlbertTextSpanExtractor"]
)
def test_default_lengths_fit_the_release_and_too_long_fails_at_construction(cls, request):
    """albert_tiny has 64 positions: from_pretrained's default length is 64 (not 128 / 512 /
    384), the other lengths cut in proportion, and the first fit works; an explicit length
    over 64 fails when the model is built, in one line, not deep inside Keras. (The multiple
    choice and span models at the default length are the module's shared ones; the
    classifier's first fit at the default length is
    test_fit_evaluate_predict_on_raw_strings_with_a_keras_optimizer's.)"""
    import albert_tf
    from albert_tf.core.errors import InputError

    model_cls = getattr(albert_tf, cls)
    if cls == "AlbertTextClassifier":
        model = model_cls.from_pretrained(RELEASE)
    else:
        fixture = "multiple_choice" if cls == "AlbertTextMultipleChoice" else "span_extractor"
        model = request.getfixturevalue(fixture)
    assert model.preprocessor.sequence_length == 64
    with pytest.raises(
        InputError, match="sequence_length 65 exceeds the model's max_position_embeddings 64"
    ) as err:
        model_cls.from_pretrained(RELEASE, sequence_length=65)
    assert "\n" not in str(err.value)
