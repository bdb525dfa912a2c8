#!/usr/bin/env python3
"""RSS of a running process by mapping kind, from /proc/PID/smaps: thread stacks (8 MiB
anonymous maps), malloc arenas (anonymous maps of >= ~60 MiB or 64 MiB-aligned), [heap],
and file mappings by name. Used to tell allocator growth from stack growth in the load test
(docs/RELIABILITY.md, "Load"):

    build/bin/load_bench --seconds 60 &  sleep 30; bench/smaps_summary.py $(pgrep -n hotkey-coordina)
"""
import collections
import re
import sys


def main():
    if len(sys.argv) != 2:
        print("usage: smaps_summary.py PID", file=sys.stderr)
        return 2
    rss = collections.Counter()
    kind = None
    with open(f"/proc/{sys.argv[1]}/smaps") as f:
        for line in f:
            m = re.match(r"^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$", line)
            if m:
                start, end, name = int(m.group(1), 16), int(m.group(2), 16), m.group(3)
                size_kib = (end - start) // 1024
                if name:
                    kind = name if name.startswith("[") else name.rsplit("/", 1)[-1]
                elif size_kib == 8192:
                    kind = "thread-stack"
                elif size_kib >= 60000 or start % (64 << 20) == 0:
                    kind = "malloc-arena"
                else:
                    kind = "anon-other"
            elif line.startswith("Rss:"):
                rss[kind] += int(line.split()[1])
    print(f"total {sum(rss.values())} KiB:",
          " ".join(f"{k}={v}" for k, v in rss.most_common(8)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
