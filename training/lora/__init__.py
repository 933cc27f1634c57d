"""Training LoRA judges: the configs, the pipeline, the trainers (judge and reward model)."""
