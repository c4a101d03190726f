"""The ALBERT network in Keras 3: factorized embedding, the shared Transformer, heads, and every
model class (encoder, pretrainer, classifier, multiple choice, SQuAD), with Google's names."""
