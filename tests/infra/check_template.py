#!/usr/bin/env python3
"""Cross-reference and policy checks for infra/template.yaml that cfn-lint does not make.

cfn-lint does not resolve !Ref / !GetAtt inside AWS::Serverless::Function properties (issue 6),
so this checker walks the raw template and verifies:

- every !Ref, !GetAtt and ${...} in !Sub names a parameter, resource, pseudo-parameter or a
  resource SAM generates (<Fn>Role, <Fn>Url), with a known attribute where the type is known;
- every condition used (resource/output Condition, !If, !Condition) is defined;
- every AWS::Serverless::Function is built by cargo-lambda (Metadata BuildMethod
  rust-cargolambda) from the workspace root, on provided.al2023/arm64, and its
  BuildProperties.Binary is a binary of a workspace member (tomllib over the Cargo.toml files);
- IAM statements: no wildcard in Action, no NotAction/NotResource, no bare "*" Resource,
  no managed policy attached by name;
- SQS: each queue's visibility timeout is >= 6x its consumer's timeout (Metadata.Kosha and SQS
  event sources), every redrive target is alarmed;
- breaker_state (per SPEC §8 dependency) and shed alarms exist;
- every metric in the `Kosha` namespace that a dashboard widget or an alarm names (metric
  arrays, MetricStat, Metrics Insights `SELECT f(name) FROM Kosha`, `SEARCH` with
  `MetricName="name"`) is one the code emits: a row of the table in docs/metrics.md (printed
  from the code's metric catalogue); AWS namespaces (`AWS/SQS`, …) are exempt. A dashboard
  body must be JSON.

Usage: check_template.py [TEMPLATE] [--workspace DIR]; exit 0 when clean, 1 with one line per
problem otherwise. Import `check(path, workspace)` to get the list of problems.
"""

from __future__ import annotations

import argparse
import glob
import json
import re
import sys
import tomllib
from pathlib import Path
from typing import Any, Iterator

import yaml

PSEUDO = {
    "AWS::AccountId",
    "AWS::NotificationARNs",
    "AWS::NoValue",
    "AWS::Partition",
    "AWS::Region",
    "AWS::StackId",
    "AWS::StackName",
    "AWS::URLSuffix",
}

# GetAtt attributes per resource type (CloudFormation resource schemas); other types accept any
# attribute here and are left to cfn-lint, which checks them outside SAM functions.
ATTRIBUTES = {
    "AWS::Serverless::Function": {"Arn"},
    "AWS::Lambda::Url": {"FunctionArn", "FunctionUrl"},
    "AWS::IAM::Role": {"Arn", "RoleId"},
    "AWS::SQS::Queue": {"Arn", "QueueName", "QueueUrl", "ContentBasedDeduplication",
                        "DeduplicationScope", "DelaySeconds", "FifoQueue", "FifoThroughputLimit",
                        "KmsDataKeyReusePeriodSeconds", "KmsMasterKeyId", "MaximumMessageSize",
                        "MessageRetentionPeriod", "ReceiveMessageWaitTimeSeconds",
                        "RedrivePolicy.deadLetterTargetArn", "RedrivePolicy.maxReceiveCount",
                        "SqsManagedSseEnabled", "VisibilityTimeout"},
}

BREAKER_DEPENDENCIES = ("core-api", "screening-sim", "openai", "postgres")  # SPEC §8


# ------------------------------------------------------------------ YAML with CFN short tags
class CfnLoader(yaml.SafeLoader):
    """SafeLoader that turns CloudFormation short-form tags into their long forms."""


def _construct(tag: str):
    def build(loader: CfnLoader, node: yaml.Node) -> Any:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        if tag == "Ref":
            return {"Ref": value}
        if tag == "Condition":
            return {"Condition": value}
        if tag == "GetAtt" and isinstance(value, str):
            resource, _, attribute = value.partition(".")
            value = [resource, attribute]
        return {f"Fn::{tag}": value}

    return build


for _tag in ("Ref", "Condition", "GetAtt", "Sub", "If", "Equals", "Not", "And", "Or", "Join",
             "Select", "Split", "FindInMap", "ImportValue", "GetAZs", "Base64", "Cidr",
             "Transform", "Length", "ToJsonString"):
    CfnLoader.add_constructor(f"!{_tag}", _construct(_tag))


def load(path: Path) -> dict[str, Any]:
    """The template as plain dicts, intrinsic functions in long form."""
    with path.open(encoding="utf-8") as handle:
        data = yaml.load(handle, Loader=CfnLoader)  # noqa: S506 - SafeLoader subclass
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a mapping")
    return data


# ------------------------------------------------------------------ workspace binaries
def workspace_binaries(root: Path) -> set[str]:
    """Binary names of every workspace member: [[bin]] names, src/main.rs, src/bin/*.rs."""
    manifest = tomllib.loads((root / "Cargo.toml").read_text(encoding="utf-8"))
    members = manifest.get("workspace", {}).get("members", [])
    excluded = {str((root / e).resolve()) for e in manifest.get("workspace", {}).get("exclude", [])}
    dirs: list[Path] = []
    for member in members:
        dirs.extend(Path(p) for p in sorted(glob.glob(str(root / member))))
    if "package" in manifest:
        dirs.append(root)
    binaries: set[str] = set()
    for member_dir in dirs:
        if str(member_dir.resolve()) in excluded or not (member_dir / "Cargo.toml").is_file():
            continue
        crate = tomllib.loads((member_dir / "Cargo.toml").read_text(encoding="utf-8"))
        package = crate.get("package", {})
        for target in crate.get("bin", []):
            if "name" in target:
                binaries.add(target["name"])
        if package.get("autobins", True):
            if (member_dir / "src" / "main.rs").is_file() and "name" in package:
                binaries.add(package["name"])
            binaries.update(p.stem for p in (member_dir / "src" / "bin").glob("*.rs"))
    return binaries


# ------------------------------------------------------------------ walking
def walk(node: Any, where: str) -> Iterator[tuple[str, Any]]:
    """Yields (location, node) for every dict node below `node`."""
    if isinstance(node, dict):
        yield where, node
        for key, value in node.items():
            yield from walk(value, f"{where}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from walk(value, f"{where}[{index}]")


SUB_VAR = re.compile(r"\$\{([^}!][^}]*)\}")


def _sub_names(value: Any) -> tuple[list[str], set[str]]:
    """Names used by a Fn::Sub and the names its variable map defines locally."""
    if isinstance(value, str):
        return SUB_VAR.findall(value), set()
    if isinstance(value, list) and value and isinstance(value[0], str):
        local = set(value[1]) if len(value) > 1 and isinstance(value[1], dict) else set()
        return SUB_VAR.findall(value[0]), local
    return [], set()


# ------------------------------------------------------------------ metric names (issue 15)
SUB_VAR_ANY = re.compile(r"\$\{[^}]*\}")
INSIGHTS = re.compile(r"SELECT\s+\w+\(\s*(\w+)\s*\)\s+FROM\s+(?:SCHEMA\(\s*)?\"?Kosha\b", re.I)
SEARCH = re.compile(r"\{Kosha\b[^}]*\}[^']*?MetricName\s*=\s*\"(\w+)\"")


def emitted_metrics(workspace: Path) -> set[str]:
    """The metric names of the table in docs/metrics.md (rows starting with | `name` |)."""
    names = set()
    for line in (workspace / "docs" / "metrics.md").read_text(encoding="utf-8").splitlines():
        m = re.match(r"\|\s*`([a-z0-9_]+)`\s*\|", line)
        if m:
            names.add(m.group(1))
    return names


def _expression_metrics(expression: str) -> set[str]:
    return set(INSIGHTS.findall(expression)) | set(SEARCH.findall(expression))


def dashboard_metrics(doc: Any) -> set[str]:
    """The Kosha metric names a dashboard body's widgets use."""
    used: set[str] = set()
    for widget in doc.get("widgets", []) if isinstance(doc, dict) else []:
        for row in (widget.get("properties") or {}).get("metrics", []):
            if not isinstance(row, list):
                continue
            if len(row) >= 2 and row[0] == "Kosha" and isinstance(row[1], str):
                used.add(row[1])
            for item in row:
                if isinstance(item, dict) and isinstance(item.get("expression"), str):
                    used |= _expression_metrics(item["expression"])
    return used


def alarm_metrics(props: dict[str, Any]) -> set[str]:
    """The Kosha metric names an alarm watches."""
    used: set[str] = set()
    if props.get("Namespace") == "Kosha" and isinstance(props.get("MetricName"), str):
        used.add(props["MetricName"])
    for metric in props.get("Metrics") or []:
        stat = ((metric.get("MetricStat") or {}).get("Metric") or {})
        if stat.get("Namespace") == "Kosha" and isinstance(stat.get("MetricName"), str):
            used.add(stat["MetricName"])
        if isinstance(metric.get("Expression"), str):
            used |= _expression_metrics(metric["Expression"])
    return used


class Checker:
    """Collects the problems of one template."""

    def __init__(self, template: dict[str, Any], template_path: Path, workspace: Path):
        self.t = template
        self.path = template_path
        self.workspace = workspace
        self.problems: list[str] = []
        self.params = set((template.get("Parameters") or {}).keys())
        self.resources: dict[str, dict[str, Any]] = template.get("Resources") or {}
        self.conditions = set((template.get("Conditions") or {}).keys())
        self.types = {name: res.get("Type", "") for name, res in self.resources.items()}
        for name, res in self.resources.items():
            if res.get("Type") != "AWS::Serverless::Function":
                continue
            props = res.get("Properties") or {}
            if "Role" not in props:
                self.types[f"{name}Role"] = "AWS::IAM::Role"
            if "FunctionUrlConfig" in props:
                self.types[f"{name}Url"] = "AWS::Lambda::Url"

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{where}: {message}")

    # -------------------------------------------------------------- references
    def _check_ref(self, where: str, name: Any) -> None:
        if not isinstance(name, str):
            self.problem(where, f"Ref to a non-string {name!r}")
        elif name not in self.params and name not in self.types and name not in PSEUDO:
            self.problem(where, f"Ref to unknown name {name!r}")

    def _check_getatt(self, where: str, resource: Any, attribute: Any) -> None:
        if not isinstance(resource, str) or resource not in self.types:
            self.problem(where, f"GetAtt on unknown resource {resource!r}")
            return
        known = ATTRIBUTES.get(self.types[resource])
        if known is not None and attribute not in known:
            self.problem(where, f"GetAtt {resource}.{attribute}: {self.types[resource]} "
                                f"has no attribute {attribute!r}")

    def check_references(self) -> None:
        for section in ("Resources", "Outputs", "Conditions", "Globals", "Metadata"):
            for where, node in walk(self.t.get(section), section):
                if "Ref" in node and len(node) == 1:
                    self._check_ref(where, node["Ref"])
                if "Fn::GetAtt" in node:
                    value = node["Fn::GetAtt"]
                    if isinstance(value, list) and len(value) == 2:
                        self._check_getatt(where, value[0], value[1])
                    else:
                        self.problem(where, f"malformed GetAtt {value!r}")
                if "Fn::Sub" in node:
                    names, local = _sub_names(node["Fn::Sub"])
                    for name in names:
                        if name in local:
                            continue
                        if "." in name:
                            resource, _, attribute = name.partition(".")
                            self._check_getatt(where, resource, attribute)
                        else:
                            self._check_ref(where, name)
                if "Fn::If" in node:
                    value = node["Fn::If"]
                    if not (isinstance(value, list) and len(value) == 3):
                        self.problem(where, "Fn::If needs [condition, then, else]")
                    elif value[0] not in self.conditions:
                        self.problem(where, f"Fn::If on unknown condition {value[0]!r}")
                if "Condition" in node and len(node) == 1 and isinstance(node["Condition"], str):
                    if section == "Conditions" and node["Condition"] not in self.conditions:
                        self.problem(where, f"unknown condition {node['Condition']!r}")
        for section in ("Resources", "Outputs"):
            for name, entry in (self.t.get(section) or {}).items():
                cond = entry.get("Condition") if isinstance(entry, dict) else None
                if cond is not None and cond not in self.conditions:
                    self.problem(f"{section}.{name}", f"unknown condition {cond!r}")

    # -------------------------------------------------------------- functions
    def _global(self, key: str) -> Any:
        return ((self.t.get("Globals") or {}).get("Function") or {}).get(key)

    def function_prop(self, name: str, key: str) -> Any:
        props = self.resources[name].get("Properties") or {}
        return props.get(key, self._global(key))

    def check_functions(self) -> None:
        binaries = workspace_binaries(self.workspace)
        for name, res in self.resources.items():
            if res.get("Type") != "AWS::Serverless::Function":
                continue
            where = f"Resources.{name}"
            meta = res.get("Metadata") or {}
            if meta.get("BuildMethod") != "rust-cargolambda":
                self.problem(where, "Metadata.BuildMethod must be rust-cargolambda")
            binary = (meta.get("BuildProperties") or {}).get("Binary")
            if not binary:
                self.problem(where, "Metadata.BuildProperties.Binary is missing")
            elif binary not in binaries:
                self.problem(where, f"binary {binary!r} is not a binary of the workspace "
                                    f"(have: {', '.join(sorted(binaries))})")
            code_uri = self.function_prop(name, "CodeUri")
            if not isinstance(code_uri, str) or \
                    (self.path.parent / code_uri).resolve() != self.workspace.resolve():
                self.problem(where, f"CodeUri {code_uri!r} must point at the workspace root")
            if self.function_prop(name, "Runtime") != "provided.al2023":
                self.problem(where, "Runtime must be provided.al2023")
            if self.function_prop(name, "Architectures") != ["arm64"]:
                self.problem(where, "Architectures must be [arm64]")
            if self.function_prop(name, "Handler") != "bootstrap":
                self.problem(where, "Handler must be bootstrap")
            if "ReservedConcurrentExecutions" not in (res.get("Properties") or {}):
                self.problem(where, "ReservedConcurrentExecutions must be set (from a parameter)")

    # -------------------------------------------------------------- IAM
    def _statements(self) -> Iterator[tuple[str, Any]]:
        for name, res in self.resources.items():
            props = res.get("Properties") or {}
            kind = res.get("Type")
            if kind == "AWS::Serverless::Function":
                policies = props.get("Policies") or []
                if not isinstance(policies, list):
                    policies = [policies]
                for index, policy in enumerate(policies):
                    where = f"Resources.{name}.Policies[{index}]"
                    if isinstance(policy, str):
                        self.problem(where, f"managed policy {policy!r} attached by name "
                                            f"(write scoped statements)")
                    elif isinstance(policy, dict) and "Statement" in policy:
                        for i, st in enumerate(policy["Statement"]):
                            yield f"{where}.Statement[{i}]", st
            elif kind == "AWS::IAM::Role":
                for index, policy in enumerate(props.get("Policies") or []):
                    doc = policy.get("PolicyDocument") or {}
                    for i, st in enumerate(doc.get("Statement") or []):
                        yield f"Resources.{name}.Policies[{index}].Statement[{i}]", st
            elif kind in ("AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"):
                doc = props.get("PolicyDocument") or {}
                for i, st in enumerate(doc.get("Statement") or []):
                    yield f"Resources.{name}.Statement[{i}]", st

    def check_iam(self) -> None:
        for where, st in self._statements():
            if not isinstance(st, dict):
                self.problem(where, "statement is not a mapping")
                continue
            for banned in ("NotAction", "NotResource"):
                if banned in st:
                    self.problem(where, f"{banned} is not allowed")
            actions = st.get("Action")
            actions = actions if isinstance(actions, list) else [actions]
            for action in actions:
                if not isinstance(action, str) or "*" in action:
                    self.problem(where, f"Action {action!r}: wildcard or non-literal action")
            resources = st.get("Resource")
            if resources is None:
                self.problem(where, "Resource is missing")
                continue
            resources = resources if isinstance(resources, list) else [resources]
            for resource in resources:
                if resource == "*":
                    self.problem(where, "bare '*' Resource")

    # -------------------------------------------------------------- queues and alarms
    def _queue_of(self, value: Any) -> str | None:
        if isinstance(value, dict) and "Fn::GetAtt" in value:
            resource, attribute = value["Fn::GetAtt"]
            if attribute == "Arn" and self.types.get(resource) == "AWS::SQS::Queue":
                return resource
        return None

    def check_queues_and_alarms(self) -> None:
        queues = {n for n, r in self.resources.items() if r.get("Type") == "AWS::SQS::Queue"}
        consumers: dict[str, int] = {}
        meta = ((self.t.get("Metadata") or {}).get("Kosha") or {})
        for queue, seconds in (meta.get("QueueConsumerTimeoutSeconds") or {}).items():
            if queue not in queues:
                self.problem("Metadata.Kosha", f"unknown queue {queue!r}")
            else:
                consumers[queue] = int(seconds)
        for name, res in self.resources.items():
            if res.get("Type") != "AWS::Serverless::Function":
                continue
            for event in ((res.get("Properties") or {}).get("Events") or {}).values():
                if event.get("Type") == "SQS":
                    queue = self._queue_of((event.get("Properties") or {}).get("Queue"))
                    timeout = int(self.function_prop(name, "Timeout") or 3)
                    if queue:
                        consumers[queue] = max(consumers.get(queue, 0), timeout)
        dlqs: set[str] = set()
        for queue in sorted(queues):
            props = self.resources[queue].get("Properties") or {}
            redrive = props.get("RedrivePolicy")
            if redrive:
                target = self._queue_of(redrive.get("deadLetterTargetArn"))
                if target is None:
                    self.problem(f"Resources.{queue}", "RedrivePolicy target is not a queue here")
                else:
                    dlqs.add(target)
        for queue in sorted(queues - dlqs):
            props = self.resources[queue].get("Properties") or {}
            if not props.get("RedrivePolicy"):
                self.problem(f"Resources.{queue}", "queue has no dead-letter queue")
            if queue not in consumers:
                self.problem(f"Resources.{queue}", "no consumer timeout known (Metadata.Kosha)")
                continue
            visibility = int(props.get("VisibilityTimeout", 30))
            if visibility < 6 * consumers[queue]:
                self.problem(f"Resources.{queue}", f"VisibilityTimeout {visibility} < 6 x "
                                                   f"consumer timeout {consumers[queue]}")
        alarms = [r.get("Properties") or {} for r in self.resources.values()
                  if r.get("Type") == "AWS::CloudWatch::Alarm"]
        alarmed_queues = set()
        expressions = []
        for props in alarms:
            for dim in props.get("Dimensions") or []:
                value = dim.get("Value")
                if isinstance(value, dict) and "Fn::GetAtt" in value:
                    alarmed_queues.add(value["Fn::GetAtt"][0])
            for metric in props.get("Metrics") or []:
                expressions.append(str(metric.get("Expression", "")))
        for dlq in sorted(dlqs - alarmed_queues):
            self.problem(f"Resources.{dlq}", "dead-letter queue has no depth alarm")
        for dep in BREAKER_DEPENDENCIES:
            if not any("breaker_state" in e and f"'{dep}'" in e for e in expressions):
                self.problem("Resources", f"no breaker_state alarm for dependency {dep!r}")
        if not any("shed" in e for e in expressions):
            self.problem("Resources", "no shed alarm")

    def check_metric_names(self) -> None:
        emitted = emitted_metrics(self.workspace)
        for name, res in self.resources.items():
            kind = res.get("Type")
            props = res.get("Properties") or {}
            if kind == "AWS::CloudWatch::Dashboard":
                body = props.get("DashboardBody")
                if isinstance(body, dict) and "Fn::Sub" in body:
                    body = body["Fn::Sub"]
                    body = body[0] if isinstance(body, list) else body
                if not isinstance(body, str):
                    self.problem(f"Resources.{name}", "DashboardBody is not a string")
                    continue
                try:
                    doc = json.loads(SUB_VAR_ANY.sub("x", body))
                except ValueError as e:
                    self.problem(f"Resources.{name}", f"DashboardBody is not JSON: {e}")
                    continue
                used = dashboard_metrics(doc)
            elif kind == "AWS::CloudWatch::Alarm":
                used = alarm_metrics(props)
            else:
                continue
            for metric in sorted(used - emitted):
                self.problem(f"Resources.{name}", f"metric {metric!r} in namespace Kosha is not "
                                                  "emitted by any code (not in docs/metrics.md)")

    def run(self) -> list[str]:
        self.check_references()
        self.check_functions()
        self.check_iam()
        self.check_queues_and_alarms()
        self.check_metric_names()
        return self.problems


def check(template_path: Path, workspace: Path) -> list[str]:
    """Every problem found in `template_path`, one line each (empty when clean)."""
    return Checker(load(template_path), template_path, workspace).run()


def main(argv: list[str] | None = None) -> int:
    root = Path(__file__).resolve().parents[2]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("template", nargs="?", default=str(root / "infra" / "template.yaml"))
    parser.add_argument("--workspace", default=str(root))
    args = parser.parse_args(argv)
    problems = check(Path(args.template), Path(args.workspace))
    for line in problems:
        print(line)
    if problems:
        print(f"{args.template}: {len(problems)} problem(s)")
        return 1
    print(f"{args.template}: references, binaries, IAM, queues and alarms ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
