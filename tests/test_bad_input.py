"""Bad input to the five entry points ends as ONE `error: ...` line naming the culprit, exit
code 2, no traceback, and nothing created or changed in output_dir.

All five drivers' cases run in one process (tests/scripts/bad_input_runner.py: TensorFlow
imported once, flags reset per case and removed per driver, stderr captured); a few run as real
subprocesses too. What "one line" means here: among the lines Python writes to stderr,
exactly one starts with `error:`, it is the last, and every other line is an absl/TF log line
(the strategy's INFO line may come first); no "Traceback", no usage text. TensorFlow's C++
start-up lines do not count.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
import python_processes
from shared_runs import once_per_test_run

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNNER = os.path.join(ROOT, "tests", "scripts", "bad_input_runner.py")
# a driver's log lines: `HH:MM:SS message` (albert_tf.drivers.console), or absl's own format
# when a case runs before the console is set up
LOG_LINE = re.compile(r"^(\d\d:\d\d:\d\d |[IWEF]\d{4} \d\d:\d\d:\d\d|WARNING: All log messages)")


# ---- the bad files --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def files(tmp_path_factory, fixtures_dir, data_dir):
    """Every bad (and good) file the cases point at, made once per module."""
    d = tmp_path_factory.mktemp("bad_input")
    tiny = fixtures_dir / "albert_tiny"
    good = json.loads((tiny / "albert_config.json").read_text())
    f = {
        "d": d,
        "config": tiny / "albert_config.json",
        "ckpt": tiny / "model.ckpt-best",
        "spm": fixtures_dir / "spm.model",
        "data": data_dir,
        "tfrecord": fixtures_dir / "pretraining.tfrecord",
        "corpus": fixtures_dir / "corpus.txt",
        "squad": data_dir / "squad" / "v1.1" / "squad.json",
    }

    def config(name, **changes):
        path = d / f"{name}.json"
        path.write_text(json.dumps({**good, **changes}))
        return path

    f["typo_config"] = d / "typo.json"
    f["typo_config"].write_text(
        json.dumps(
            {**{k: v for k, v in good.items() if k != "num_hidden_layers"}, "num_hidden_layer": 4}
        )
    )
    f["wide_config"] = config("wide", hidden_size=64, intermediate_size=128)
    f["grouped_config"] = config("grouped", num_hidden_groups=2)
    f["small_vocab_config"] = config("small_vocab", vocab_size=500)
    f["tiny_vocab_config"] = config("tiny_vocab", vocab_size=10)
    f["big_vocab_config"] = config("big_vocab", vocab_size=30000)
    f["bad_act_config"] = config("bad_act", hidden_act="swishy")
    f["bad_json"] = d / "bad.json"
    f["bad_json"].write_text('{"vocab_size": 1000, ')
    f["not_spm"] = d / "not_spm.model"
    f["not_spm"].write_text("this is not a sentencepiece model\n")
    f["a_file"] = d / "a_file"
    f["a_file"].write_text("keep me\n")
    f["other_config_out"] = d / "other_config_out"  # a run's folder, from a wider model
    f["other_config_out"].mkdir()
    shutil.copy(f["wide_config"], f["other_config_out"] / "albert_config.json")
    (f["other_config_out"] / "ckpt-2.index").write_bytes(b"")
    f["existing_out"] = d / "existing_out"
    f["existing_out"].mkdir()
    (f["existing_out"] / "eval_results.txt").write_text("accuracy = 0.9\n")
    f["bad_tfrecord"] = d / "bad.tfrecord"
    f["bad_tfrecord"].write_bytes(os.urandom(256))
    f["empty"] = d / "empty.txt"
    f["empty"].write_text("")
    f["wordpiece_vocab"] = d / "vocab.txt"
    f["wordpiece_vocab"].write_text(  # more pieces than the config's vocab_size (1000)
        "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n" + "".join(f"w{i}\n" for i in range(1200))
    )
    f["blank"] = d / "blank.txt"
    f["blank"].write_text("\n  \n\n")
    f["latin1"] = d / "latin1.txt"
    f["latin1"].write_bytes("A first sentence.\nCaf\xe9 au lait.\n".encode("latin-1"))
    sst = (data_dir / "SST-2" / "train.tsv").read_text().splitlines(keepends=True)

    def glue(name, train_lines=None, raw=None):
        folder = d / name / "SST-2"
        folder.mkdir(parents=True)
        for split in ("dev.tsv", "test.tsv"):
            shutil.copy(data_dir / "SST-2" / split, folder / split)
        if raw is not None:
            (folder / "train.tsv").write_bytes(raw)
        elif train_lines is not None:
            (folder / "train.tsv").write_text("".join(train_lines))
        return d / name

    f["glue_no_train"] = glue("glue_no_train")
    f["glue_short_row"] = glue("glue_short_row", sst[:2] + ["no label column here\n"] + sst[3:])
    f["glue_bad_label"] = glue(
        "glue_bad_label", sst[:3] + [sst[3].rsplit("\t", 1)[0] + "\tpositive\n"]
    )
    f["glue_latin1"] = glue(
        "glue_latin1", raw="".join(sst[:4]).encode() + "tr\xe8s bien\t1\n".encode("latin-1")
    )
    f["glue_empty"] = glue("glue_empty", sst[:1])

    def own(name, train, dev="text,label\nfine,pos\n", ext=".csv"):
        folder = d / name
        folder.mkdir()
        (folder / f"train{ext}").write_text(train)
        (folder / f"dev{ext}").write_text(dev)
        return folder

    f["own_no_column"] = own("own_no_column", "sentence,label\ngood,pos\nbad,neg\n")
    f["own_empty"] = own("own_empty", "")
    f["own_header_only"] = own("own_header_only", "text,label\n")
    f["own_unseen_dev_label"] = own(
        "own_unseen_dev_label", "text,label\ngood,pos\nbad,neg\n", "text,label\nso so,neutral\n"
    )
    f["own_bad_jsonl"] = own(
        "own_bad_jsonl", '{"text": "a", "label": 1}\n{"text": "b"}\n', "", ".jsonl"
    )
    f["own_txt"] = d / "train.txt"
    f["own_txt"].write_text("text,label\ngood,pos\n")

    squad = json.loads(f["squad"].read_text())
    text = f["squad"].read_text()
    f["squad_truncated"] = d / "truncated.json"
    f["squad_truncated"].write_text(text[: len(text) // 2])
    del squad["data"][0]["paragraphs"][0]["qas"][0]["question"]
    f["squad_qid"] = squad["data"][0]["paragraphs"][0]["qas"][0]["id"]
    f["squad_no_question"] = d / "no_question.json"
    f["squad_no_question"].write_text(json.dumps(squad))
    f["squad_latin1"] = d / "latin1.json"
    f["squad_latin1"].write_bytes(b'{"data": [{"title": "Caf\xe9"}]}')

    def race(name, edit=None):
        root = d / name
        shutil.copytree(data_dir / "RACE", root / "RACE")
        if edit:
            edit(root / "RACE" / "train" / "high" / "7666.txt")
        return root

    def bad_answer(p):
        data = json.loads(p.read_text())
        data["answers"][0] = "E"
        p.write_text(json.dumps(data))

    f["race"] = race("race")
    f["race_bad_answer"] = race("race_bad_answer", bad_answer)
    f["race_truncated"] = race("race_truncated", lambda p: p.write_text(p.read_text()[:100]))
    return f


# ---- the cases: (id, argv, text the error line must contain) ---------------------------------
def classifier_cases(f):
    d = f["d"]
    base = {
        "task_name": "SST-2",
        "data_dir": f["data"],
        "albert_config_file": f["config"],
        "init_checkpoint": f["ckpt"],
        "spm_model_file": f["spm"],
        "max_seq_length": 64,
        "do_train": True,
        "train_step": 2,
        "train_batch_size": 2,
    }
    own = {"task_name": "custom"}
    return [
        ("unknown_task", {"task_name": "sst2"}, "did you mean 'sst-2'"),
        ("unknown_recipe", {"recipe": "mnlii"}, "--recipe=mnlii: unknown; use one of cola"),
        (
            "recipe_of_another_driver",
            {"recipe": "squad_v2"},
            "--recipe=squad_v2 is for run_squad.py",
        ),
        (
            "recipe_of_another_task",
            {"recipe": "cola"},
            "not of --task_name=SST-2; use --recipe=sst-2",
        ),
        (
            "explicit_warmup_over_recipe_steps",
            {"recipe": "sst-2", "warmup_step": 50},  # the base's --train_step wins
            "--warmup_step=50 exceeds --train_step=2",
        ),
        ("no_data_dir", {"data_dir": None}, "--data_dir is required"),
        ("data_dir_missing", {"data_dir": d / "nowhere"}, "--data_dir"),
        ("config_missing", {"albert_config_file": d / "none.json"}, "--albert_config_file"),
        ("config_not_json", {"albert_config_file": f["bad_json"]}, "not valid JSON"),
        (
            "config_typo_key",
            {"albert_config_file": f["typo_config"]},
            "did you mean 'num_hidden_layers'",
        ),
        ("config_bad_value", {"albert_config_file": f["bad_act_config"]}, "hidden_act"),
        (
            "config_vs_ckpt_shapes",
            {"albert_config_file": f["wide_config"]},
            "does not fit checkpoint",
        ),
        ("config_vs_ckpt_groups", {"albert_config_file": f["grouped_config"]}, "group_1"),
        ("ckpt_missing", {"init_checkpoint": d / "no.ckpt"}, "--init_checkpoint"),
        ("ckpt_not_a_ckpt", {"init_checkpoint": f["a_file"]}, "--init_checkpoint"),
        ("spm_missing", {"spm_model_file": d / "none.model"}, "--spm_model_file"),
        ("spm_invalid", {"spm_model_file": f["not_spm"]}, "not a SentencePiece model"),
        (
            "spm_exceeds_vocab",
            {"albert_config_file": f["small_vocab_config"], "init_checkpoint": None},
            "vocab_size is 500",
        ),
        (
            "spm_far_below_vocab",  # 1000 pieces for 30,000 rows: another model's tokenizer
            {"albert_config_file": f["big_vocab_config"], "init_checkpoint": None},
            "has 1000 pieces but the ALBERT config's vocab_size is 30000: a gap beyond padding",
        ),
        ("seq_exceeds_positions", {"max_seq_length": 128}, "max_position_embeddings"),
        ("zero_batch", {"train_batch_size": 0}, "--train_batch_size=0"),
        (
            "existing_output_dir_untouched",
            {"output_dir": f["existing_out"], "data_dir": f["glue_short_row"]},
            "line 3",
        ),
        ("negative_lr", {"learning_rate": -1e-5}, "--learning_rate"),
        ("warmup_exceeds_steps", {"warmup_step": 5}, "--warmup_step=5"),
        (
            "batch_vs_accumulation",
            {"gradient_accumulation_steps": 3},
            "multiple of --gradient_accumulation_steps",
        ),
        ("nothing_to_do", {"do_train": False}, "nothing to do"),
        (
            "eval_without_any_checkpoint",
            {"do_train": False, "do_eval": True, "init_checkpoint": None},
            "--init_checkpoint is required to evaluate",
        ),
        ("output_dir_is_file", {"output_dir": f["a_file"]}, "is a file"),
        ("missing_split", {"data_dir": f["glue_no_train"]}, "train.tsv"),
        ("short_row", {"data_dir": f["glue_short_row"]}, "train.tsv, line 3"),
        ("bad_label", {"data_dir": f["glue_bad_label"]}, "label 'positive'"),
        ("non_utf8_row", {"data_dir": f["glue_latin1"]}, "line 5: not UTF-8"),
        ("empty_split", {"data_dir": f["glue_empty"]}, "no examples"),
        ("unknown_flag", {"trian_step": 3}, "trian_step"),
        ("flag_wrong_type", {"train_step": "many"}, "--train_step"),
        (
            "use_tpu_without_tpu",
            {"use_tpu": True},
            "--use_tpu/--strategy_type=tpu needs a reachable TPU",
        ),
        (
            "custom_missing_column",
            {**own, "data_dir": f["own_no_column"]},
            "train.csv has no column 'text' (--text_a_column); its columns are: sentence, label",
        ),
        ("custom_empty_file", {**own, "data_dir": f["own_empty"]}, "train.csv is empty"),
        ("custom_header_only", {**own, "data_dir": f["own_header_only"]}, "has no examples"),
        (
            "custom_unseen_dev_label",
            {**own, "data_dir": f["own_unseen_dev_label"], "do_eval": True},
            "dev.csv, line 2: label 'neutral' is not among the train labels ['neg', 'pos']",
        ),
        (
            "custom_jsonl_row_without_label",
            {**own, "data_dir": f["own_bad_jsonl"]},
            "train.jsonl, line 2: no 'label' (--label_column)",
        ),
        (
            "custom_unknown_extension",
            {**own, "data_dir": None, "train_file": f["own_txt"]},
            "--train_file: " + str(f["own_txt"]) + " has the unknown extension '.txt'",
        ),
        ("custom_no_files", {**own, "data_dir": None}, "give --train_file or --data_dir"),
        (
            "custom_flag_for_glue",
            {"text_a_column": "review"},
            "--text_a_column: only for --task_name=custom",
        ),
        ("export_dir_is_file", {"export_dir": f["a_file"]}, "--export_dir: "),
        (
            "litert_length_below_its_shortest",  # export_litert's own check, before training
            {"max_seq_length": 3, "export_dir": d / "never", "export_format": "LiteRT"},
            "--max_seq_length=3: --export_format=litert writes files of at least 4 positions",
        ),
        (
            "quantize_without_export_dir_in_one_round_trip",
            {"quantize": "INT8"},
            "--quantize says what --export_dir gets: give --export_dir and "
            "--export_format=litert too",
        ),
        (
            "unknown_quantize_mode",
            {"quantize": "int4", "export_dir": d / "never", "export_format": "litert"},
            "--quantize: 'int4' is not one of none, float16, dynamic_int8, int8",
        ),
        (
            "unknown_filesystem",
            {"data_dir": "s3://bucket/glue"},
            "--data_dir s3://bucket/glue: TensorFlow has no filesystem for s3://",
        ),
        (
            "wordpiece_vocab_of_another_model",
            {"spm_model_file": None, "vocab_file": f["wordpiece_vocab"]},
            "has 1205 pieces but the ALBERT config's vocab_size is 1000",
        ),
        ("length_holds_no_text", {"max_seq_length": 2}, "--max_seq_length=2: must be >= 3"),
        (
            "output_dir_of_another_config",
            {"output_dir": f["other_config_out"]},
            "written with another config: hidden_size 64 vs 32",
        ),
        (
            "another_tasks_folder",
            {"task_name": "RTE", "data_dir": f["data"] / "MRPC"},
            "the file's columns look like MRPC's, not RTE's",
        ),
        (
            "every_missing_required_flag_at_once",
            {
                "task_name": None,
                "albert_config_file": None,
                "spm_model_file": None,
                "output_dir": None,
            },
            "missing required flags: --task_name, --albert_config_file, --output_dir, one of "
            "--spm_model_file / --vocab_file",
        ),
    ], base


def squad_cases(f):
    d = f["d"]
    base = {
        "train_file": f["squad"],
        "predict_file": f["squad"],
        "albert_config_file": f["config"],
        "init_checkpoint": f["ckpt"],
        "spm_model_file": f["spm"],
        "max_seq_length": 64,
        "doc_stride": 32,
        "max_query_length": 16,
        "do_train": True,
        "train_step": 2,
        "train_batch_size": 2,
    }
    return [
        ("truncated_json", {"train_file": f["squad_truncated"]}, "not valid JSON"),
        (
            "missing_question",
            {"train_file": f["squad_no_question"]},
            f"question {f['squad_qid']!r}",
        ),
        ("non_utf8_json", {"train_file": f["squad_latin1"]}, "not UTF-8"),
        ("train_file_missing", {"train_file": d / "none.json"}, "--train_file"),
        ("train_without_file", {"train_file": None}, "--train_file is required"),
        (
            "predict_without_file",
            {"do_eval": True, "predict_file": None},
            "--predict_file is required",
        ),
        ("doc_stride_too_long", {"doc_stride": 60}, "--doc_stride=60"),
        ("query_too_long", {"max_query_length": 70}, "--max_query_length=70"),
        ("no_spm", {"spm_model_file": None}, "one of --spm_model_file / --vocab_file"),
        ("seq_exceeds_positions", {"max_seq_length": 384}, "max_position_embeddings"),
        ("empty_json", {"train_file": f["empty"]}, "is empty"),
        ("export_dir_is_file", {"export_dir": f["a_file"]}, "--export_dir: "),
    ], base


def race_cases(f):
    base = {
        "data_dir": f["race"],
        "albert_config_file": f["config"],
        "init_checkpoint": f["ckpt"],
        "spm_model_file": f["spm"],
        "max_seq_length": 64,
        "max_qa_length": 16,
        "do_train": True,
        "do_eval": False,
        "train_step": 2,
        "warmup_step": 0,
        "train_batch_size": 2,
    }
    return [
        (
            "explicit_warmup_exceeds_steps",  # a default one adapts (tests/test_first_run.py)
            {"warmup_step": 5},
            "--warmup_step=5 exceeds --train_step=2",
        ),
        ("qa_longer_than_sequence", {"max_qa_length": 100}, "--max_qa_length=100"),
        ("missing_dev_split", {"do_eval": True}, "dev/middle"),
        ("bad_answer_letter", {"data_dir": f["race_bad_answer"]}, "expected A-D"),
        ("truncated_passage", {"data_dir": f["race_truncated"]}, "invalid JSON"),
        ("high_and_middle_only", {"high_only": True, "middle_only": True}, "--high_only"),
        ("zero_eval_batch", {"eval_batch_size": 0}, "--eval_batch_size=0"),
    ], base


def pretraining_cases(f):
    d = f["d"]
    base = {
        "albert_config_file": f["config"],
        "input_file": f["tfrecord"],
        "max_seq_length": 64,
        "max_predictions_per_seq": 10,
        "train_batch_size": 8,
        "num_train_steps": 2,
    }
    return [
        ("records_vs_max_predictions", {"max_predictions_per_seq": 20}, "max_predictions_per_seq"),
        ("records_vs_max_seq_length", {"max_seq_length": 32}, "--max_seq_length asks for 32"),
        ("no_matching_records", {"input_file": str(d / "none-*.tfrecord")}, "no file matches"),
        ("corrupt_records", {"input_file": f["bad_tfrecord"]}, "not a readable TFRecord"),
        (
            "record_ids_beyond_vocab",
            {"albert_config_file": f["tiny_vocab_config"]},
            "vocab_size 10",
        ),
        (
            "ckpt_vs_config",
            {"albert_config_file": f["wide_config"], "init_checkpoint": f["ckpt"]},
            "does not fit checkpoint",
        ),
        ("zero_lr", {"learning_rate": 0}, "--learning_rate"),
        ("multi_worker_without_tf_config", {"strategy_type": "multi_worker_mirrored"}, "TF_CONFIG"),
        ("nothing_to_do", {"do_train": False}, "nothing to do"),
        (
            "eval_without_any_checkpoint",
            {"do_train": False, "do_eval": True},
            "--init_checkpoint is required for --do_eval",
        ),
        ("output_dir_is_file", {"output_dir": f["a_file"]}, "is a file"),
        ("no_config", {"albert_config_file": None}, "--albert_config_file is required"),
        # the default --eval_batch_size 64, the fixture's 32 records: not one whole batch
        ("eval_batch_beyond_records", {"do_eval": True}, "--eval_batch_size=64 is more than"),
    ], base


def pretraining_data_cases(f):
    d = f["d"]
    base = {
        "input_file": f["corpus"],
        "spm_model_file": f["spm"],
        "max_seq_length": 64,
        "max_predictions_per_seq": 10,
        "dupe_factor": 1,
    }
    return [
        ("masked_lm_prob_above_one", {"masked_lm_prob": 1.5}, "--masked_lm_prob=1.5"),
        ("negative_short_seq_prob", {"short_seq_prob": -0.1}, "--short_seq_prob"),
        ("zero_dupe_factor", {"dupe_factor": 0}, "--dupe_factor=0"),
        ("input_missing", {"input_file": d / "none.txt"}, ("--input_file", "none.txt")),
        ("input_empty", {"input_file": f["empty"]}, "empty"),
        ("input_only_blank_lines", {"input_file": f["blank"]}, "only blank lines"),
        ("input_not_utf8", {"input_file": f["latin1"]}, "latin1.txt:2: not UTF-8"),
        ("no_tokenizer", {"spm_model_file": None}, "one of --spm_model_file / --vocab_file"),
        ("spm_invalid", {"spm_model_file": f["not_spm"]}, "not a SentencePiece model"),
        ("output_is_folder", {"output_file": d}, "is a folder"),
        ("no_output_file", {"output_file": None}, "missing required flag: --output_file"),
    ], base


def argv_of(base, change, out, out_flag="output_dir"):
    """Command-line flags of base + change, output in `out` unless the case sets it."""
    flags = {**base, **change}
    if out_flag not in change:
        flags[out_flag] = out / "x.tfrecord" if out_flag == "output_file" else out
    argv = []
    for name, value in flags.items():
        if value is None:
            continue
        argv.append(
            f"--{name}"
            if value is True
            else f"--no{name}"
            if value is False
            else f"--{name}={value}"
        )
    return argv


# ---- the checks ---------------------------------------------------------------------------------
def problems(case_id, code, stderr, expected):
    """What is wrong with one bad-input run (empty when it ended as it should)."""
    lines = [l for l in stderr.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("error: ")]
    found = []
    if code != 2:
        found.append(f"exit code {code}")
    if "Traceback" in stderr:
        found.append("traceback")
    if len(errors) != 1 or not lines or lines[-1] != errors[0]:
        found.append(f"{len(errors)} error lines (must be 1, and last)")
    else:  # `expected`: one substring of the error line, or a tuple of them
        for part in (expected,) if isinstance(expected, str) else expected:
            if part not in errors[0]:
                found.append(f"error line lacks {part!r}")
    stray = [l for l in lines if l not in errors and not LOG_LINE.match(l)]
    if stray:
        found.append(f"non-log lines {stray[:2]}")
    return [f"{case_id}: {p}\n    stderr: {stderr[-600:]!r}" for p in found]


def snapshot(path):
    """Content of a file, sorted listing of a folder, or None when absent."""
    if os.path.isfile(path):
        return open(path, "rb").read()
    return sorted(os.listdir(path)) if os.path.isdir(path) else None


DRIVER_CASES = {
    "run_classifier.py": "classifier_cases",
    "run_squad.py": "squad_cases",
    "run_race.py": "race_cases",
    "run_pretraining.py": "pretraining_cases",
    "create_pretraining_data.py": "pretraining_data_cases",
}


def case_argvs(driver, cases, base, folder):
    """Each case's argv (output in folder/<case>/out) and the path it must leave as it was."""
    argvs, outs = [], []
    out_flag = "output_file" if driver == "create_pretraining_data.py" else "output_dir"
    for case_id, change, _ in cases:
        out = folder / case_id / "out"
        argvs.append(argv_of(base, change, out, out_flag))
        outs.append(change.get("output_dir") or change.get("output_file") or out)
    return argvs, [str(o) for o in outs]


@pytest.fixture(scope="module")
def batch_results(files, tmp_path_factory):
    """driver -> the problems of its cases, and "verbose" -> the --verbose_errors case's result
    (with what is left in its output folder): every driver's cases run through ONE runner
    process (TensorFlow imported once), once per test run (the xdist workers share it)."""

    def make(top):
        batches, plan = {}, {}
        for driver, make_cases in DRIVER_CASES.items():
            cases, base = globals()[make_cases](files)
            folder = top / driver
            folder.mkdir()
            argvs, watched = case_argvs(driver, cases, base, folder)
            batches[os.path.join(ROOT, driver)] = argvs
            plan[driver] = (cases, watched, [snapshot(w) for w in watched], folder)
        (top / "verbose").mkdir()
        batches[os.path.join(ROOT, "create_pretraining_data.py")].append(verbose_argv(files, top))
        batches_file, results_file = top / "batches.json", top / "results.json"
        batches_file.write_text(json.dumps(batches))
        r = python_processes.run(
            [sys.executable, RUNNER, str(batches_file), str(results_file)],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,
        )
        assert r.returncode == 0, r.stderr[-3000:]
        results = json.loads(results_file.read_text())
        verbose = results[os.path.join(ROOT, "create_pretraining_data.py")].pop()
        found = {
            driver: batch_problems(cases, results[os.path.join(ROOT, driver)], *rest)
            for driver, (cases, *rest) in plan.items()
        }
        return {**found, "verbose": {**verbose, "left": sorted(os.listdir(top / "verbose"))}}

    return once_per_test_run(tmp_path_factory, "bad_input_cases", make)[0]


def verbose_argv(files, top):
    """create_pretraining_data.py flags with a bad --masked_lm_prob and --verbose_errors."""
    return [
        "--input_file=" + str(files["corpus"]),
        f"--output_file={top / 'verbose' / 'x.tfrecord'}",
        f"--spm_model_file={files['spm']}",
        "--masked_lm_prob=1.5",
        "--verbose_errors",
    ]


def batch_problems(cases, results, watched, before, folder):
    """What is wrong with one driver's batch of cases: the list of problems."""
    found = []
    for (case_id, _, expected), result, watch, old in zip(cases, results, watched, before):
        found += problems(case_id, result["code"], result["stderr"], expected)
        if snapshot(watch) != old:
            found.append(f"{case_id}: {watch} was created or changed")
    written = sorted(os.listdir(folder))
    if written:
        found.append(f"cases wrote files: {written}")
    return found


@pytest.mark.parametrize("driver", list(DRIVER_CASES))
def test_bad_input_is_one_error_line_exit_2_nothing_written(driver, batch_results):
    found = batch_results[driver]
    assert not found, "\n".join(found)


def test_the_cases_cover_at_least_40_kinds(files):
    ids = [
        c[0]
        for make in (
            classifier_cases,
            squad_cases,
            race_cases,
            pretraining_cases,
            pretraining_data_cases,
        )
        for c in make(files)[0]
    ]
    assert len(ids) >= 40 and len(set(ids)) >= 40


# ---- real processes: the exit code and stderr a user sees ---------------------------------------
def test_real_process_one_line_exit_2(files, tmp_path):
    """run_classifier.py with an unknown task, as a shell runs it: exit 2, the error line last."""
    cases, base = classifier_cases(files)
    argv = argv_of(base, {"task_name": "sst2"}, tmp_path / "out")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "run_classifier.py")] + argv,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert problems("real", r.returncode, r.stderr, "did you mean 'sst-2'") == []
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--export_format=tflite"], "--export_format: tflite is not a format"),
        (["--quantize=Int8"], "--quantize says what --export_dir gets: give --export_dir and"),
        (
            ["--export_dir=EXPORT", "--export_format=litert", "--max_seq_length=3"],
            "--max_seq_length=3: --export_format=litert writes files of at least 4 positions",
        ),
    ],
)
def test_bad_export_flags_are_refused_before_tensorflow_loads(files, tmp_path, flags, message):
    """A `tensorflow` that cannot be imported shadows the real one: the error still comes."""
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "tensorflow.py").write_text('raise ImportError("TensorFlow was imported")\n')
    cases, base = classifier_cases(files)
    flags = [f.replace("EXPORT", str(tmp_path / "export")) for f in flags]
    argv = argv_of(base, {}, tmp_path / "out") + flags
    r = subprocess.run(
        [sys.executable, os.path.join(ROOT, "run_classifier.py")] + argv,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=f"{shadow}{os.pathsep}{ROOT}"),
    )
    assert problems("before_tf", r.returncode, r.stderr, message) == []
    assert sorted(os.listdir(tmp_path)) == ["shadow"]


def test_verbose_errors_keeps_the_traceback(batch_results):
    """--verbose_errors prints the traceback, then the environment's short block (versions and
    incompatibilities, albert_tf.core.environment), then the same one error line last (a case of
    the runner's create_pretraining_data.py batch, after its bad-input cases)."""
    from albert_tf.core.environment import short_block

    r = batch_results["verbose"]
    lines = r["stderr"].strip().splitlines()
    block = short_block().splitlines()
    assert r["code"] == 2 and lines[-1].startswith("error: --masked_lm_prob")
    assert lines[-1 - len(block) : -1] == block
    assert any(ln.startswith("Traceback") for ln in lines[: -1 - len(block)])
    assert r["left"] == []  # nothing written


# ---- the library checks behind the drivers -------------------------------------------------------
def test_config_typo_is_an_error_but_released_unused_keys_round_trip():
    from albert_tf.core.config import KNOWN_UNUSED_KEYS, AlbertConfig
    from albert_tf.core.errors import InputError

    released = {
        "vocab_size": 30000,
        "hidden_size": 768,
        "num_attention_heads": 12,
        "net_structure_type": 0,
        "gap_size": 0,
        "num_memory_blocks": 0,
        "layers_to_keep": [],
    }
    assert set(KNOWN_UNUSED_KEYS) <= set(released)
    config = AlbertConfig.from_dict(released)
    assert {k: config.to_dict()[k] for k in released} == released
    with pytest.raises(InputError, match="unknown key 'hiden_size'; did you mean 'hidden_size'"):
        AlbertConfig.from_dict({**released, "hiden_size": 768})


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"num_hidden_groups": 2, "inner_group_num": 2},
        {"sharing": "attention"},
        {"sharing": "ffn"},
        {"sharing": "none"},
        {"embedding_size": 32},
    ],
)
def test_expected_shapes_are_those_of_the_built_model(changes, fixtures_dir):
    """The config-only shape table equals the variables a built model has, for every layout."""
    import numpy as np

    from albert_tf.core.config import AlbertConfig
    from albert_tf.formats.tf1 import expected_encoder_shapes
    from albert_tf.modeling.albert_model import AlbertModel
    from albert_tf.modeling.names import encoder_variable_map

    config = AlbertConfig.from_json_file(
        fixtures_dir / "albert_tiny" / "albert_config.json"
    ).replace(**changes)
    model = AlbertModel(config)
    ids = np.zeros((1, 4), np.int32)
    model({"input_ids": ids, "input_mask": ids + 1, "segment_ids": ids})
    built = {name: list(var.shape) for name, var in encoder_variable_map(model).items()}
    assert expected_encoder_shapes(config) == built


def test_init_from_checkpoint_errors_and_report(fixtures_dir, tmp_path, caplog):
    """A missing path and an object checkpoint without the encoder are InputErrors; a TF1 load
    logs its report."""
    import logging

    import numpy as np
    import tensorflow as tf

    from albert_tf.core.config import AlbertConfig
    from albert_tf.core.errors import InputError
    from albert_tf.engine.init_checkpoint import init_from_checkpoint
    from albert_tf.modeling.finetuning_models import AlbertClassifier

    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    model = AlbertClassifier(config, 2, 0.1)
    ids = np.zeros((1, 4), np.int32)
    model({"input_ids": ids, "input_mask": ids + 1, "segment_ids": ids})
    with pytest.raises(InputError, match="^init_checkpoint: TF checkpoint not found"):
        init_from_checkpoint(model, tmp_path / "nothing")
    partial = tf.train.Checkpoint(
        model=tf.train.Checkpoint(albert=tf.train.Checkpoint(embedding=model.albert.embedding))
    ).write(str(tmp_path / "partial"))
    with pytest.raises(InputError, match=r"holds \d+ of the \d+ encoder variables"):
        init_from_checkpoint(model, partial)
    from albert_tf.formats.tf1 import load_original_checkpoint

    with pytest.raises(InputError, match=f"^ckpt_path: {partial} is a TF2 object checkpoint"):
        load_original_checkpoint(model, partial)  # the project's own: says what it is
    with caplog.at_level(logging.INFO, logger="absl"):  # another test may have quieted absl
        report = init_from_checkpoint(model, fixtures_dir / "albert_tiny" / "model.ckpt-best")
    assert "bert/embeddings/word_embeddings" in report.loaded
    assert report.missing and not any(n.startswith("bert/") for n in report.missing)  # a new head
    assert "loaded" in caplog.text and "missing" in caplog.text


def test_random_init_warning(tmp_path, caplog):
    """--do_train without --init_checkpoint (and nothing to resume) warns once; with one, not."""
    import logging

    from albert_tf.engine.finetuning import warn_if_random_init
    from albert_tf.engine.finetuning_options import FineTuningOptions

    with caplog.at_level(logging.WARNING):
        assert warn_if_random_init(FineTuningOptions(output_dir=str(tmp_path)), do_train=True)
    assert sum("random weights" in r.getMessage() for r in caplog.records) == 1
    assert not warn_if_random_init(
        FineTuningOptions(output_dir=str(tmp_path), init_checkpoint="x"), True
    )
    assert not warn_if_random_init(FineTuningOptions(output_dir=str(tmp_path)), do_train=False)


def test_init_from_a_model_garden_checkpoint_uses_the_models_config(fixtures_dir):
    """--init_checkpoint=<Model Garden TF2 checkpoint> (which does not store its number of
    layers) loads with the model's config, i.e. --albert_config_file: no error asking for it."""
    import numpy as np

    from albert_tf.core.config import AlbertConfig
    from albert_tf.engine.init_checkpoint import init_from_checkpoint
    from albert_tf.formats.tf1 import read_original_checkpoint
    from albert_tf.modeling.finetuning_models import AlbertClassifier
    from albert_tf.modeling.names import encoder_variable_map

    config = AlbertConfig.from_json_file(fixtures_dir / "albert_tiny" / "albert_config.json")
    model = AlbertClassifier(config, 2, 0.1)
    ids = np.zeros((1, 4), np.int32)
    model({"input_ids": ids, "input_mask": ids + 1, "segment_ids": ids})
    path = fixtures_dir / "tfhub" / "tf2_checkpoints" / "albert_tiny_pretrainer-1"
    report = init_from_checkpoint(model, path)
    assert "bert/embeddings/word_embeddings" in report.loaded
    tf1 = read_original_checkpoint(fixtures_dir / "albert_tiny" / "model.ckpt-best")
    for name, variable in encoder_variable_map(model.albert).items():
        np.testing.assert_array_equal(variable.numpy(), tf1[name])
