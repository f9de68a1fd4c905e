"""Training: the loop, optimization, mixed precision, checkpoints, logging, DDP."""
