"""Deployment: LiteRT files of every task model (`litert`), float16 / int8 quantization and
its measured accuracy (`quantization`), the TFLite Task Library's metadata written in pure Python
(`tflite_metadata`, `tflite_model`, `task_library`) with a SentencePiece model that folds
Google's preprocessing into its normalizer (`spm_normalizer`), LiteRT files that take strings
(`text_input`), the interpreter that runs them (`runtime`) and the drivers' `--export_format`
(`driver_exports`). docs/deployment.md says which runtime runs which file."""
