"""Lambda event fixtures in infra/events/ (issue 6): they parse and have the shape Lambda sends.
The screening-worker's tests also run the SQS fixture through its handler
(functions/screening-worker/tests/handler.rs)."""

import json
from pathlib import Path

import pytest

EVENTS = Path(__file__).resolve().parents[2] / "infra" / "events"


def load(name):
    return json.loads((EVENTS / name).read_text(encoding="utf-8"))


def test_every_fixture_is_json_and_known():
    names = sorted(p.name for p in EVENTS.glob("*.json"))
    assert names == sorted(
        [
            "function-url-get-healthz.json",
            "function-url-post-mcp.json",
            "http-api-post-mcp.json",
            "scheduled-outbox-relay.json",
            "sqs-screening-requests.json",
        ]
    )
    for name in names:
        load(name)


@pytest.mark.parametrize(
    "name, method, path",
    [
        ("function-url-post-mcp.json", "POST", "/mcp"),
        ("function-url-get-healthz.json", "GET", "/healthz"),
        ("http-api-post-mcp.json", "POST", "/mcp"),
    ],
)
def test_http_events_are_payload_v2(name, method, path):
    event = load(name)
    assert event["version"] == "2.0"
    assert event["rawPath"] == path
    ctx = event["requestContext"]
    assert ctx["http"]["method"] == method
    assert ctx["http"]["path"] == path
    assert event["headers"]["host"] == ctx["domainName"]
    assert all(k == k.lower() for k in event["headers"]), "v2 headers are lower-case"
    assert event["isBase64Encoded"] is False


def test_function_url_events_look_like_function_urls():
    for name in ("function-url-post-mcp.json", "function-url-get-healthz.json"):
        event = load(name)
        assert event["routeKey"] == "$default"
        assert event["requestContext"]["domainName"].endswith(".lambda-url.us-east-1.on.aws")


def test_http_api_event_has_a_route():
    event = load("http-api-post-mcp.json")
    assert event["routeKey"] == "POST /mcp"
    assert event["requestContext"]["domainName"].endswith(".execute-api.us-east-1.amazonaws.com")


@pytest.mark.parametrize("name", ["function-url-post-mcp.json", "http-api-post-mcp.json"])
def test_mcp_body_is_a_tools_list_request(name):
    event = load(name)
    body = json.loads(event["body"])
    assert body == {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    assert int(event["headers"]["content-length"]) == len(event["body"].encode())
    assert event["headers"]["content-type"] == "application/json"
    assert "application/json" in event["headers"]["accept"]


def test_sqs_batch_has_two_screening_requests():
    records = load("sqs-screening-requests.json")["Records"]
    assert len(records) == 2
    assert len({r["messageId"] for r in records}) == 2
    for record in records:
        assert record["eventSource"] == "aws:sqs"
        assert record["eventSourceARN"].startswith("arn:aws:sqs:")
        assert int(record["attributes"]["ApproximateReceiveCount"]) >= 1
        # The gateway's message (kosha_contract::screening::ScreeningMessage): the id only;
        # the worker reads the request from the screening# item.
        body = json.loads(record["body"])
        assert set(body) == {"screening_id"}
        assert body["screening_id"].startswith("scr_") and len(body["screening_id"]) == 30


def test_scheduled_event_is_an_eventbridge_rule_event():
    event = load("scheduled-outbox-relay.json")
    assert event["detail-type"] == "Scheduled Event"
    assert event["source"] == "aws.events"
    assert event["resources"][0].startswith("arn:aws:events:")
    assert event["detail"] == {}
