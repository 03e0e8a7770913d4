#!/usr/bin/env python3
"""Adds parameter overrides of scripts/deploy's own to the options it passes `sam deploy`
(issue 46: the policy file's `PolicyFile`, SPEC §5a).

  deploy_params.py [--config-env NAME] --set KEY=VALUE [--set ...] -- SAM DEPLOY OPTIONS...

Prints the SAM DEPLOY OPTIONS, each followed by a NUL byte, with every KEY=VALUE among the
parameter overrides (bash: `mapfile -d '' args < <(python scripts/deploy_params.py ...)`):
- after the values of a given `--parameter-overrides` (SAM takes every word up to the next
  one starting with `--` as one of its values);
- without one, after the `parameter_overrides` of infra/samconfig.toml's section NAME (default
  "default"), because SAM CLI replaces that list with a command line's rather than merging them.

A KEY set every time, an empty VALUE included (`KEY=""`), never keeps the stack's previous
value: `sam deploy` reuses a parameter's previous value when it is not given. A KEY the
options already set is bad usage (exit 2): it is scripts/deploy's to set.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OPTION = "--parameter-overrides"


def samconfig_overrides(config_env: str, samconfig: Path) -> list[str]:
    """The section's `parameter_overrides` (deploy, then global), as SAM reads them."""
    if not samconfig.is_file():
        return []
    section = tomllib.loads(samconfig.read_text()).get(config_env, {})
    for command in ("deploy", "global"):
        value = section.get(command, {}).get("parameters", {}).get("parameter_overrides")
        if value is None:
            continue
        if isinstance(value, str):
            return [value]
        if isinstance(value, list):
            return [str(v) for v in value]
        if isinstance(value, dict):
            return [f'{k}="{v}"' for k, v in value.items()]
    return []


def keys(words: list[str]) -> set[str]:
    """The parameter names a list of override words sets (`K=V`, `ParameterKey=K,…`)."""
    found = set()
    for word in words:
        found.update(re.findall(r"ParameterKey=([A-Za-z0-9]+)", word))
        found.update(re.findall(r"(?:^|\s)([A-Za-z0-9]+)=", word))
    return found - {"ParameterKey", "ParameterValue"}


def with_overrides(options: list[str], extra: list[str], samconfig_words: list[str]) -> list[str]:
    """`options` with `extra` override words added (see the module's docs).

    Raises ValueError when a key of `extra` is already set by `options`.
    """
    out: list[str] = []
    given: list[str] = []
    i = 0
    found = False
    while i < len(options):
        word = options[i]
        if word == OPTION or word.startswith(OPTION + "="):
            found = True
            out.append(OPTION)
            if word != OPTION:
                given.append(word.split("=", 1)[1])
                out.append(given[-1])
            i += 1
            while i < len(options) and not options[i].startswith("--"):
                given.append(options[i])
                out.append(options[i])
                i += 1
            out.extend(extra)
            continue
        out.append(word)
        i += 1
    clash = keys(given) & keys(extra)
    if clash:
        raise ValueError(f"{', '.join(sorted(clash))}: set by scripts/deploy, not in {OPTION}")
    if not found:
        out += [OPTION, *samconfig_words, *extra]
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config-env", default="default")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--samconfig", type=Path, default=ROOT / "infra" / "samconfig.toml")
    parser.add_argument("options", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    options = args.options[1:] if args.options[:1] == ["--"] else args.options
    for pair in args.set:
        if not re.fullmatch(r"[A-Za-z0-9]+=.*", pair):
            parser.error(f"--set {pair!r}: expected KEY=VALUE")
    extra = [f'{k}="{v}"' if v == "" else pair for pair in args.set for k, v in [pair.split("=", 1)]]
    try:
        result = with_overrides(options, extra, samconfig_overrides(args.config_env, args.samconfig))
    except ValueError as e:
        print(f"deploy: {e}", file=sys.stderr)
        return 2
    sys.stdout.write("".join(word + "\0" for word in result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
