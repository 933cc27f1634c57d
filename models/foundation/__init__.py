"""The bottom layer: errors and data-file loading, which every other folder (models/, the core,
training) uses and which uses nothing of ours."""
