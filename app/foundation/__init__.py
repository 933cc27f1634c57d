"""The bottom layer: errors and data-file loading, which models/ and the core both use."""
