#!/usr/bin/env python3
"""Runs core-api's maintenance tasks inside AWS after `sam deploy` (issue 13; scripts/deploy).

The database sits in a private VPC, so the operator's machine cannot migrate it. The deployed
core-api (the same binary) runs a task when invoked with `{"task": "migrate"}` or
`{"task": "embed"}` (functions/core-api/src/tasks.rs): this script finds the stack's
CoreApiFunction and invokes it synchronously with each task, in order, printing the one-line
result. `embed` saves each batch as it goes, so an invocation that hits the function timeout
on a large corpus is simply invoked again (at most --embed-runs times) until it finishes.

  deploy_tasks.py [--config-env NAME] [-- SAM DEPLOY OPTIONS...]

Region, profile and stack name come from the same places `sam deploy` takes them: --region /
--profile / --stack-name among the passed options, else infra/samconfig.toml's section, else
the environment. Uses boto3 (installed with aws-sam-cli in .dev/infra-venv). Exit 1 when a
task fails (its error is printed; it never holds a secret).
"""

from __future__ import annotations

import argparse
import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TASKS = ("migrate", "embed")


def option(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def settings(config_env: str, passed: list[str]) -> dict[str, str | None]:
    config = tomllib.loads((ROOT / "infra" / "samconfig.toml").read_text())
    section = config.get(config_env, {})
    merged: dict[str, str] = {}
    for command in ("global", "deploy"):
        merged.update(section.get(command, {}).get("parameters", {}))
    return {
        "region": option(passed, "--region") or merged.get("region"),
        "profile": option(passed, "--profile") or merged.get("profile"),
        "stack": option(passed, "--stack-name") or merged.get("stack_name") or "kosha",
    }


def invoke(client, function: str, task: str) -> tuple[bool, str]:
    answer = client.invoke(
        FunctionName=function,
        InvocationType="RequestResponse",
        Payload=json.dumps({"task": task}).encode(),
    )
    body = answer["Payload"].read().decode(errors="replace")
    if answer.get("FunctionError"):
        try:
            message = json.loads(body).get("errorMessage", body)
        except json.JSONDecodeError:
            message = body
        return False, str(message)[:500]
    return True, str(json.loads(body).get("result", body))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config-env", default="default")
    parser.add_argument("--embed-runs", type=int, default=10)
    parser.add_argument("passed", nargs="*")
    args = parser.parse_args()
    import boto3  # noqa: PLC0415 - only in .dev/infra-venv
    from botocore.config import Config  # noqa: PLC0415

    s = settings(args.config_env, args.passed)
    session = boto3.Session(profile_name=s["profile"], region_name=s["region"])
    resource = session.client("cloudformation").describe_stack_resource(
        StackName=s["stack"], LogicalResourceId="CoreApiFunction"
    )
    function = resource["StackResourceDetail"]["PhysicalResourceId"]
    # The embed task may run for the whole function timeout: wait for it.
    client = session.client("lambda", config=Config(read_timeout=120, retries={"max_attempts": 1}))
    for task in TASKS:
        runs = args.embed_runs if task == "embed" else 1
        for run in range(1, runs + 1):
            ok, result = invoke(client, function, task)
            if ok:
                print(f"core-api {task} (in AWS): {result}")
                break
            print(f"core-api {task} (in AWS) failed, run {run}/{runs}: {result}", file=sys.stderr)
        else:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
