-- wrk script of scripts/bench-load (issue 16): one request shape, one principal per thread.
--
-- Environment:
--   BENCH_METHOD        GET or POST (default POST)
--   BENCH_BODY_FILE     the request body (POST), e.g. a JSON-RPC tools/call
--   BENCH_TOKENS_FILE   bearer tokens, one per line: thread i sends token i (mod their number),
--                       so `-t 16 -c 16` is 16 agents on one connection each
--   BENCH_HEADERS_FILE  more headers, one "Name: value" per line
--   BENCH_EXPECT        a string every 200 body must hold (e.g. "\"isError\":false"); a
--                       response without it counts as a failure
--   BENCH_OUT           where done() writes its JSON summary (default: stdout)
--
-- done() writes one JSON object: requests, seconds, throughput_per_s, p50_ms, p99_ms,
-- max_ms, non_2xx, unexpected (200s without BENCH_EXPECT), socket errors.

local threads = {}

function setup(thread)
  thread:set("index", #threads + 1)
  table.insert(threads, thread)
end

local function lines(path)
  local out = {}
  if path == nil or path == "" then return out end
  local f = assert(io.open(path, "r"))
  for line in f:lines() do
    if line ~= "" then table.insert(out, line) end
  end
  f:close()
  return out
end

local function slurp(path)
  if path == nil or path == "" then return nil end
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local expect = os.getenv("BENCH_EXPECT")
local req

function init(args)
  non_2xx = 0
  unexpected = 0
  local headers = {}
  for _, h in ipairs(lines(os.getenv("BENCH_HEADERS_FILE"))) do
    local name, value = h:match("^([^:]+):%s*(.*)$")
    if name then headers[name] = value end
  end
  local tokens = lines(os.getenv("BENCH_TOKENS_FILE"))
  if #tokens > 0 then
    headers["Authorization"] = "Bearer " .. tokens[((index - 1) % #tokens) + 1]
  end
  local method = os.getenv("BENCH_METHOD") or "POST"
  local body = slurp(os.getenv("BENCH_BODY_FILE"))
  if body then headers["Content-Type"] = headers["Content-Type"] or "application/json" end
  req = wrk.format(method, nil, headers, body)
end

function request()
  return req
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non_2xx = non_2xx + 1
  elseif expect and expect ~= "" and not string.find(body, expect, 1, true) then
    unexpected = unexpected + 1
  end
end

function done(summary, latency, requests)
  local bad, odd = 0, 0
  for _, t in ipairs(threads) do
    bad = bad + t:get("non_2xx")
    odd = odd + t:get("unexpected")
  end
  local e = summary.errors
  local seconds = summary.duration / 1e6
  local out = string.format(
    '{"requests":%d,"seconds":%.3f,"throughput_per_s":%.1f,"p50_ms":%.3f,"p99_ms":%.3f,' ..
    '"max_ms":%.3f,"non_2xx":%d,"unexpected":%d,"socket_errors":%d}\n',
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000,
    bad, odd, e.connect + e.read + e.write + e.timeout)
  local path = os.getenv("BENCH_OUT")
  if path and path ~= "" then
    local f = assert(io.open(path, "w"))
    f:write(out)
    f:close()
  else
    io.write(out)
  end
end
