"""The run_squad.py runs of tests/tasks/squad/test_squad_driver.py and test_squad_chinese.py
in ONE process (tests/scripts/ram_runner.py), once per test run, and the Chinese data."""

import json

from bucket_runs import B, model_flags, model_uploads, run_on_bucket
from shared_runs import once_per_test_run

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


def cmrc_json():
    """PARAGRAPHS as a CMRC 2018 / DRCD file (SQuAD v1.1 JSON)."""
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


SQUAD_FLAGS = [
    "--max_seq_length=64",
    "--doc_stride=32",
    "--max_query_length=16",
    "--train_batch_size=8",
    "--predict_batch_size=8",
    "--eval_batch_size=8",
    "--warmup_step=1",
    "--save_checkpoints_steps=2",
]


def _squad_runs(fixtures_dir, data_dir, folder):
    """run_squad.py on a bucket, in one process: v1.1 trains 2 steps, evaluates, predicts and
    exports; a second v1.1 run to 4 steps resumes from the bucket; v2.0 trains 4 steps and
    predicts; then the Chinese file with a brightmart checkpoint on local paths. Each bucket
    output folder comes back to `folder` for the local-only checks."""
    chinese = folder / "cmrc2018_dev.json"
    chinese.write_text(json.dumps(cmrc_json(), ensure_ascii=False), encoding="utf-8")
    release = fixtures_dir / "albert_zh" / "albert_zh_tiny"
    data = {v: f"{B}/squad/{v}.json" for v in ("v1.1", "v2.0")}
    common = {
        v: [
            f"--train_file={data[v]}",
            f"--predict_file={data[v]}",
            *model_flags(),
            f"--output_dir={B}/squad-{v}",
            *SQUAD_FLAGS,
        ]
        for v in data
    }
    r = run_on_bucket(
        folder,
        "run_squad.py",
        [
            [data_dir / "squad" / "v1.1" / "squad.json", data["v1.1"]],
            [data_dir / "squad" / "v2.0" / "dev-v2.0.json", data["v2.0"]],
            *model_uploads(fixtures_dir),
        ],
        [
            common["v1.1"]
            + ["--train_step=2", "--do_train", "--do_eval", "--do_predict"]
            + [f"--export_dir={B}/export"],
            common["v1.1"] + ["--train_step=4", "--do_train", "--do_eval"],
            common["v2.0"]
            + ["--train_step=4", "--do_train", "--do_eval", "--do_predict"]
            + ["--version_2_with_negative"],
            [
                f"--train_file={chinese}",
                f"--predict_file={chinese}",
                f"--albert_config_file={release / 'albert_config.json'}",
                f"--init_checkpoint={release}",
                f"--vocab_file={release / 'vocab.txt'}",
                f"--output_dir={folder / 'zh-out'}",
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
                f"--export_dir={folder / 'zh-export'}",
            ],
        ],
        trees=[f"{B}/squad-v1.1", f"{B}/export"],
        texts=[f"{B}/squad-v1.1/eval_history.json"],
        downloads=[
            [f"{B}/squad-v1.1", folder / "v1.1"],
            [f"{B}/squad-v2.0", folder / "v2.0"],
            [f"{B}/export", folder / "export"],
        ],
    )
    return r


def squad_runs(tmp_path_factory, fixtures_dir, data_dir):
    """The runs, once per test run.

    Args:
        tmp_path_factory: pytest's fixture.
        fixtures_dir: tests/data/fixtures.
        data_dir: tests/data/samples.

    Returns:
        (results, folder): results as bucket_runs.run_on_bucket returns them (cases: v1.1,
        its resume, v2.0, Chinese); under folder, v1.1/, v2.0/, export/, zh-out/, zh-export/.
    """
    return once_per_test_run(
        tmp_path_factory,
        "squad_driver_runs",
        lambda folder: _squad_runs(fixtures_dir, data_dir, folder),
    )
