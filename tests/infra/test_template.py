"""The project's own template checks (issue 6): the real template is clean, and the checker
really catches what cfn-lint misses (planted mistakes in fixtures/bad_template.yaml)."""

from pathlib import Path

import pytest

from check_template import check, load, workspace_binaries

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra" / "template.yaml"
BAD = Path(__file__).resolve().parent / "fixtures" / "bad_template.yaml"


def test_template_has_no_problems():
    assert check(TEMPLATE, ROOT) == []


def test_workspace_binaries_include_the_deployed_functions():
    binaries = workspace_binaries(ROOT)
    assert {"mcp-gateway", "core-api"} <= binaries


def test_every_deployed_binary_is_a_template_function():
    """The reverse direction: a function binary in functions/ that is not deployed is a gap."""
    template = load(TEMPLATE)
    deployed = {
        (r.get("Metadata") or {}).get("BuildProperties", {}).get("Binary")
        for r in template["Resources"].values()
        if r.get("Type") == "AWS::Serverless::Function"
    }
    # A function is a package with a binary; screening-sim is a library until its HTTP layer lands.
    functions = {p.name for p in (ROOT / "functions").iterdir() if (p / "src" / "main.rs").is_file()}
    assert functions - deployed == set(), "add these functions to infra/template.yaml"


@pytest.fixture(scope="module")
def bad_problems():
    return check(BAD, ROOT)


@pytest.mark.parametrize(
    "expected",
    [
        "binary 'no-such-binary' is not a binary of the workspace",
        "Fn::If on unknown condition 'NoSuchCondition'",
        "Ref to unknown name 'NoSuchParameter'",
        "GetAtt WorkQueue.NoSuchAttribute",
        "Action 'dynamodb:*'",
        "GetAtt on unknown resource 'NoSuchTable'",
        "bare '*' Resource",
        "Resources.DeadLetters: dead-letter queue has no depth alarm",
        "Resources.WorkQueue: VisibilityTimeout 60 < 6 x consumer timeout 30",
        "GetAtt on unknown resource 'NoSuchFunctionUrl'",
        "Outputs.Guarded: unknown condition 'NotDefined'",
        "no breaker_state alarm for dependency 'postgres'",
        "no shed alarm",
        "GhostDashboard: metric 'ghost_metric' in namespace Kosha is not emitted",
        "GhostDashboard: metric 'phantom_count' in namespace Kosha is not emitted",
        "GhostAlarm: metric 'spectre_ms' in namespace Kosha is not emitted",
    ],
)
def test_checker_catches_planted_mistake(bad_problems, expected):
    assert any(expected in line for line in bad_problems), "\n".join(bad_problems)


def test_aws_namespaces_and_emitted_metrics_pass_the_metric_check(bad_problems):
    metric_lines = [l for l in bad_problems if "in namespace Kosha" in l]
    assert len(metric_lines) == 3, metric_lines
    assert not any("NumberOfMessagesSent" in l or "'shed'" in l for l in metric_lines)


def test_the_dashboard_uses_only_emitted_metrics_and_covers_the_issue():
    from check_template import dashboard_metrics, emitted_metrics
    import json
    import re

    body = load(TEMPLATE)["Resources"]["OperationsDashboard"]["Properties"]["DashboardBody"]["Fn::Sub"]
    used = dashboard_metrics(json.loads(re.sub(r"\$\{[^}]*\}", "x", body)))
    assert used <= emitted_metrics(ROOT)
    assert {"breaker_state", "shed", "rate_limit", "retries", "retry_budget_exhausted", "degraded",
            "tool_duration_ms"} <= used
    assert "ApproximateNumberOfMessagesVisible" in body


def test_checker_accepts_sam_generated_and_pseudo_names(bad_problems):
    assert not any("BadFunctionRole" in line or "AWS::Region" in line for line in bad_problems)


def test_cli_exit_codes(capsys):
    from check_template import main

    assert main([str(TEMPLATE), "--workspace", str(ROOT)]) == 0
    assert main([str(BAD), "--workspace", str(ROOT)]) == 1
    assert "problem(s)" in capsys.readouterr().out


def test_core_api_reads_only_breaker_items_of_the_state_table():
    """core-api honours breaker#openai and breaker#postgres (SPEC §8) and nothing else there:
    read actions only, limited to partition keys breaker#* (issue 13)."""
    core_api = load(TEMPLATE)["Resources"]["CoreApiFunction"]["Properties"]
    statements = [s for p in core_api["Policies"] for s in p["Statement"]]
    dynamo = [s for s in statements if any(str(a).startswith("dynamodb:") for a in s["Action"])]
    assert len(dynamo) == 1, dynamo
    (statement,) = dynamo
    assert set(statement["Action"]) == {"dynamodb:GetItem", "dynamodb:BatchGetItem"}
    keys = statement["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
    assert keys == ["breaker#*"]
    env = core_api["Environment"]["Variables"]
    assert {"KOSHA_EMBEDDINGS_URL", "KOSHA_EMBEDDINGS_MODEL", "KOSHA_EMBEDDINGS_DIMENSIONS",
            "KOSHA_EMBEDDINGS_API_KEY_SECRET_ARN"} <= set(env)


def test_only_the_gateway_may_read_or_write_fleet_trips():
    """SPEC §8 "Fleet trips" (#27): trip#* is the gateway's alone; every state-table statement
    of another function is limited to other partition keys (core-api and the worker read
    breaker#* only), and the gateway's own is limited to the items it uses."""
    resources = load(TEMPLATE)["Resources"]
    allowed = {}
    for name, resource in resources.items():
        if resource["Type"] != "AWS::Serverless::Function":
            continue
        for policy in resource["Properties"].get("Policies", []):
            for st in policy.get("Statement", []) if isinstance(policy, dict) else []:
                actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
                if not any(str(a).startswith("dynamodb:") for a in actions):
                    continue
                assert st["Resource"] == {"Fn::GetAtt": ["StateTable", "Arn"]}, (name, st)
                keys = st["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
                allowed.setdefault(name, set()).update(keys)
    trips = {name for name, keys in allowed.items() if "trip#*" in keys or "*" in keys}
    assert trips == {"McpGatewayFunction"}, allowed
    assert allowed["McpGatewayFunction"] == {"rl#*", "screening#*", "breaker#*", "trip#*"}
    assert allowed["CoreApiFunction"] == {"breaker#*"}
    assert allowed["ScreeningWorkerFunction"] == {"screening#*", "breaker#*"}


def _paths_to(node, target, path=()):
    """Every path in `node` at which `target` appears."""
    if node == target:
        yield path
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from _paths_to(value, target, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths_to(value, target, path + (i,))


def test_only_the_gateway_may_read_the_confirmation_key():
    """SPEC §5b (issue 47): the key sealing confirmation states is readable by the gateway's
    role alone. Every reference to the secret is the gateway's variable, one gateway policy
    statement allowing GetSecretValue on it and nothing else, or the stack output."""
    template = load(TEMPLATE)
    ref = {"Ref": "ConfirmSecret"}
    paths = list(_paths_to(template, ref))
    places = {p[:2] for p in paths}
    assert places == {("Resources", "McpGatewayFunction"), ("Outputs", "ConfirmSecretArn")}, paths
    gateway = template["Resources"]["McpGatewayFunction"]["Properties"]
    assert gateway["Environment"]["Variables"]["KOSHA_CONFIRM_SECRET_ID"] == ref
    statements = [st for pol in gateway["Policies"] for st in pol["Statement"]
                  if ref in (st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]])]
    assert len(statements) == 1, statements
    (statement,) = statements
    assert statement["Resource"] == ref
    assert statement["Action"] == "secretsmanager:GetSecretValue"
    # No wildcard Secrets Manager grant anywhere could read it either.
    for name, resource in template["Resources"].items():
        for pol in (resource.get("Properties") or {}).get("Policies", []):
            for st in pol.get("Statement", []) if isinstance(pol, dict) else []:
                actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
                if any(str(a).startswith("secretsmanager:") for a in actions):
                    resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
                    assert "*" not in resources, (name, st)


@pytest.mark.parametrize("name", ["ConfirmSecret", "ChaosSecret"])
def test_the_hmac_keys_are_generated_as_64_lowercase_hex_characters(name):
    """The gateway decodes both keys as hex (kosha_state::secrets::decode_hmac_key; the
    confirmation key into 32 bytes, rmcp's RequestStateCodec minimum): only 0-9 and a-f may be
    generated. The chaos key was generated alphanumeric, which no deployed gateway could
    decode, so every signed header was refused as key_unavailable (found 2026-12-05)."""
    secret = load(TEMPLATE)["Resources"][name]
    generate = secret["Properties"]["GenerateSecretString"]
    assert generate["PasswordLength"] == 64
    assert generate["ExcludePunctuation"] is True
    assert generate["ExcludeUppercase"] is True
    assert generate.get("IncludeSpace", False) is False
    allowed = set("0123456789abcdefghijklmnopqrstuvwxyz") - set(generate["ExcludeCharacters"])
    assert allowed == set("0123456789abcdef")


def test_the_outbox_relay_runs_every_minute_and_may_only_send_to_the_events_queue():
    """Issue 11: schedule, least privilege toward SQS, and the lag alarm."""
    resources = load(TEMPLATE)["Resources"]
    relay = resources["OutboxRelayFunction"]["Properties"]
    schedules = [e["Properties"]["Schedule"] for e in relay["Events"].values() if e["Type"] == "Schedule"]
    assert schedules == ["rate(1 minute)"]
    statements = [st for p in relay["Policies"] for st in p["Statement"]]
    sqs = [st for st in statements if any(str(a).startswith("sqs:") for a in
                                          (st["Action"] if isinstance(st["Action"], list) else [st["Action"]]))]
    assert [(st["Action"], st["Resource"]) for st in sqs] == [("sqs:SendMessage", {"Fn::GetAtt": ["EventsQueue", "Arn"]})]
    assert relay["Environment"]["Variables"]["KOSHA_EVENTS_QUEUE_URL"] == {"Ref": "EventsQueue"}
    lag = [r["Properties"] for r in resources.values() if r["Type"] == "AWS::CloudWatch::Alarm"
           and "outbox_lag_seconds" in str(r["Properties"].get("Metrics"))]
    assert len(lag) == 1 and lag[0]["TreatMissingData"] == "breaching"


def test_the_mcp_public_client_exists_only_with_a_user_pool():
    """Issue 44: when UserPoolId is given, the stack creates the public app client for people's
    MCP clients beside the resource server, both under HasUserPool (UserPoolId not empty)."""
    template = load(TEMPLATE)
    resources = template["Resources"]
    clients = {name: r for name, r in resources.items() if r["Type"] == "AWS::Cognito::UserPoolClient"}
    assert list(clients) == ["McpPublicClient"]
    assert clients["McpPublicClient"]["Condition"] == "HasUserPool"
    assert resources["ScopesResourceServer"]["Condition"] == "HasUserPool"
    assert template["Conditions"]["HasUserPool"] == {"Fn::Not": [{"Fn::Equals": [{"Ref": "UserPoolId"}, ""]}]}
    assert template["Outputs"]["McpClientId"]["Condition"] == "HasUserPool"


def test_the_mcp_public_client_is_public_and_allows_the_code_flow_alone():
    """No secret (PKCE proves the client), authorization code only, Cognito's own sign-in, no
    direct password or SRP sign-in API (SPEC §5: people log in with authorization code + PKCE)."""
    client = load(TEMPLATE)["Resources"]["McpPublicClient"]["Properties"]
    assert client["UserPoolId"] == {"Ref": "UserPoolId"}
    assert client["GenerateSecret"] is False
    assert client["AllowedOAuthFlowsUserPoolClient"] is True
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["SupportedIdentityProviders"] == ["COGNITO"]
    assert client["ExplicitAuthFlows"] == ["ALLOW_REFRESH_TOKEN_AUTH"]


def test_the_mcp_public_client_allows_openid_and_exactly_the_role_scopes():
    """The role scopes of the resource server (scopes_supported, SPEC §5) plus openid, which an
    OpenID-minded client may ask for; nothing else (no email, profile, admin API scope)."""
    resources = load(TEMPLATE)["Resources"]
    client = resources["McpPublicClient"]
    server = resources["ScopesResourceServer"]["Properties"]
    role_scopes = [{"Fn::Sub": "${ScopePrefix}/" + s["ScopeName"]} for s in server["Scopes"]]
    assert server["Identifier"] == {"Ref": "ScopePrefix"}
    assert client["Properties"]["AllowedOAuthScopes"] == ["openid", *role_scopes]
    assert client["DependsOn"] == "ScopesResourceServer"


def test_the_mcp_public_client_callback_urls_come_from_the_parameter():
    template = load(TEMPLATE)
    client = template["Resources"]["McpPublicClient"]["Properties"]
    assert client["CallbackURLs"] == {"Ref": "McpClientCallbackUrls"}
    parameter = template["Parameters"]["McpClientCallbackUrls"]
    assert parameter["Type"] == "CommaDelimitedList"
    # Cognito takes https, or http on a loopback host, and never a fragment.
    for url in parameter["Default"].split(","):
        assert url.startswith(("https://", "http://localhost", "http://127.0.0.1")), url
        assert "#" not in url


def test_the_gateway_allows_the_mcp_public_client():
    """Its tokens carry its client_id, so the gateway lists it beside AllowedClientIds; without
    a pool the list is AllowedClientIds alone."""
    gateway = load(TEMPLATE)["Resources"]["McpGatewayFunction"]["Properties"]
    allowed = gateway["Environment"]["Variables"]["KOSHA_ALLOWED_CLIENT_IDS"]
    assert allowed == {"Fn::If": ["HasUserPool",
                                  {"Fn::Join": [",", [{"Ref": "AllowedClientIds"}, {"Ref": "McpPublicClient"}]]},
                                  {"Ref": "AllowedClientIds"}]}
