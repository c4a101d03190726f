"""Chinese reading comprehension (CMRC 2018 / DRCD in SQuAD JSON) with a WordPiece vocabulary,
as Google's Chinese releases ship: pieces map back to the original characters exactly (the
Python path and the SavedModel's in-graph offsets agree), run_squad.py trains, predicts and
exports, and the export answers what the Python path answers."""

import json
import pathlib
import random
import sys

import python_processes
import tensorflow as tf

from albert_tf.tasks.squad.alignment import tokenize_paragraph
from albert_tf.tasks.squad.graph_offsets import offsets_for
from albert_tf.text.graph_wordpiece import GraphWordPieceTokenizer
from albert_tf.text.tokenization import FullTokenizer

ROOT = pathlib.Path(__file__).resolve().parents[3]
PARAGRAPHS = [
    (
        "ＡＬＢＥＲＴ是2019年发表的模型，它的名字来自“A Lite BERT”。它在中文和英文上都有很好的结果。",  # noqa: E501
        [("ALBERT是哪一年发表的？", "2019年"), ("它的名字来自什么？", "A Lite BERT")],
    ),
    (
        "北京是中国的首都，也是一个有三千多年历史的城市。\n北京大学成立于1898年，位于北京西北部。",
        [("中国的首都是哪里？", "北京"), ("北京大学成立于哪一年？", "1898年")],
    ),
    (
        "在DRCD（台達閱讀理解資料集）中，每一個問題的答案都是文章中的一段文字。 Café 与 naïve 都有重音。",  # noqa: E501
        [("DRCD的答案是什么？", "文章中的一段文字"), ("哪个词有重音？", "Café")],
    ),
]


def _cmrc_json():
    data = []
    for i, (context, qas) in enumerate(PARAGRAPHS):
        data.append(
            {
                "title": f"doc{i}",
                "paragraphs": [
                    {
                        "context": context,
                        "qas": [
                            {
                                "id": f"q{i}-{j}",
                                "question": q,
                                "answers": [{"text": a, "answer_start": context.index(a)}],
                            }
                            for j, (q, a) in enumerate(qas)
                        ],
                    }
                ],
            }
        )
    return {"version": "v1.1", "data": data}


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


def test_run_squad_with_a_wordpiece_vocabulary(fixtures_dir, tmp_path):
    data = tmp_path / "cmrc2018_dev.json"
    data.write_text(json.dumps(_cmrc_json(), ensure_ascii=False), encoding="utf-8")
    # brightmart's layout: the checkpoint with its own 484-piece vocab.txt (the English tiny
    # model's 1000 rows with this vocabulary is another model's tokenizer: an error)
    release, out = fixtures_dir / "albert_zh" / "albert_zh_tiny", tmp_path / "out"
    cmd = [
        sys.executable,
        str(ROOT / "run_squad.py"),
        f"--train_file={data}",
        f"--predict_file={data}",
        f"--albert_config_file={release / 'albert_config.json'}",
        f"--init_checkpoint={release}",
        f"--vocab_file={release / 'vocab.txt'}",
        f"--output_dir={out}",
        "--max_seq_length=48",
        "--doc_stride=16",
        "--max_query_length=16",
        "--train_batch_size=4",
        "--predict_batch_size=4",
        "--train_step=2",
        "--warmup_step=1",
        "--save_checkpoints_steps=2",
        "--do_train",
        "--do_eval",
        "--do_predict",
        f"--export_dir={tmp_path / 'export'}",
    ]
    r = python_processes.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    nbest = json.loads((out / "nbest_predictions.json").read_text(encoding="utf-8"))
    assert len(nbest) == 6 and "exact_match = " in (out / "eval_results.txt").read_text()
    from albert_tf import load_saved_model

    serve = load_saved_model(tmp_path / "export").signatures["serving_default"]
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
