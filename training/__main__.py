"""`python -m training`: see training/lora/pipeline.py."""

import sys

from training.lora.pipeline import main

sys.exit(main())
