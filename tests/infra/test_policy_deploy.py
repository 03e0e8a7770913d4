"""Shipping a Cedar policy file with the gateway (issue 46, SPEC §5a): the template's
PolicyFile parameter, the overrides scripts/deploy passes `sam deploy`, and the check that
stops a deploy with a bad file before anything is built or uploaded."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from samcli.cli.types import CfnParameterOverridesType

from check_template import load

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "infra" / "template.yaml"
DEPLOY = ROOT / "scripts" / "deploy"
sys.path.insert(0, str(ROOT / "scripts"))

import deploy_params  # noqa: E402


def packaged_name() -> str:
    """The file name scripts/deploy gives the policy in the gateway's package."""
    match = re.search(r"^PACKAGED_POLICY=(\S+)$", DEPLOY.read_text(), re.MULTILINE)
    assert match, "scripts/deploy names the packaged policy file"
    return match.group(1)


def sam_parameters(words: list[str]) -> dict[str, str]:
    """The overrides as SAM CLI parses them (its own option type)."""
    return CfnParameterOverridesType().convert(tuple(words), None, None)


def test_the_policy_file_parameter_reaches_the_gateway_only_when_set():
    template = load(TEMPLATE)
    parameter = template["Parameters"]["PolicyFile"]
    assert parameter["Type"] == "String" and parameter["Default"] == ""
    assert template["Conditions"]["HasPolicyFile"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "PolicyFile"}, ""]}]
    }
    variables = template["Resources"]["McpGatewayFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["KOSHA_POLICY_FILE"] == {
        "Fn::If": ["HasPolicyFile", {"Fn::Sub": "/var/task/${PolicyFile}"}, {"Ref": "AWS::NoValue"}]
    }
    # No other function reads a policy file.
    for name, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Serverless::Function" and name != "McpGatewayFunction":
            env = resource["Properties"].get("Environment", {}).get("Variables", {})
            assert "KOSHA_POLICY_FILE" not in env, name
    assert "KOSHA_POLICY_FILE" not in template["Globals"]["Function"]["Environment"]["Variables"]


def test_the_parameter_takes_a_file_name_in_the_package_and_nothing_else():
    pattern = re.compile(load(TEMPLATE)["Parameters"]["PolicyFile"]["AllowedPattern"])
    for good in ["", packaged_name(), "prod-2026.cedar"]:
        assert pattern.fullmatch(good), good
    for bad in ["../etc/x.cedar", "/var/task/policy.cedar", "policy.txt", ".cedar", "a b.cedar"]:
        assert not pattern.fullmatch(bad), bad


def test_policy_file_is_added_to_the_given_overrides():
    options = ["--parameter-overrides", "JwtIssuer=https://idp.example/p AllowedClientIds=a,b",
               "--region", "eu-west-1"]
    out = deploy_params.with_overrides(options, ["PolicyFile=policy.cedar"], ["Ignored=1"])
    assert out[-2:] == ["--region", "eu-west-1"]
    assert out[0] == "--parameter-overrides"
    assert sam_parameters(out[1:-2]) == {
        "JwtIssuer": "https://idp.example/p",
        "AllowedClientIds": "a,b",
        "PolicyFile": "policy.cedar",
    }
    # The --option=value form too.
    out = deploy_params.with_overrides(["--parameter-overrides=A=1"], ["PolicyFile=x.cedar"], [])
    assert sam_parameters(out[1:]) == {"A": "1", "PolicyFile": "x.cedar"}


def test_without_given_overrides_samconfigs_are_kept(tmp_path):
    samconfig = tmp_path / "samconfig.toml"
    samconfig.write_text(
        'version = 0.1\n[prod.deploy.parameters]\nparameter_overrides = ["JwtIssuer=https://i", "A=1"]\n'
    )
    words = deploy_params.samconfig_overrides("prod", samconfig)
    out = deploy_params.with_overrides(["--region", "eu-west-1"], ['PolicyFile=""'], words)
    assert out[:2] == ["--region", "eu-west-1"]
    assert out[2] == "--parameter-overrides"
    assert sam_parameters(out[3:]) == {"JwtIssuer": "https://i", "A": "1", "PolicyFile": ""}
    assert deploy_params.samconfig_overrides("other", samconfig) == []


def test_main_sets_an_empty_value_explicitly_and_refuses_a_given_policy_file(capsys, tmp_path):
    missing = tmp_path / "none.toml"
    code = deploy_params.main(["--samconfig", str(missing), "--set", "PolicyFile=", "--",
                               "--region", "eu-west-1"])
    assert code == 0
    words = capsys.readouterr().out.split("\0")
    assert words[-1] == ""
    assert words[:-1] == ["--region", "eu-west-1", "--parameter-overrides", 'PolicyFile=""']
    # An empty value given, not left out: sam deploy would reuse the stack's previous one.
    assert sam_parameters(words[3:4]) == {"PolicyFile": ""}
    code = deploy_params.main(["--samconfig", str(missing), "--set", "PolicyFile=policy.cedar",
                               "--", "--parameter-overrides", "PolicyFile=mine.cedar"])
    assert code == 2
    assert "PolicyFile" in capsys.readouterr().err


def run_deploy(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "AWS_EC2_METADATA_DISABLED": "true"}
    return subprocess.run([str(DEPLOY), *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=900)


def test_deploy_stops_on_a_policy_file_that_does_not_load(tmp_path):
    bad = tmp_path / "bad.cedar"
    bad.write_text('@id("typo")\nforbid (principal, action == Kosha::Action::"raise_dispute", '
                   'resource)\nwhen { context.input.amount > 5 };\n')
    result = run_deploy("--policy-file", str(bad), "--region", "eu-west-1")
    assert result.returncode == 1, result.stderr
    assert "policy typo at line 3" in result.stderr
    assert "nothing was built or uploaded" in result.stderr
    assert "sam build" not in result.stdout + result.stderr


def test_deploy_refuses_a_missing_policy_file(tmp_path):
    result = run_deploy("--policy-file", str(tmp_path / "missing.cedar"))
    assert result.returncode == 2
    assert "no such file" in result.stderr
