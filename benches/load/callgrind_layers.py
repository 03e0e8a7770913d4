"""The gateway's instructions per tools/call, split by layer (scripts/bench-load --callgrind).

    python3 callgrind_layers.py ANNOTATE.txt WRK.json

ANNOTATE.txt is `callgrind_annotate --inclusive=yes --threshold=100 --auto=no` of a dump taken
over the wrk run whose summary is WRK.json (its "requests": the calls). Prints one JSON object:
{"calls", "total", "layers": {name: instructions per call}}; "the rest" is what no named layer
holds (hyper, axum, rmcp, tokio, the request span and its log line).

Each layer is the inclusive count of its functions (an async fn: its poll): the work done inside it, in the task
that runs it. Work a layer hands to another task (the connection tasks of the SDK's and
reqwest's HTTP clients) counts in "the rest". The layers do not nest.
"""

import json
import re
import sys

LAYERS = {
    "token bucket (DynamoDB PutItem, AWS SDK)":
        ["kosha_state::rate_limit::DynamoRateLimiter::take_turn::{{closure}}"],
    "core-api call (reqwest, resilience policy)":
        ["kosha_resilience::policy::Policy::call_with_faults::{{closure}}"],
    # The verifier itself is inlined into the edge; these two are not.
    "bearer token (shape check, verified-token cache hit)":
        ["kosha_contract::bearer::extract", "kosha_auth::verified::VerifiedTokens::get"],
    "JSON-RPC envelope check": ["mcp_gateway::http::envelope::check"],
    "tool-call log line and metrics": ["mcp_gateway::tools::observe::record"],
}

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*?)(?:\s+\[[^\]]*\])?\s*$")


def main(annotate_path, wrk_path):
    calls = json.load(open(wrk_path))["requests"]
    total = 0
    best = {f: 0 for functions in LAYERS.values() for f in functions}
    for line in open(annotate_path):
        m = LINE.match(line)
        if not m:
            continue
        count = int(m.group(1).replace(",", ""))
        where = m.group(2)
        if where.endswith("PROGRAM TOTALS"):
            total = count
            continue
        function = where.split(":", 1)[-1]  # "file:function"
        if function in best:
            best[function] = max(best[function], count)
    if not total or not calls:
        sys.exit("callgrind_layers: no totals or no calls")
    layers = {name: round(sum(best[f] for f in fs) / calls) for name, fs in LAYERS.items()}
    layers["the rest (hyper, axum, rmcp, tokio, request span)"] = round(total / calls) - sum(
        layers.values()
    )
    print(json.dumps({"calls": calls, "total": round(total / calls), "layers": layers}))


if __name__ == "__main__":
    main(*sys.argv[1:3])
