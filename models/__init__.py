"""Judge models: backends behind one protocol, the registry, and the model store.

Importing this package picks the build of llama.cpp this process (and the engine workers it
starts) will load: the portable one, or a faster variant this CPU runs
(models/engine_library.py).
"""

from models.engine_library import choose_for_process as _choose_engine_library

_choose_engine_library()
