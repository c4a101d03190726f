"""Deployment files of trained models: ONNX (`onnx`, run by ONNX Runtime or OpenVINO), with the
encoder written in the op patterns ONNX Runtime fuses (`onnx_encoder`) and small rewrites of the
converted graph (`onnx_passes`)."""
