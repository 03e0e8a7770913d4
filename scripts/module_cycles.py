#!/usr/bin/env python3
"""Fails on an import cycle between the files of one Rust crate (issue 42).

What it counts: for every target of a crate (`src/lib.rs`, `src/main.rs`, `src/bin/*`,
`tests/*.rs`, `benches/*.rs`, `examples/*.rs`), the module tree its `mod` declarations build
(`mod a;` → `a.rs` or `a/mod.rs`, `#[path]` honoured, inline `mod a { … }` kept in its file),
and one edge from a file to each file whose module it names: `crate::a::b`, `super::`,
`self::`, `use` trees (`use crate::{a, b::{c, d}}`, `pub use` re-exports, `as` renames) and
paths through a name a `use` brought in or a child module. A path resolves to the longest
module prefix it names, so `crate::tools::cost::parse` is an edge to `tools/cost.rs`.
Comments (doc links too) and string literals are not code and name nothing.

When it fails: an edge between a module and its own ancestor does not count (a parent
declares its children and a child may use its parent's items); any other cycle, however
long, does. It prints each strongly connected set of files as one cycle, `a.rs → b.rs →
a.rs`, and exits 1; 0 when there is none; 2 on a crate it cannot read.

Neighbours: `scripts/test`'s `module_cycles` stage runs it on every workspace member;
`tests/module_cycles/` holds its own tests and fixture crates. Edges a macro or `include!`
would add are not seen.

Usage: `scripts/module_cycles.py [CRATE_DIR…]` (default: the workspace's members).
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

Module = tuple[str, ...]

IDENT = r"(?:r#)?[A-Za-z_][A-Za-z0-9_]*"
PATH_RE = re.compile(rf"(?<![A-Za-z0-9_:]){IDENT}(?:\s*::\s*{IDENT})+")
USE_RE = re.compile(r"\buse\s+([^;]*);")
MOD_RE = re.compile(
    rf'((?:#\[[^\]]*\]\s*)*)(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+({IDENT})\s*([;{{])'
)
PATH_ATTR_RE = re.compile(r'#\[\s*path\s*=\s*"([^"]+)"\s*\]')


def strip_code(text: str) -> str:
    """`text` with comments, string and char literals blanked (newlines and length kept)."""
    out = []
    i, n = 0, len(text)

    def blank(s: str) -> str:
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif m := re.compile(r'b?r(#*)"').match(text, i):
            if i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_"):
                out.append(c)
                i += 1
                continue
            end = text.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append(" " + blank(text[i + 1 : j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i : j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}') or a lifetime ('a): only the former
            # closes within a few characters.
            m = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'").match(
                text, i
            )
            if m:
                out.append(blank(m.group(0)))
                i = m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def expand_use(tree: str) -> list[tuple[list[str], str | None]]:
    """The leaves of a `use` tree: (path segments, the name it binds or None for a glob).
    `as` renames are marked beforehand ([`expand_use_spaced`]), whitespace being removed here."""
    tree = re.sub(r"\s+", "", tree)

    def split_top(s: str) -> list[str]:
        parts, depth, start = [], 0, 0
        for k, ch in enumerate(s):
            if ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
            elif ch == "," and depth == 0:
                parts.append(s[start:k])
                start = k + 1
        parts.append(s[start:])
        return [p for p in parts if p]

    def walk(prefix: list[str], s: str) -> list[tuple[list[str], str | None]]:
        brace = s.find("{")
        if brace >= 0 and s.endswith("}"):
            head = [seg for seg in s[:brace].split("::") if seg]
            leaves = []
            for part in split_top(s[brace + 1 : -1]):
                leaves += walk(prefix + head, part)
            return leaves
        segs = [seg for seg in s.split("::") if seg]
        if segs and segs[-1] == "*":
            return [(prefix + segs[:-1], None)]
        if segs and segs[-1] == "self":
            segs = segs[:-1]
            path = prefix + segs
            return [(path, path[-1] if path else None)]
        path = prefix + segs
        return [(path, path[-1] if path else None)]

    return walk([], tree)


def expand_use_spaced(tree: str) -> list[tuple[list[str], str | None]]:
    """[`expand_use`] with `as` renames: `a::b as c` binds `c` to `a::b`."""
    renames: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        key = f"__as{len(renames)}__"
        renames[key] = m.group(2)
        return f"{m.group(1)}{key}"

    marked = re.sub(rf"({IDENT})\s+as\s+({IDENT}|_)", rename, tree)
    leaves = []
    for path, name in expand_use(marked):
        if path and (m := re.match(r"(.*)(__as\d+__)$", path[-1])):
            path = path[:-1] + [m.group(1)]
            name = renames[m.group(2)]
            name = None if name == "_" else name
        leaves.append((path, name))
    return leaves


@dataclass
class CrateTree:
    """The module tree of one target: module path → the file that holds it."""

    root: Path
    files: dict[Module, Path] = field(default_factory=dict)
    holder: dict[Module, Module] = field(default_factory=dict)  # module → its file's module
    errors: list[str] = field(default_factory=list)

    def add_file(self, module: Module, path: Path, own_dir: Path) -> None:
        if module in self.files or not path.is_file():
            return
        self.files[module] = path
        self.holder[module] = module
        raw = path.read_text(encoding="utf-8", errors="replace")
        self._declare(raw, strip_code(raw), 0, (module, module), own_dir, path)

    def _declare(
        self, raw: str, code: str, offset: int, mods: tuple[Module, Module], own_dir: Path, path: Path
    ) -> None:
        """Declares the modules `code` (the text at `offset` of the file, stripped) declares
        at its top level; `mods` is (the file's module, the module `code` is the body of)."""
        file_mod, here = mods
        for m in MOD_RE.finditer(code):
            if self._nesting(code, m.start()) != 0:
                continue
            name, kind = m.group(2).removeprefix("r#"), m.group(3)
            child = here + (name,)
            # `#[path]`'s string is blanked in `code`: read it from the file's own text.
            attr = PATH_ATTR_RE.search(raw[offset + m.start(1) : offset + m.end(1)])
            if kind == ";":
                if attr:
                    target = path.parent / attr.group(1)
                    self.add_file(child, target, target.parent / target.stem)
                    continue
                candidates = [own_dir / f"{name}.rs", own_dir / name / "mod.rs"]
                found = next((c for c in candidates if c.is_file()), None)
                if found is None:
                    self.errors.append(f"{path}: `mod {name};` has no file")
                    continue
                self.add_file(child, found, own_dir / name)
            else:
                self.holder[child] = file_mod
                body = self._block(code, m.end() - 1)
                self._declare(raw, body, offset + m.end(), (file_mod, child), own_dir / name, path)

    @staticmethod
    def _nesting(code: str, pos: int) -> int:
        """Brace depth at `pos` relative to the text given (0: top level of that text)."""
        return code.count("{", 0, pos) - code.count("}", 0, pos)

    @staticmethod
    def _block(code: str, open_brace: int) -> str:
        """The text inside the block opening at `open_brace`."""
        depth = 0
        for k in range(open_brace, len(code)):
            if code[k] == "{":
                depth += 1
            elif code[k] == "}":
                depth -= 1
                if depth == 0:
                    return code[open_brace + 1 : k]
        return code[open_brace + 1 :]


def inline_scopes(code: str, file_mod: Module) -> list[tuple[int, int, Module]]:
    """(start, end, module) of the file's top scope and each inline `mod a { … }` in it."""
    scopes = [(0, len(code), file_mod)]

    def walk(start: int, end: int, here: Module) -> None:
        text = code[start:end]
        for m in MOD_RE.finditer(text):
            if m.group(3) != "{" or CrateTree._nesting(text, m.start()) != 0:
                continue
            body_start = start + m.end()
            body = CrateTree._block(code, body_start - 1)
            child = here + (m.group(2).removeprefix("r#"),)
            scopes.append((body_start, body_start + len(body), child))
            walk(body_start, body_start + len(body), child)

    walk(0, len(code), file_mod)
    return scopes


def resolve(
    segs: list[str],
    here: Module,
    tree: CrateTree,
    aliases: dict[str, Module],
) -> Module | None:
    """The absolute path `segs` names from module `here`, or None when outside the crate."""
    segs = [s.removeprefix("r#") for s in segs]
    if not segs:
        return None
    first, rest = segs[0], segs[1:]
    if first == "crate":
        base: Module = ()
    elif first == "self":
        base = here
    elif first == "super":
        base = here
        while True:
            base = base[:-1]
            if not rest or rest[0] != "super":
                break
            rest = rest[1:]
    elif first in aliases:
        base = aliases[first]
    elif here + (first,) in tree.holder:
        base = here + (first,)
    else:
        return None
    return base + tuple(rest)


def owning_file(path: Module, tree: CrateTree) -> Module:
    """The module of the file holding the longest module prefix of `path`."""
    for k in range(len(path), -1, -1):
        if path[:k] in tree.holder:
            return tree.holder[path[:k]]
    return ()


def related(a: Module, b: Module) -> bool:
    """Whether one of the two modules is the other or its ancestor."""
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    return long_[: len(short)] == short


def edges(tree: CrateTree) -> dict[Module, set[Module]]:
    """File → the files it names, without edges to itself, its ancestors or descendants."""
    graph: dict[Module, set[Module]] = {m: set() for m in tree.files}
    for file_mod, path in tree.files.items():
        code = strip_code(path.read_text(encoding="utf-8", errors="replace"))
        scopes = inline_scopes(code, file_mod)

        def scope_at(pos: int) -> Module:
            inner = [s for s in scopes if s[0] <= pos < s[1]]
            return max(inner, key=lambda s: len(s[2]))[2] if inner else file_mod

        aliases: dict[str, Module] = {}
        uses = [(scope_at(m.start()), m) for m in USE_RE.finditer(code)]
        named: list[tuple[Module, list[str]]] = []
        for _ in range(2):  # a `use` may go through a name another `use` brought in
            named = []
            for here, m in uses:
                for segs, name in expand_use_spaced(m.group(1)):
                    named.append((here, segs))
                    target = resolve(segs, here, tree, aliases)
                    if target is not None and name is not None:
                        aliases[name] = target
        rest = USE_RE.sub(lambda m: " " * len(m.group(0)), code)
        for m in PATH_RE.finditer(rest):
            named.append((scope_at(m.start()), re.split(r"\s*::\s*", m.group(0))))
        for here, segs in named:
            target = resolve(segs, here, tree, aliases)
            if target is None:
                continue
            dest = owning_file(target, tree)
            if not related(file_mod, dest):
                graph[file_mod].add(dest)
    return graph


def cycles(graph: dict[Module, set[Module]]) -> list[list[Module]]:
    """One cycle through each strongly connected set of two or more files (Tarjan)."""
    index: dict[Module, int] = {}
    low: dict[Module, int] = {}
    stack: list[Module] = []
    on_stack: set[Module] = set()
    sccs: list[list[Module]] = []

    def visit(v: Module) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            scc = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                scc.append(w)
                if w == v:
                    break
            if len(scc) > 1:
                sccs.append(sorted(scc))

    sys.setrecursionlimit(10_000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    found = []
    for scc in sorted(sccs):
        members = set(scc)
        start = scc[0]
        # Shortest way back to `start` inside the set (breadth first).
        prev: dict[Module, Module] = {}
        frontier, seen = [start], {start}
        end = None
        while frontier and end is None:
            nxt = []
            for v in frontier:
                for w in sorted(graph[v] & members):
                    if w == start:
                        end = v
                        break
                    if w not in seen:
                        seen.add(w)
                        prev[w] = v
                        nxt.append(w)
                if end is not None:
                    break
            frontier = nxt
        path = [end]
        while path[-1] != start:
            path.append(prev[path[-1]])
        found.append(list(reversed(path)) + [start])
    return found


def targets(crate: Path) -> list[Path]:
    """Every target root of the crate at `crate`."""
    roots = [crate / "src" / "lib.rs", crate / "src" / "main.rs"]
    bin_dir = crate / "src" / "bin"
    if bin_dir.is_dir():
        roots += sorted(bin_dir.glob("*.rs")) + sorted(bin_dir.glob("*/main.rs"))
    for kind in ("tests", "benches", "examples"):
        d = crate / kind
        if d.is_dir():
            roots += sorted(d.glob("*.rs")) + sorted(d.glob("*/main.rs"))
    return [r for r in roots if r.is_file()]


def check_crate(crate: Path) -> tuple[list[str], list[str]]:
    """(cycles as printable lines, errors) of every target of `crate`."""
    lines, errors = [], []
    for root in targets(crate):
        tree = CrateTree(root)
        tree.add_file((), root, root.parent)
        errors += tree.errors
        for cycle in cycles(edges(tree)):
            shown = " → ".join(str(tree.files[m].relative_to(crate)) for m in cycle)
            lines.append(f"{crate.name} ({root.relative_to(crate)}): {shown}")
    return lines, errors


def workspace_members(root: Path) -> list[Path]:
    """The members of the workspace whose `Cargo.toml` is at `root`."""
    with open(root / "Cargo.toml", "rb") as f:
        members = tomllib.load(f).get("workspace", {}).get("members", [])
    return [root / m for m in members]


def main(argv: list[str]) -> int:
    repo = Path(__file__).resolve().parent.parent
    crates = [Path(a).resolve() for a in argv] or workspace_members(repo)
    found, errors = [], []
    for crate in crates:
        if not (crate / "src").is_dir() and not targets(crate):
            errors.append(f"{crate}: not a crate (no src/ and no targets)")
            continue
        lines, errs = check_crate(crate)
        found += lines
        errors += errs
    for e in errors:
        print(f"module_cycles: {e}", file=sys.stderr)
    for line in found:
        print(f"import cycle: {line}")
    if errors:
        return 2
    if found:
        print(f"{len(found)} import cycle(s) between files of one crate", file=sys.stderr)
        return 1
    print(f"no import cycle in {len(crates)} crate(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
