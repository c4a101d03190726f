"""The SQuAD SavedModel on raw strings equals the Python path: the same piece → character
offsets as alignment.tokenize_paragraph, and on the sample data (v1.1 and v2.0) the same
final answer, score, character span and null score as SquadTask.predict."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

from albert_tf import AlbertConfig, load_original_checkpoint, load_saved_model
from albert_tf.tasks.squad.alignment import tokenize_paragraph
from albert_tf.tasks.squad.features import doc_spans, is_max_context
from albert_tf.tasks.squad.graph_offsets import PieceOffsets
from albert_tf.tasks.squad.serving import export_squad, max_context, window_spans
from albert_tf.tasks.squad.task import SquadSettings, SquadTask, squad_model_fn
from albert_tf.text.graph_tokenizer import GraphTokenizer
from albert_tf.text.tokenization import FullTokenizer

# what preprocessing changes (accents, NFKD expansions, case, whitespace runs), unknown
# characters (one piece per run), Google's comma-digit fix-up, empty and blank strings
TRICKY = [
    "",
    "  ",
    "a ☃☃ b",
    "a☃☃b 中文字 x",
    "Café  naïve  e\u0301lan,  1998, 2,000 ÉCOLE",
    " lead  trail ",
    "ΟΔΟΣ İstanbul ﬁne ½ \u00a0x\u3000y",
    "\u0301abc ☃,1 x",
    "[CLS] a\tb\nc 🙂🙂x🙂 1,2,3, 12,",
    "\u00a8 x\u00a8y",
    "Ǆ ǅ ß ﬃ",
]


def _contexts(path):
    return [p["context"] for a in json.loads(path.read_text())["data"] for p in a["paragraphs"]]


def test_piece_offsets_equal_the_python_alignment(fixtures_dir, data_dir):
    spm = str(fixtures_dir / "spm.model")
    texts = _contexts(data_dir / "squad" / "v1.1" / "squad.json") + TRICKY
    ids, starts, ends = PieceOffsets(GraphTokenizer(spm))(tf.constant(texts))
    tokenizer = FullTokenizer(spm_model_file=spm)
    for i, text in enumerate(texts):
        para = tokenize_paragraph(text, tokenizer, True)
        assert ids[i].numpy().tolist() == list(para.ids), text
        assert starts[i].numpy().tolist() == list(para.starts), text
        assert ends[i].numpy().tolist() == list(para.ends), text


def test_windows_and_max_context_equal_features_py():
    """window_spans / max_context against doc_spans / is_max_context, over lengths around the
    window size, several question lengths and strides, in one batch."""
    cases = [(n, q) for n in (0, 1, 44, 45, 46, 100, 343) for q in (0, 3, 16)]
    n = tf.constant([c[0] for c in cases], tf.int64)
    qlen = tf.constant([c[1] for c in cases], tf.int64)
    for stride in (5, 16, 45):
        ex, start, length, count = window_spans(n, qlen, 64, stride)
        ctx = max_context(ex, start, length, count, 64).numpy()
        w = 0
        for i, (size, q) in enumerate(cases):
            want = doc_spans(size, 64 - q - 3, stride)
            spans = [
                (int(s), int(l))
                for e, s, l in zip(ex.numpy(), start.numpy(), length.numpy())
                if e == i
            ]
            assert spans == want, (size, q, stride)
            for j, (s, l) in enumerate(want):
                assert ctx[w + j, :l].tolist() == [is_max_context(want, j, s + k) for k in range(l)]
            w += len(want)
        assert w == ctx.shape[0]


def _squad_file(data_dir, tmp_path, v2):
    """v1.1: the sample plus a paragraph of TRICKY text; v2.0: two paragraphs of the sample;
    both: blank contexts (no window)."""
    if v2:
        data = json.loads((data_dir / "squad" / "v2.0" / "small.json").read_text())
        data["data"] = [dict(data["data"][0], paragraphs=data["data"][0]["paragraphs"][:2])]
    else:
        data = json.loads((data_dir / "squad" / "v1.1" / "squad.json").read_text())
        context = " ".join(TRICKY[2:])
        data["data"].append(
            {
                "title": "tricky",
                "paragraphs": [
                    {
                        "context": context,
                        "qas": [
                            {"id": "t1", "question": "Where is the café, 1998?", "answers": []},
                            {"id": "t2", "question": "☃ ☃?", "answers": []},
                        ],
                    }
                ],
            }
        )
    data["data"].append(
        {
            "title": "blank",
            "paragraphs": [  # no window: no answer
                {
                    "context": c,
                    "qas": [
                        {"id": f"b{i}", "question": "what?", "answers": [], "is_impossible": True}
                    ],
                }
                for i, c in enumerate(["", " \n "])
            ],
        }
    )
    path = tmp_path / "squad.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("v2", [False, True], ids=["v1.1", "v2.0"])
def test_squad_saved_model_equals_python_path(v2, fixtures_dir, data_dir, tmp_path):
    spm = str(fixtures_dir / "spm.model")
    settings = SquadSettings(
        v2,
        max_seq_length=64,
        doc_stride=24,
        max_query_length=16,
        n_best_size=20,
        max_answer_length=30,
    )
    task = SquadTask(
        settings,
        FullTokenizer(spm_model_file=spm),
        spm,
        str(tmp_path / "cache"),
        predict_file=str(_squad_file(data_dir, tmp_path, v2)),
    )
    tiny = fixtures_dir / "albert_tiny"
    keras.utils.set_random_seed(7)  # the span head is not in the checkpoint
    model = squad_model_fn(AlbertConfig.from_json_file(tiny / "albert_config.json"), settings)()
    load_original_checkpoint(model, tiny / "model.ckpt-best")
    preds, nbest, null_odds, examples = task.predict(model, 16)

    serve = load_saved_model(export_squad(model, task, tmp_path / "export"))
    got = serve.signatures["serving_default"](
        question=tf.constant([e.question_text for e in examples]),
        context=tf.constant([e.paragraph_text for e in examples]),
    )
    texts = [t.decode() for t in got["answer_text"].numpy()]
    assert texts == [preds[e.qas_id] for e in examples]
    assert len(set(texts)) > 2  # not one answer for every question
    names = ("start_log_prob", "end_log_prob") if v2 else ("start_logit", "end_logit")
    want = [nbest[e.qas_id][0][names[0]] + nbest[e.qas_id][0][names[1]] for e in examples]
    np.testing.assert_allclose(got["score"].numpy(), want, rtol=1e-5, atol=1e-5)
    for e, text, s, end in zip(examples, texts, got["start_char"].numpy(), got["end_char"].numpy()):
        if s < 0:  # no valid span: the Python path's "empty" (v1.1) or "" (v2.0)
            assert text == ("" if v2 else "empty") and end == -1
        else:
            assert e.paragraph_text[s:end] == text
    assert texts[-2:] == ["" if v2 else "empty"] * 2  # the blank contexts
    if v2:
        np.testing.assert_allclose(
            got["null_score"].numpy(), [null_odds[e.qas_id] for e in examples], atol=1e-5
        )
    else:
        assert "null_score" not in got
