"""The command-line shell: the layer just under the commands (run_*.py,
create_pretraining_data.py, `python -m albert_tf.convert`, `python -m albert_tf.extract_features`).

It holds everything that knows about absl flags: their definitions (`flags`,
`distribution_flags`), the checks each driver makes of them before any work (`validation` for the
shared ones, `classifier`, `squad`, `race`, `ner`, `pretraining` for each driver's), the recipes'
and warmup's flag handling (`recipes`), the export flags (`exports`), and the console and entry
point that turn errors into one `error:` line (`console`, `cli`). Below this layer no function
takes the flags object: the library takes typed options (`FineTuningOptions`, `RunConfig`,
`albert_tf.deploy.exports.ExportOptions`) and raises errors in its arguments' names.
"""
