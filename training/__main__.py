"""`python -m training`: see training/pipeline.py."""

import sys

from training.pipeline import main

sys.exit(main())
