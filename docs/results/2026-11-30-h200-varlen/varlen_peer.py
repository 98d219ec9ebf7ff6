"""The packed-batch peers of peers/attention.py alone (run_varlen), rows as JSON lines."""
import json
import sys

sys.path.insert(0, "peers")
import torch  # noqa: E402

import attention  # noqa: E402

for r in attention.run_varlen(torch, False):
    print(json.dumps(r), flush=True)
