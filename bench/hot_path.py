#!/usr/bin/env python3
"""Instructions executed per call inside one shared object, from a callgrind
output file, leaving out waiting (bench/hot_path.sh):

    hot_path.py CALLGRIND_OUT OBJECT_SUFFIX CALLS

Sums the self costs (Ir) charged to the object's functions, less those of
`Waiter::until_slow` and of the conditions it polls (the closures it calls,
which run once per poll; the first check of a wait happens inline in its
caller and stays counted), and divides by CALLS.

Callgrind writes each cost line under the object (ob=) and function (fn=)
in force; a name is given once and then referred to by its number, also
from the cob=/cfn= lines that name a call's callee.  The line after calls=
holds the callee's inclusive cost, not the caller's self cost.
"""
import re
import sys
from collections import Counter

WAIT = "Waiter::until_slow"


def costs(path, suffix):
    """Self cost per function of the object, and the functions that the
    wait loop calls."""
    names = {}
    obj = fn = None
    own = Counter()
    polled = set()
    after_call = False
    for raw in open(path, encoding="utf-8", errors="replace"):
        line = raw.rstrip("\n")
        m = re.match(r"^(c?ob|c?fn|c?fi|c?fe)=\((\d+)\)(?: (.*))?$", line)
        if m:
            kind, number, name = m[1], m[2], m[3]
            key = (kind.lstrip("c"), number)
            if name:
                names[key] = name
            if kind == "ob":
                obj = names.get(key, "")
            elif kind == "fn":
                fn = names.get(key, "")
            elif kind == "cfn" and fn and WAIT in fn:
                polled.add(names.get(key, ""))
            continue
        if line.startswith("calls="):
            after_call = True
            continue
        if line[:1].isdigit() or line[:1] in "+-*":
            if after_call:
                after_call = False
                continue
            fields = line.split()
            if len(fields) >= 2 and obj and obj.endswith(suffix):
                own[fn] += int(fields[-1])
    return own, polled


def main():
    path, suffix, calls = sys.argv[1], sys.argv[2], int(sys.argv[3])
    own, polled = costs(path, suffix)
    waiting = sum(c for f, c in own.items() if WAIT in f or f in polled)
    print((sum(own.values()) - waiting) // calls)


if __name__ == "__main__":
    main()
