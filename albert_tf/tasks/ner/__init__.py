"""Named-entity recognition (token classification): CoNLL-2003-style reader and tag checks,
entity-level metrics as seqeval computes them."""
