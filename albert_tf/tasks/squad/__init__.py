"""SQuAD v1.1/v2.0 span extraction: features, model heads, task, post-processing, official eval."""
