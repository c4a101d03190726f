"""Pretraining (the paper's MLM + SOP): the data builder from raw text to TFRecords, the
input pipeline, the pretraining task on the engine, and the demo."""
