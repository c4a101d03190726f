"""Runs a LiteRT file through the TFLite Task Library and prints JSON (run by the tests in the
Task Library's own venv, .ci/tasklib_env.sh: tflite-support 0.4.4 cannot share TensorFlow
2.21's environment).

    <venv>/bin/python tasklib_runner.py classifier MODEL INPUTS.json
    <venv>/bin/python tasklib_runner.py question_answerer MODEL INPUTS.json

INPUTS: a JSON list of texts (classifier) or of {"context", "question"} (question answerer).
Prints {"results": [...]}, one entry per input: {"categories": [{"index", "name", "score"}]}
(in the order the Task Library returns them) or {"answers": [{"text", "logit", "start",
"end"}]} (`start`/`end`: window positions of the span's first and last piece); an input that
fails is {"error": ...}. A model that does not load prints {"error": ..., "stage": "create"}
and exits 2; a crash of the native library shows as a negative return code.
"""

import argparse
import ctypes
import glob
import json
import os
import sys


def _preload_libusb():
    """libusb-1.0.so.0 for the Task Library's native modules (the venv's .pth does it too,
    except under `python -S`)."""
    candidates = [os.path.join(sys.prefix, "lib", "libusb", "libusb-1.0.so.0")]
    pattern = os.path.join(sys.prefix, "lib", "python3*", "site-packages", "libusb_package")
    candidates += glob.glob(os.path.join(pattern, "libusb-1.0.so"))
    for path in candidates:
        if os.path.exists(path):
            ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            return


def _each(items, call):
    results = []
    for item in items:
        try:
            results.append(call(item))
        except Exception as e:  # one input's failure is recorded, the others still run
            results.append({"error": f"{type(e).__name__}: {e}"})
    return results


def classify(model, texts):
    from tflite_support.task import text  # the venv's package, not importable elsewhere

    classifier = text.BertNLClassifier.create_from_file(model)

    def one(t):
        categories = classifier.classify(t).classifications[0].categories
        return {
            "categories": [
                {"index": c.index, "name": c.category_name, "score": c.score} for c in categories
            ]
        }

    return _each(texts, one)


def answer(model, items):
    from tflite_support.task import text  # the venv's package, not importable elsewhere

    answerer = text.BertQuestionAnswerer.create_from_file(model)

    def one(item):
        answers = answerer.answer(item["context"], item["question"]).answers
        return {
            "answers": [
                {"text": a.text, "logit": a.pos.logit, "start": a.pos.start, "end": a.pos.end}
                for a in answers
            ]
        }

    return _each(items, one)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=["classifier", "question_answerer"])
    parser.add_argument("model")
    parser.add_argument("inputs")
    args = parser.parse_args(argv)
    _preload_libusb()
    with open(args.inputs, encoding="utf-8") as f:
        inputs = json.load(f)
    try:
        results = (classify if args.task == "classifier" else answer)(args.model, inputs)
    except Exception as e:  # the model did not load
        print(json.dumps({"error": f"{type(e).__name__}: {e}", "stage": "create"}))
        return 2
    print(json.dumps({"results": results}, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
