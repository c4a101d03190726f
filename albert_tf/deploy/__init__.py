"""Deployment: LiteRT files of every task model (`litert`), float16 / int8 quantization and
its measured accuracy (`quantization`), the TFLite Task Library's metadata written in pure Python
(`tflite_metadata`, `tflite_model`, `task_library`) with a SentencePiece model that folds
Google's preprocessing into its normalizer (`spm_normalizer`), LiteRT files that take strings
(`text_input`), the interpreter that runs them (`runtime`), every format in one version folder
(`exports`, its vocabulary in `export_formats`), and ONNX (`onnx`, run by ONNX Runtime or
OpenVINO) with the encoder written in the op patterns ONNX Runtime fuses (`onnx_encoder`) and
small rewrites of the converted graph (`onnx_passes`). docs/deployment.md says which runtime
runs which file."""
