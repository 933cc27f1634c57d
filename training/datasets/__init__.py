"""What judges are trained and fitted on: LoRA examples, fitting sets, generated pairs."""
