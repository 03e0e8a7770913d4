"""Marginal instructions per operation from two callgrind runs of different lengths.

    python3 callgrind_marginal.py SHORT.txt SHORT.json LONG.txt LONG.json [--top N]

Each TXT is `callgrind_annotate --inclusive=yes --threshold=100 --auto=no` of a whole run, each
JSON the run's summary with its "requests" (benches/bucket-load prints one). Per function, the
difference of the two inclusive counts over the difference of the two request counts: what
one more operation costs, with start-up (config loading, building the client, the TLS roots)
cancelled out. Prints the program's marginal total, then the N (default 40) costliest
functions, one per line: instructions per operation, then the function.
"""

import json
import sys

from callgrind_layers import LINE  # one line of callgrind_annotate: count, "file:function"


def load(txt_path, json_path):
    requests = json.load(open(json_path))["requests"]
    counts = {}
    for line in open(txt_path):
        m = LINE.match(line)
        if not m:
            continue
        value = int(m.group(1).replace(",", ""))
        where = m.group(2)
        name = "PROGRAM TOTALS" if where.endswith("PROGRAM TOTALS") else where.split(":", 1)[-1]
        counts[name] = max(counts.get(name, 0), value)
    return requests, counts


def main(argv):
    top = 40
    if "--top" in argv:
        i = argv.index("--top")
        top = int(argv[i + 1])
        del argv[i : i + 2]
    short_n, short = load(argv[0], argv[1])
    long_n, long_ = load(argv[2], argv[3])
    extra = long_n - short_n
    if extra <= 0:
        sys.exit("the long run must hold more requests than the short one")
    rows = sorted(
        ((long_[k] - short.get(k, 0)) / extra, k) for k in long_ if k != "PROGRAM TOTALS"
    )
    total = (long_.get("PROGRAM TOTALS", 0) - short.get("PROGRAM TOTALS", 0)) / extra
    print(f"requests {short_n} / {long_n}; marginal instructions per request {total:,.0f}")
    for value, name in reversed(rows[-top:]):
        print(f"{value:10,.0f}  {name[:160]}")


if __name__ == "__main__":
    main(sys.argv[1:])
