"""Where is the model: a release folder's config, checkpoint and tokenizer, found in one place
(formats/release_folder.py) for every entry point."""

import pytest
from repo_paths import FIXTURES

from albert_tf.core.config import CONFIG_FILE, AlbertConfig
from albert_tf.core.errors import InputError
from albert_tf.formats.release_folder import (
    config_file_of,
    find_spm_model,
    release_checkpoint,
    release_config,
    tokenizer_files,
)

TINY = FIXTURES / "albert_tiny"
HUB = FIXTURES / "tfhub" / "albert_tiny_model"


def test_the_config_given_else_the_one_beside_the_model():
    assert config_file_of(TINY) == str(TINY / CONFIG_FILE)
    assert config_file_of(TINY / "model.ckpt-best") == str(TINY / CONFIG_FILE)
    assert config_file_of(TINY, "mine.json") == "mine.json"
    assert config_file_of(None) is None
    assert config_file_of(HUB) is None  # a SavedModel carries its config inside


def test_release_config_reads_a_tf2_release_and_names_what_is_missing(tmp_path):
    assert release_config(TINY) == AlbertConfig.from_json_file(TINY / CONFIG_FILE)
    assert release_config(HUB).hidden_size == release_config(TINY).hidden_size
    with pytest.raises(InputError, match=rf"no {CONFIG_FILE}; pass albert_config_file"):
        release_config(tmp_path)


def test_release_checkpoint_is_the_best_the_saved_model_or_the_only_one(tmp_path):
    assert release_checkpoint(TINY) == str(TINY / "model.ckpt-best")
    assert release_checkpoint(HUB) == HUB
    with pytest.raises(FileNotFoundError, match="no TF checkpoint found"):
        release_checkpoint(tmp_path)


def test_tokenizer_files_given_else_found(tmp_path):
    assert tokenizer_files(TINY) == (str(TINY / "30k-clean.model"), None)
    assert tokenizer_files(tmp_path, vocab_file="v.txt") == (None, "v.txt")
    assert find_spm_model(HUB).endswith(".model")
    (tmp_path / "vocab.txt").write_text("[PAD]\n")
    assert tokenizer_files(tmp_path) == (None, str(tmp_path / "vocab.txt"))
    with pytest.raises(ValueError, match="no tokenizer in"):
        tokenizer_files(tmp_path / "none")
