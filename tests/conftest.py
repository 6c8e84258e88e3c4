import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")


