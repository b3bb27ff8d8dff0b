#!/usr/bin/env python3
"""check-layers: fails when an #include "..." crosses a layer the wrong way.

The layers (HACKING.md, "Layers"), from the bottom: the runtime (runtime/: what
compiled models link; it includes only its own headers), the base (arena, ops,
diagnostics), the front end (AST, parser, spec language), the graph, staging, inference,
the loop IR (and its schedule pass), lowering, the backends (the IR and their options
only), and the driver
(main.c, run.c), the one place that sees everything. Each file may include the headers
of its own layer and of the layers its rule lists; anything else is reported as
FILE:LINE: includes HEADER (LAYER may not). Usage: check-layers.py [ROOT]."""
import fnmatch
import os
import re
import sys

BASE = {"base.h", "ops.h", "diag.h", "strtab.h", "json.h"} | {"tdsl.h", "tdsl_abi.h"}
FRONT = BASE | {"ast.h", "parse.h", "spec.h", "parser.tab.h", "spec.tab.h"}
GRAPH = FRONT | {"graph.h"}
CTX = GRAPH | {"ctx.h"}
IR = BASE | {"ir.h", "ir_c.h", "sched.h", "schedule.h", "sched_fuse.h"}

# (files, layer name, headers allowed); the first matching pattern applies.
RULES = [
    ("runtime/*", "the runtime", "RUNTIME"),
    ("backends/*", "a backend", "BACKEND"),
    ("src/main.c", "the driver", None),
    ("src/check.[ch]", "the driver", None),
    ("src/depfile.c", "the driver", None),
    ("src/outfile.[ch]", "the driver", None),
    ("src/guard.[ch]", "the driver", None),
    ("src/cache.[ch]", "the driver", None),
    ("src/pcompile.[ch]", "the driver", None),
    ("src/timing.c", "the driver", None),
    ("src/run.[ch]", "the driver", CTX | IR | {"run.h", "outfile.h", "guard.h"}),  # outfile: --save -
    ("src/ir.h", "the loop IR", IR),
    ("src/ir_print.c", "the loop IR", IR),
    ("src/ir_c.[ch]", "the loop IR", IR),
    ("src/ir_dyn.c", "the loop IR", IR),
    ("src/sched*", "the loop IR", IR),
    ("src/lower.c", "lowering", CTX | IR),
    ("src/infer*", "inference", CTX | {"infer.h"}),
    ("src/eval*", "staging", CTX | {"eval.h"}),
    ("src/graph_code.c", "staging", CTX | {"eval.h"}),
    ("src/ctx.[ch]", "the context", CTX),
    ("src/graph*", "the graph", GRAPH),
    ("src/ast*", "the front end", FRONT),
    ("src/parse.h", "the front end", FRONT),
    ("src/spec*", "the front end", FRONT),
    ("grammar/*", "the front end", FRONT),
    ("src/*", "the base", BASE),
]

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def rule_for(path):
    for pattern, layer, allowed in RULES:
        if fnmatch.fnmatch(path, pattern):
            return layer, allowed
    return None, None


def headers(root, top):
    """The headers under root/top (a backend may include any backend's)."""
    found = set()
    for _, _, files in os.walk(os.path.join(root, top)):
        found |= {f for f in files if f.endswith(".h")}
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    backend = set(IR) | headers(root, "backends")
    runtime = headers(root, "runtime")
    bad = 0
    for top in ("src", "backends", "runtime", "grammar"):
        for d, _, files in sorted(os.walk(os.path.join(root, top))):
            for name in sorted(files):
                if not name.endswith((".c", ".h", ".re", ".y")):
                    continue
                path = os.path.relpath(os.path.join(d, name), root)
                layer, allowed = rule_for(path)
                if allowed is None:
                    continue
                if allowed == "BACKEND":
                    allowed = backend
                elif allowed == "RUNTIME":
                    allowed = runtime
                with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and os.path.basename(m.group(1)) not in allowed:
                            print(f"{path}:{lineno}: includes {m.group(1)} ({layer} may not)")
                            bad += 1
    if bad:
        print(f"check-layers: {bad} include(s) cross a layer the wrong way")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
