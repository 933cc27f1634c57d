"""From a trained adapter to a registry judge: DARE merge, GGUF/INT8 export, entry, card."""
