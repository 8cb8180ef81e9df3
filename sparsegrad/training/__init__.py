"""Training: the raw in-place apply ops (``training_ops``) and the optimizers."""
