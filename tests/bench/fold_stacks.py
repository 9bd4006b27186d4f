#!/usr/bin/python3
"""fold_stacks.py - `perf script` output to folded stacks, for a flame graph.

    perf script -i m2.perf.data | tests/bench/fold_stacks.py [--count] > m2.folded

Each output line is one distinct stack, outermost frame first, frames joined
by ';', then a space and the samples' summed period (or their count with
--count): the input format of flame graph renderers (flamegraph.pl,
inferno, speedscope). The first frame is the thread's name as perf script
prints it (its comm; striked names its gRPC threads). Offsets (+0x..) are dropped, so
one function is one frame; a frame perf could not name is "[unknown]" with
its library in brackets, e.g. "[libc.so.6]". Python standard library only.
"""
import argparse
import collections
import os
import re
import sys

# "striked 1234/1240 [001] 5.123456:     1001001 cpu-clock:pppH: " (the CPU column is optional)
HEAD = re.compile(r"^(?P<comm>\S.*?)\s+(?P<pid>\d+)(?:/(?P<tid>\d+))?\s+(?:\[\d+\]\s+)?[\d.]+:\s*"
                  r"(?:(?P<period>\d+)\s+)?(?P<event>\S+?):")
# "\t    7f12ab34 func+0x1c (/usr/lib/x86_64-linux-gnu/libc.so.6)"
FRAME = re.compile(r"^\s+(?P<addr>[0-9a-f]+)\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")


def frame_name(sym, dso):
    sym = re.sub(r"\+0x[0-9a-f]+$", "", sym.strip())
    if not sym or sym == "[unknown]":
        return f"[{os.path.basename(dso) or 'unknown'}]"
    return sym.replace(";", ":").replace(" ", "_")


def fold(lines, count=False):
    """Counter {folded stack: weight} of perf script's text."""
    out = collections.Counter()
    comm, weight, frames = None, 0, []

    def flush():
        if comm is not None:
            out[";".join([comm] + frames[::-1])] += weight

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            comm, frames = None, []
            continue
        if line[0] not in " \t":
            flush()
            frames = []
            m = HEAD.match(line)
            if not m:
                comm = None
                continue
            comm = m.group("comm").strip().replace(";", ":").replace(" ", "_")
            weight = 1 if count or not m.group("period") else int(m.group("period"))
            continue
        m = FRAME.match(line)
        if m and comm is not None:
            frames.append(frame_name(m.group("sym"), m.group("dso")))
    flush()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", action="store_true", help="weigh each sample 1, not by its period")
    a = ap.parse_args()
    folded = fold(sys.stdin, count=a.count)
    for stack, w in sorted(folded.items()):
        print(f"{stack} {w}")


if __name__ == "__main__":
    main()
