"""albert_tf: ALBERT (Lan et al., 2019) in Keras 3 (TensorFlow or JAX), exact to Google's releases.

Start here. Two ways in, one model code:

* Keras on raw strings: `AlbertTextClassifier.from_pretrained("albert_base_v2", num_labels=2)`,
  then `compile()`, `fit(texts, labels)`, `predict(texts)`; `.keras` files carry the tokenizer.
* Google's absl drivers on TFRecords: `run_classifier.py`, `run_squad.py`, `run_race.py`,
  `run_ner.py`, `run_pretraining.py` (the flags of Google's scripts, one training engine,
  tf.distribute on CPU, GPU and TPU).

The classes most users need: `AlbertConfig`, `AlbertModel` (the encoder), `AlbertPretrainer`
(MLM + SOP), `AlbertClassifier` (what the drivers fine-tune) and `AlbertTextClassifier` (the same
with its tokenizer inside). Weights in and out: `load_original_checkpoint` (Google's TF1 files),
`load_tfhub` / `export_tfhub` (Google's TF2 releases: TF Hub / Kaggle SavedModels, Model Garden
checkpoints), `load_huggingface`, `load_keras_hub`, `convert_model` / `python -m albert_tf.convert`.
Shipping: `export_litert` / `load_litert` (LiteRT, int8, the TFLite Task Library) and
`export_onnx` (docs/deployment.md). docs/architecture.md maps the folders.

Keras's backend is TensorFlow unless `KERAS_BACKEND` names another before the import
(`KERAS_BACKEND=jax`: the models, their losses and every weight format; `KERAS_BACKEND=torch`:
the models' forward pass and `predict`; docs/backends.md says what runs where). Public names load
lazily, so a data-builder process that only tokenizes never imports Keras (on TensorFlow or JAX).

Example:

>>> import numpy as np, albert_tf
>>> config = albert_tf.AlbertConfig(vocab_size=100, embedding_size=8, hidden_size=16,
...                                 num_hidden_layers=2, num_attention_heads=2,
...                                 intermediate_size=32)
>>> model = albert_tf.AlbertModel(config)
>>> model({"input_ids": np.array([[2, 10, 11, 3]])})["pooled_output"].shape
TensorShape([1, 16])
"""

import importlib
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
if os.environ["KERAS_BACKEND"] == "torch":
    # Keras (torch, and the triton compiler a PyPI torch wheel carries) must load before
    # TensorFlow: triton loaded after TensorFlow crashes the process (docs/backends.md)
    import keras  # noqa: F401

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS = {
    "AlbertConfig": "albert_tf.core.config",
    "AlbertModel": "albert_tf.modeling.albert_model",
    "AlbertPretrainer": "albert_tf.modeling.albert_model",
    "AlbertClassifier": "albert_tf.modeling.finetuning_models",
    "AlbertTokenClassifier": "albert_tf.modeling.finetuning_models",
    "AlbertMultipleChoice": "albert_tf.modeling.finetuning_models",
    "AlbertSquadV1": "albert_tf.modeling.squad_models",
    "AlbertSquadV2": "albert_tf.modeling.squad_models",
    "AlbertTextClassifier": "albert_tf.keras_api.models",
    "AlbertTextMultipleChoice": "albert_tf.keras_api.models",
    "AlbertTextSpanExtractor": "albert_tf.keras_api.models",
    "AlbertTextPreprocessor": "albert_tf.text.keras_preprocessors",
    "AlbertMultipleChoicePreprocessor": "albert_tf.text.keras_preprocessors",
    "AlbertSpanPreprocessor": "albert_tf.text.keras_preprocessors",
    "load_model": "albert_tf.interop.keras_files",
    "load_original_checkpoint": "albert_tf.formats.tf1",
    "save_original_checkpoint": "albert_tf.formats.tf1",
    "export_keras_hub_preset": "albert_tf.formats.keras_hub",
    "load_keras_hub": "albert_tf.formats.keras_hub",
    "export_huggingface": "albert_tf.formats.huggingface",
    "load_huggingface": "albert_tf.formats.huggingface",
    "export_tfhub": "albert_tf.formats.tfhub_export",
    "load_tfhub": "albert_tf.formats.tfhub",
    "convert_model": "albert_tf.interop.model_files",
    "export_onnx": "albert_tf.deploy.onnx",
    "FullTokenizer": "albert_tf.text.tokenization",
    "preprocess_text": "albert_tf.text.normalization",
    "train_sentencepiece": "albert_tf.text.spm_train",
    "GraphTokenizer": "albert_tf.text.graph_tokenizer",
    "GraphTokenizerLayer": "albert_tf.text.graph_tokenizer",
    "build_pretraining_data": "albert_tf.pretraining.builder",
    "create_optimizer": "albert_tf.engine.optimizers",
    "WarmupPolynomialDecay": "albert_tf.engine.learning_rate",
    "AdamWeightDecay": "albert_tf.engine.optimizers",
    "LAMB": "albert_tf.engine.optimizers",
    "get_strategy": "albert_tf.engine.distribute",
    "CustomProcessor": "albert_tf.tasks.classification.custom",
    "load_text_classification_data": "albert_tf.tasks.classification.custom",
    "GlueTask": "albert_tf.tasks.glue.task",
    "run_glue": "albert_tf.tasks.glue.task",
    "TextEncoder": "albert_tf.text.encoding",
    "load_pretrained": "albert_tf.inference.representations",
    "extract_representations": "albert_tf.inference.representations",
    "fill_mask": "albert_tf.inference.representations",
    "load_saved_model": "albert_tf.tasks.serving",
    "bucket_lengths": "albert_tf.engine.bucketing",
    "bucket_by_length": "albert_tf.engine.finetuning",
    "export_litert": "albert_tf.deploy.litert",
    "load_litert": "albert_tf.deploy.runtime",
}


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'albert_tf' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__():
    return sorted(list(globals()) + list(_EXPORTS))


__all__ = sorted(_EXPORTS)
