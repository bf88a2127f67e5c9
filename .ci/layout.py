#!/usr/bin/env python3
"""The layout ARCHITECTURE.md promises, checked (issue 61):

1. No file imports one that imports it back, directly or through others. A file's imports are
   its `use` declarations and the `crate::`/`super::` paths in its code (comments and test
   modules aside), each resolved to the file of the longest module it names. A module and its
   own ancestors or descendants are one family (a child names its parent's items, a parent
   declares and re-exports its children), so only imports between files of different families
   count.
2. No room of cli/src imports lib.rs or a room above it (the order below, ARCHITECTURE.md's).
3. No source file (tests aside: `tests.rs`, `*_tests.rs`) is over 600 lines.
4. ARCHITECTURE.md's code map names every source file: by its path, or in the row of its folder
   by its path from that folder (with or without `.rs`), in backticks.

Run from the repository's root: `python3 .ci/layout.py`. Prints what is wrong and exits 1."""
import os
import re
import sys

ROOTS = ["src", "actors/src", "sandbox/src", "restate/src", "cli/src"]
MAX_LINES = 600
# cli/src's rooms, lowest first; a room may import only rooms below it.
RANKS = {"error": 0, "bounded": 0, "interrupt": 1, "args": 2, "view": 3, "store": 4,
         "settings": 5, "setup": 6, "conversation": 7, "commands": 8, "front": 9, "acp": 9,
         "console": 10, "fuzzing": 11}


def is_test(path):
    name = os.path.basename(path)
    return name == "tests.rs" or name.endswith("_tests.rs")


def modules(root):
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".rs"):
                continue
            path = os.path.join(folder, name)
            parts = os.path.relpath(path, root)[:-3].split(os.sep)
            if parts[-1] in ("lib", "main", "mod"):
                parts = parts[:-1]
            found[tuple(parts)] = path
    return found


def expand(tree):
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, text):
        if text.startswith("{") and text.endswith("}"):
            depth, item, items = 0, "", []
            for ch in text[1:-1]:
                depth += ch == "{"
                depth -= ch == "}"
                if ch == "," and depth == 0:
                    items.append(item)
                    item = ""
                else:
                    item += ch
            if item:
                items.append(item)
            for item in items:
                walk(prefix, item)
            return
        match = re.match(r"^([A-Za-z0-9_]+)(::(.*))?$", text)
        if not match:
            out.append(prefix)
        elif match.group(3) is None:
            out.append(prefix + [match.group(1)])
        else:
            walk(prefix + [match.group(1)], match.group(3))

    walk([], tree)
    return out


def imports(root):
    mods = modules(root)
    edges = {}
    for mod, path in mods.items():
        if is_test(path):
            continue
        text = open(path, encoding="utf-8").read()
        text = re.split(r"#\[cfg\(test\)\]\s*mod tests", text)[0]
        text = re.sub(r"(?m)(^|\s)//.*$", r"\1", text)
        paths = []

        def based(head):
            words = head.split("::")
            if words[0] == "crate":
                return []
            if words[0] == "self":
                return list(mod)
            return list(mod)[: len(mod) - words.count("super")]

        for match in re.finditer(r"\buse\s+((?:crate|super|self)(?:::super)*)::([^;]+);", text):
            paths += [based(match.group(1)) + p for p in expand(match.group(2))]
        for match in re.finditer(r"\buse\s+([a-z_][a-z0-9_]*)::([^;]+);", text):
            if tuple(list(mod) + [match.group(1)]) in mods:
                paths += [list(mod) + [match.group(1)] + p for p in expand(match.group(2))]
        for match in re.finditer(
            r"(?<![:\w])((?:crate|super|self)(?:::super)*)::([A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)", text
        ):
            paths.append(based(match.group(1)) + match.group(2).split("::"))
        targets = set()
        for p in paths:
            target = next((tuple(p[:k]) for k in range(len(p), 0, -1) if tuple(p[:k]) in mods), ())
            family = target == mod[: len(target)] or mod == target[: len(mod)]
            if target != mod and not family:
                targets.add(target)
        edges[mod] = targets
    return mods, edges


def circles(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    sys.setrecursionlimit(100000)

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(component)

    for v in nodes:
        if v not in index:
            strong(v)
    return out


def named_files(architecture):
    rows = [line for line in architecture.splitlines() if line.startswith("| `")]
    named = set()
    for row in rows:
        cells = row.split("|")
        first = re.findall(r"`([^`]+)`", cells[1])
        mentioned = set(re.findall(r"`([^`]+)`", row))
        named |= {m for m in mentioned if m.endswith(".rs")}
        for head in first:
            folder = head if head.endswith("/") else (head[:-3] + "/" if head.endswith(".rs") else None)
            if folder:
                for m in mentioned:
                    rel = m if m.endswith(".rs") else m + ".rs"
                    named.add(folder + rel)
                    # `draw.rs` in the row of `cli/src/front/` is cli/src/front/draw.rs;
                    # `console/probe.rs` in the row of `actors/src/console.rs` too.
                    named.add(os.path.dirname(folder.rstrip("/")) + "/" + rel)
    return named


def main():
    problems = []
    for root in ROOTS:
        mods, edges = imports(root)
        for component in circles(list(mods), edges):
            names = sorted(mods[m] for m in component)
            problems.append("circle: " + " <-> ".join(names))
        if root == "cli/src":
            for mod, targets in edges.items():
                for target in targets:
                    if not mod:
                        continue
                    if not target:
                        problems.append(f"{mods[mod]} imports lib.rs")
                    elif target[0] != mod[0] and RANKS.get(target[0], 99) >= RANKS.get(mod[0], -1):
                        problems.append(f"{mods[mod]} imports {mods[target]}, a room above or beside it")
    architecture = open("ARCHITECTURE.md", encoding="utf-8").read()
    named = named_files(architecture)
    for root in ROOTS:
        for folder, _, names in os.walk(root):
            for name in sorted(names):
                path = os.path.join(folder, name)
                if not name.endswith(".rs") or is_test(path):
                    continue
                lines = sum(1 for _ in open(path, encoding="utf-8"))
                if lines > MAX_LINES:
                    problems.append(f"{path}: {lines} lines (at most {MAX_LINES})")
                if path not in named:
                    problems.append(f"{path}: not named in ARCHITECTURE.md's code map")
    for problem in problems:
        print(problem)
    print(f"layout: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
