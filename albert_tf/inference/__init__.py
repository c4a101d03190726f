"""Inference on raw text with a pretrained model: per-token layer outputs, the pooled vector and
`fill_mask` (all in `representations`)."""
