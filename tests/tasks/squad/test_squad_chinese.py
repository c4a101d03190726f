"""Chinese reading comprehension (CMRC 2018 / DRCD in SQuAD JSON) with a WordPiece vocabulary,
as Google's Chinese releases ship: pieces map back to the original characters exactly (the
Python path and the SavedModel's in-graph offsets agree), run_squad.py trains, predicts and
exports, and the export answers what the Python path answers."""

import json
import random

from bucket_runs import assert_ok
import pytest
from squad_runs import PARAGRAPHS, squad_runs
import tensorflow as tf

from albert_tf.tasks.squad.alignment import tokenize_paragraph
from albert_tf.tasks.squad.graph_offsets import offsets_for
from albert_tf.text.graph_wordpiece import GraphWordPieceTokenizer
from albert_tf.text.tokenization import FullTokenizer


def test_pieces_map_back_to_the_original_characters(fixtures_dir):
    vocab = fixtures_dir / "albert_zh" / "vocab.txt"
    tok = FullTokenizer(vocab_file=vocab, do_lower_case=True)
    offsets = offsets_for(GraphWordPieceTokenizer(str(vocab)))
    rng = random.Random(0)
    texts = [c for c, _ in PARAGRAPHS] + [
        "".join(rng.choice("中文的是，。 abcÉé\u0301\x00\t１２") for _ in range(40))
        for _ in range(200)
    ]
    ids, starts, ends = offsets(tf.constant(texts))
    for text, i, s, e in zip(texts, ids.to_list(), starts.to_list(), ends.to_list()):
        para = tokenize_paragraph(text, tok)
        assert (list(para.ids), list(para.starts), list(para.ends)) == (i, s, e), repr(text)
    for context, qas in PARAGRAPHS:  # every answer is a whole run of pieces
        para = tokenize_paragraph(context, tok)
        assert para.ids == tuple(tok.convert_tokens_to_ids(tok.tokenize(context)))
        for _, answer in qas:
            start = context.index(answer)
            first, last = para.char_span_to_tokens(start, start + len(answer))
            assert para.text(first, last) == answer


@pytest.fixture(scope="module")
def runs(fixtures_dir, data_dir, tmp_path_factory):
    return squad_runs(tmp_path_factory, fixtures_dir, data_dir)


def test_run_squad_with_a_wordpiece_vocabulary(runs):
    """brightmart's layout: the checkpoint with its own 484-piece vocab.txt (the English tiny
    model's 1000 rows with this vocabulary is another model's tokenizer: an error); the run
    is in tests/squad_runs.py's shared process."""
    r, folder = runs
    assert_ok(r["cases"][3])
    out = folder / "zh-out"
    nbest = json.loads((out / "nbest_predictions.json").read_text(encoding="utf-8"))
    assert len(nbest) == 6 and "exact_match = " in (out / "eval_results.txt").read_text()
    from albert_tf import load_saved_model

    serve = load_saved_model(folder / "zh-export").signatures["serving_default"]
    qas = [
        (f"q{i}-{j}", q, c)
        for i, (c, pairs) in enumerate(PARAGRAPHS)
        for j, (q, _) in enumerate(pairs)
    ]
    got = serve(
        question=tf.constant([q for _, q, _ in qas]), context=tf.constant([c for _, _, c in qas])
    )
    texts = [t.decode("utf-8") for t in got["answer_text"].numpy()]
    assert texts == [nbest[qid][0]["text"] for qid, _, _ in qas]
    for (_, _, context), text, s, e in zip(
        qas, texts, got["start_char"].numpy(), got["end_char"].numpy()
    ):
        assert context[s:e].strip() == text  # code points into the original context
