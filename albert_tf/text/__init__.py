"""Text to ids: Google-exact SentencePiece/WordPiece tokenization, the in-graph tokenizer,
and packing into [CLS] A [SEP] B [SEP] features."""
