"""The tensors a `tdslc --run ... --json` run printed, for the numpy oracles beside this
file: name -> float64 array shaped batch + output + input (the memory order of
`values`, CLI.md)."""
import json

import numpy as np


def arrays(lines):
    t = {}
    for line in lines:
        if line.startswith("{"):
            o = json.loads(line)
            t[o["name"]] = np.array(o["values"], dtype=np.float64).reshape(o["batch"] + o["output"] + o["input"])
    return t
