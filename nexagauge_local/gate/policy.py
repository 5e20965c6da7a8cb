"""The gate policy file: parsing and validation, with the file and line of every bad rule.

Format (TOML):

    rules = [
      "grounding.mean >= 0.8",
      "redteam.toxicity.pass_rate >= 0.98",
      "redteam.aggregate.high_stakes_failure_rate <= 0.0",
    ]
    optional = [                      # SKIP instead of an error when the run lacks the metric
      "geval.answers_question.mean >= 0.7",
    ]

    [compare]                         # needs --baseline RUN_BASE
    max_regression = 0.02             # largest drop of any metric's mean or pass rate

    [coverage]                        # optional; the default is every probe judged
    min_judged = 1.0                  # a rate rule FAILS below this n_judged / n

A rule is `PATH OP NUMBER`, OP one of >= <= > < ==. Rules are strings rather than tables
because one line reads like the threshold it states and is easy to review in a diff.
"""

from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

Op = Literal[">=", "<=", ">", "<", "=="]
OPS: dict[str, str] = {
    ">=": "at least",
    "<=": "at most",
    ">": "above",
    "<": "below",
    "==": "equal to",
}
_OP: dict[str, Op] = {op: op for op in get_args(Op)}  # _RULE's op text -> the typed Op
TOP_KEYS = ("rules", "optional", "compare", "coverage")
COMPARE_KEYS = ("max_regression",)
COVERAGE_KEYS = ("min_judged",)
# A rate counted over the probes that survived (judged, answered) says little about the rest:
# by default a rule on a rate passes only when every probe in its scope was judged.
DEFAULT_MIN_JUDGED = 1.0

_RULE = re.compile(
    r"^\s*(?P<path>[A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)+)\s*"
    r"(?P<op>>=|<=|==|>|<)\s*"
    r"(?P<value>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s*$"
)
_TOML_LINE = re.compile(r"at line (\d+)")


class PolicyError(Exception):
    """A bad policy; str() is `FILE:LINE: message`, the form editors and CI logs link.

    One exception can carry every problem found in a pass (`errors`, see `combine`): fixing a
    policy one error per run is slow, so str() then has one `FILE:LINE: message` line each, and
    path/line/message are those of the first.
    """

    def __init__(self, path: Path, line: int | None, message: str) -> None:
        self.path, self.line, self.message = path, line, message
        self.errors: list[PolicyError] = [self]
        where = f"{path}:{line}" if line else str(path)
        super().__init__(f"{where}: {message}")

    @classmethod
    def combine(cls, errors: Sequence[PolicyError]) -> PolicyError:
        """One PolicyError listing all of `errors` (in order), each on its own line."""
        flat = [e for err in errors for e in err.errors]
        first = flat[0]
        out = cls(first.path, first.line, first.message)
        out.errors = flat
        out.args = ("\n".join(str(e.args[0]) for e in flat),)
        return out


@dataclass(frozen=True)
class Rule:
    text: str  # as written in the policy (also the JUnit test name)
    path: str  # e.g. redteam.toxicity.pass_rate
    op: Op
    threshold: float
    line: int | None
    optional: bool = False

    def holds(self, value: float) -> bool:
        t = self.threshold
        match self.op:
            case ">=":
                return value >= t
            case "<=":
                return value <= t
            case ">":
                return value > t
            case "<":
                return value < t
            case "==":
                return math.isclose(value, t, rel_tol=1e-9, abs_tol=1e-12)


@dataclass(frozen=True)
class Policy:
    path: Path
    rules: list[Rule]
    min_judged: float = DEFAULT_MIN_JUDGED  # [coverage] min_judged (gate/coverage.py)

    @property
    def needs_baseline(self) -> bool:
        return any(r.path.startswith("compare.") for r in self.rules)


class _Lines:
    """Finds where a value sits in the raw text.

    Why search the text: tomllib (stdlib) returns plain values with no source positions, and a
    round-trip parser (tomlkit) would be a dependency only for line numbers. A rule is a literal
    string in the file, so its text is found verbatim; scanning forward from the previous rule
    keeps duplicates and several rules on one line in their right place.
    """

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.pos = (0, 0)  # (line index, column) just after the last match

    def key(self, key: str, table: str | None = None) -> int | None:
        """Line of `key =` (inside `[table]` when given), or of the `[table]` header."""
        start = 0
        if table is not None:
            header = re.compile(rf"^\s*\[\s*{re.escape(table)}\s*\]")
            start = next((i for i, ln in enumerate(self.lines) if header.match(ln)), -1)
            if start < 0:
                return None
            if key == "":
                return start + 1
        assign = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
        for i in range(start, len(self.lines)):
            if assign.match(self.lines[i]):
                return i + 1
        return None

    def find(self, literal: str, since: int | None = None) -> int | None:
        line, col = self.pos
        if since is not None and since - 1 > line:
            line, col = since - 1, 0
        for i in range(line, len(self.lines)):
            at = self.lines[i].find(literal, col if i == line else 0)
            if at >= 0:
                self.pos = (i, at + len(literal))
                return i + 1
        return None


def parse_rule(text: str, line: int | None, optional: bool, path: Path) -> Rule:
    m = _RULE.match(text)
    if m is None:
        raise PolicyError(
            path,
            line,
            f"bad rule {text!r}: expected `NODE[.METRIC].STAT OP NUMBER`"
            f' with OP one of {" ".join(OPS)}, e.g. "grounding.mean >= 0.8"',
        )
    value = float(m["value"])
    return Rule(
        text=text.strip(),
        path=m["path"],
        op=_OP[m["op"]],
        threshold=value,
        line=line,
        optional=optional,
    )


def load_policy(path: Path) -> Policy:
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PolicyError(path, None, f"cannot read policy ({exc})") from None
    try:
        data = tomllib.loads(raw)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_LINE.search(str(exc))
        raise PolicyError(
            path, int(found[1]) if found else None, f"not valid TOML: {exc}"
        ) from None
    return parse_policy(data, raw, path)


def parse_policy(data: dict[str, object], raw: str, path: Path) -> Policy:
    """Validate the whole policy in one pass; raises one PolicyError carrying every problem."""
    where = _Lines(raw)
    errors: list[PolicyError] = []
    for key in data:
        if key not in TOP_KEYS:
            errors.append(
                PolicyError(
                    path,
                    where.key(key) or where.key("", key),
                    f"unknown key {key!r}; a policy has {', '.join(TOP_KEYS)}",
                )
            )
    rules: list[Rule] = []
    for key, optional in (("rules", False), ("optional", True)):
        rules.extend(_list_rules(data.get(key, []), key, optional, where, path, errors))
    rules.extend(_compare_rules(data.get("compare"), where, path, errors))
    min_judged = _coverage(data.get("coverage"), where, path, errors)
    if not rules and not errors:
        errors.append(PolicyError(path, None, "the policy has no rules (add `rules = [...]`)"))
    errors.extend(_duplicates(rules, path))
    if errors:
        raise PolicyError.combine(sorted(errors, key=lambda e: e.line or 0))
    return Policy(path=path, rules=rules, min_judged=min_judged)


def _list_rules(
    items: object, key: str, optional: bool, where: _Lines, path: Path, errors: list[PolicyError]
) -> list[Rule]:
    """The rules of one list (`rules` or `optional`); problems go to `errors`."""
    key_line = where.key(key)
    if not isinstance(items, list):
        errors.append(
            PolicyError(
                path, key_line, f'{key} must be a list of strings such as ["grounding.mean >= 0.8"]'
            )
        )
        return []
    where.pos = (key_line - 1, 0) if key_line else where.pos
    rules: list[Rule] = []
    for item in items:
        if not isinstance(item, str):
            errors.append(
                PolicyError(path, key_line, f"{key}: every rule must be a string, got {item!r}")
            )
            continue
        try:
            rules.append(parse_rule(item, where.find(item, key_line) or key_line, optional, path))
        except PolicyError as exc:
            errors.append(exc)
    return rules


def _duplicates(rules: list[Rule], path: Path) -> list[PolicyError]:
    seen: dict[str, Rule] = {}
    out: list[PolicyError] = []
    for rule in rules:
        if rule.path in seen and seen[rule.path].op == rule.op:
            out.append(
                PolicyError(
                    path, rule.line, f"{rule.path} {rule.op} is also set at line {seen[rule.path].line}"
                )
            )
        seen[rule.path] = rule
    return out


def _compare_rules(
    table: object, where: _Lines, path: Path, errors: list[PolicyError]
) -> list[Rule]:
    if table is None:
        return []
    header = where.key("", "compare")
    if not isinstance(table, dict):
        errors.append(
            PolicyError(
                path,
                where.key("compare") or header,
                "compare must be a table: [compare] max_regression = 0.02",
            )
        )
        return []
    out: list[Rule] = []
    for key, value in table.items():
        # `[compare] max_regression = x` or the dotted form `compare.max_regression = x`
        line = where.key(key, "compare") or where.key(f"compare.{key}") or header
        if key not in COMPARE_KEYS:
            errors.append(
                PolicyError(
                    path, line, f"unknown key compare.{key}; known: {', '.join(COMPARE_KEYS)}"
                )
            )
        elif isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            errors.append(
                PolicyError(path, line, f"compare.{key} must be a number >= 0, got {value!r}")
            )
        else:
            out.append(
                Rule(
                    text=f"compare.{key} <= {value}",
                    path=f"compare.{key}",
                    op="<=",
                    threshold=float(value),
                    line=line,
                )
            )
    return out


def _coverage(table: object, where: _Lines, path: Path, errors: list[PolicyError]) -> float:
    """`[coverage] min_judged`: a number in [0, 1]; the default when the table is absent."""
    if table is None:
        return DEFAULT_MIN_JUDGED
    header = where.key("", "coverage")
    if not isinstance(table, dict):
        errors.append(PolicyError(path, where.key("coverage") or header,
                                  "coverage must be a table: [coverage] min_judged = 1.0"))
        return DEFAULT_MIN_JUDGED
    out = DEFAULT_MIN_JUDGED
    for key, value in table.items():
        line = where.key(key, "coverage") or where.key(f"coverage.{key}") or header
        if key not in COVERAGE_KEYS:
            errors.append(PolicyError(
                path, line, f"unknown key coverage.{key}; known: {', '.join(COVERAGE_KEYS)}"))
        elif (isinstance(value, bool) or not isinstance(value, int | float)
              or not 0.0 <= value <= 1.0):
            errors.append(PolicyError(
                path, line, f"coverage.{key} must be a number from 0 to 1, got {value!r}"))
        else:
            out = float(value)
    return out
