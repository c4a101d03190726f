"""Run a driver's command lines against a ram:// "bucket" in ONE process (ram:// lives in one
process, and two drivers' absl flags cannot be defined in one): upload local files, run each
command line as `python DRIVER ARGS` would through albert_tf.drivers.cli.run, then report what
the bucket holds and copy the trees a test reads with local-only tools to local folders.
Written as JSON.

    python ram_runner.py PLAN.json RESULTS.json
PLAN.json: {"driver": path, "uploads": [[local, remote], ...], "cases": [argv, ...],
            "trees": [remote prefix, ...], "sha256": [remote file, ...], "texts": [remote file,
            ...], "downloads": [[remote prefix, local folder], ...]}
RESULTS.json: {"cases": [{"argv", "code", "stderr"}], "trees": {prefix: [relative paths]},
               "sha256": {file: hex digest}, "texts": {file: text}}
"""

import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # tests/

from bad_input_runner import load_driver, run_case  # noqa: E402
import ramfs  # noqa: E402


def main():
    plan_path, results_path = sys.argv[1:3]
    with open(plan_path, encoding="utf-8") as f:
        plan = json.load(f)
    import tensorflow as tf

    for local, remote in plan.get("uploads", []):
        ramfs.upload(local, remote)
    module = load_driver(plan["driver"])
    cases = []
    for argv in plan["cases"]:
        code, stderr = run_case(module, plan["driver"], argv)
        cases.append({"argv": argv, "code": code, "stderr": stderr})
    results = {
        "cases": cases,
        "trees": {p: ramfs.tree(p) for p in plan.get("trees", [])},
        "sha256": {},
        "texts": {},
    }
    for path in plan.get("sha256", []):
        if tf.io.gfile.exists(path):
            with tf.io.gfile.GFile(path, "rb") as f:
                results["sha256"][path] = hashlib.sha256(f.read()).hexdigest()
    for path in plan.get("texts", []):
        if tf.io.gfile.exists(path):
            with tf.io.gfile.GFile(path, "r") as f:
                results["texts"][path] = f.read()
    for remote, local in plan.get("downloads", []):
        for rel in ramfs.tree(remote) if tf.io.gfile.exists(remote) else []:
            os.makedirs(os.path.dirname(os.path.join(local, rel)), exist_ok=True)
            ramfs.download(f"{remote}/{rel}", os.path.join(local, rel))
    with open(results_path, "w", encoding="utf-8") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
