"""RACE multiple choice: reader, 4-choice encoding, task and metrics."""
