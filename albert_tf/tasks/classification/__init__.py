"""Generic text classification: single-label, multi-label and regression on any processor,
your own CSV/TSV/JSONL files included; the base tasks.glue builds on."""
