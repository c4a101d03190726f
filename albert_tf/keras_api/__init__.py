"""The Keras-native task API on raw strings: task models with their preprocessor inside."""
