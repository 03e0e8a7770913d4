"""The gateway's instructions per tools/call, split by layer (scripts/bench-load --callgrind).

    python3 callgrind_layers.py ANNOTATE.txt WRK.json [CALLGRIND.OUT]

ANNOTATE.txt is `callgrind_annotate --inclusive=yes --threshold=100 --auto=no` of a dump taken
over the wrk run whose summary is WRK.json (its "requests": the calls). Prints one JSON object:
{"calls", "total", "layers": {name: instructions per call}}; "the rest" is what no named layer
holds (hyper, axum, rmcp, tokio, the request span and its log line). Given the dump itself
(CALLGRIND.OUT), the object also holds "dynamodb_requests_per_call": the calls of the AWS SDK's
SigV4 signer (once per request sent, token-bucket writes and override reads alike) over the
calls measured, since with token leases most calls send none (issue 29).

Each layer is the inclusive count of its functions (an async fn: its poll): the work done inside it, in the task
that runs it. Work a layer hands to another task (the connection tasks of the SDK's and
reqwest's HTTP clients) counts in "the rest". The layers do not nest.
"""

import json
import re
import sys

LAYERS = {
    # The limiter's decision: a call its lease covers is decided locally, the rest write the
    # bucket (DynamoDB PutItem through the AWS SDK).
    "token bucket (lease, or DynamoDB PutItem through the AWS SDK)":
        ["kosha_state::rate_limit::DynamoRateLimiter::spend::{{closure}}"],
    "core-api call (reqwest, resilience policy)":
        ["kosha_resilience::policy::Policy::call_with_faults::{{closure}}"],
    # The verifier itself is inlined into the edge; these two are not.
    "bearer token (shape check, verified-token cache hit)":
        ["kosha_contract::bearer::extract", "kosha_auth::verified::VerifiedTokens::get"],
    "JSON-RPC envelope check": ["mcp_gateway::http::envelope::check"],
    "tool-call log line and metrics": ["mcp_gateway::tools::observe::record"],
}

# Called once per AWS request the SDK sends (through `dyn Sign`, so never inlined).
SIGNER = "<aws_runtime::auth::sigv4::SigV4Signer as aws_smithy_runtime_api::client::auth::Sign>::sign_http_request"

LINE = re.compile(r"^\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*?)(?:\s+\[[^\]]*\])?\s*$")


def calls_to(out_path, function):
    """How many times `function` was called in a callgrind dump (its `calls=` lines)."""
    names = {}  # compressed name ids: "(12)" -> name
    callee = None
    total = 0
    for line in open(out_path, errors="replace"):
        if line.startswith("cfn="):
            m = re.match(r"cfn=(\(\d+\))?\s*(.*)$", line.rstrip("\n"))
            key, name = m.group(1), m.group(2)
            if key and name:
                names[key] = name
            callee = name or names.get(key)
        elif line.startswith("fn="):
            m = re.match(r"fn=(\(\d+\))?\s*(.*)$", line.rstrip("\n"))
            if m.group(1) and m.group(2):
                names[m.group(1)] = m.group(2)
        elif line.startswith("calls=") and callee == function:
            total += int(line[6:].split()[0])
    return total


def main(annotate_path, wrk_path, out_path=None):
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
    out = {"calls": calls, "total": round(total / calls), "layers": layers}
    if out_path:
        out["dynamodb_requests_per_call"] = round(calls_to(out_path, SIGNER) / calls, 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main(*sys.argv[1:4])
