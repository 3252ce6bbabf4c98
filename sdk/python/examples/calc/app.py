"""Calc: exact arithmetic for a model, with variables kept for the session.

Models are unreliable at arithmetic; this tool evaluates expressions exactly
(integers of any size, fractions, decimals) and keeps the variables a call
assigns for the later calls of the same session:

    {"expressions": ["rate = 17/400", "principal = 25000", "principal * rate"]}

It shows what the Python helper gives: the schema from a declaration, a
warm instance reused across the session's calls, the
classifications (read-only always; concurrency-safe only when nothing is
assigned, since assignments change the session's variables), progress per
expression, session state, and `ToolError` for the model's mistakes.
"""

import ast
import fractions
import math

import toolhost

# Operators allowed, and the functions a model may call.
_BINARY = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: fractions.Fraction(a) / fractions.Fraction(b),
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: _power(a, b),
}
_UNARY = {ast.UAdd: lambda a: +a, ast.USub: lambda a: -a}
_FUNCTIONS = {
    "abs": abs,
    "round": lambda x, n=0: round(fractions.Fraction(x), int(n)),
    "floor": math.floor,
    "ceil": math.ceil,
    "sqrt": lambda x: _exact(math.sqrt(x)),
    "min": min,
    "max": max,
    "gcd": math.gcd,
}
_CONSTANTS = {"pi": math.pi, "e": math.e}
# Keeps `9**9**9` from taking the instance's whole time and memory.
_MAX_DIGITS = 10_000


def _exact(x):
    return int(x) if isinstance(x, float) and x.is_integer() else x


def _power(a, b):
    if isinstance(b, int) and abs(b) * max(1, math.log10(abs(a) or 1)) > _MAX_DIGITS:
        raise toolhost.ToolError(f"{a}**{b} has more than {_MAX_DIGITS} digits", "too-large")
    return fractions.Fraction(a) ** b if isinstance(b, int) and b < 0 else a**b


def _show(value):
    if isinstance(value, fractions.Fraction):
        if value.denominator == 1:
            return str(value.numerator)
        return f"{value.numerator}/{value.denominator} (≈ {float(value):.12g})"
    if isinstance(value, float):
        return f"{value:.15g}"
    return str(value)


def _encode(value):
    """A value as session state keeps it (exact for fractions)."""
    if isinstance(value, fractions.Fraction):
        return {"fraction": [value.numerator, value.denominator]}
    return {"number": value}


def _decode(stored):
    if "fraction" in stored:
        return fractions.Fraction(*stored["fraction"])
    return stored["number"]


class _Evaluator:
    def __init__(self, variables):
        self.variables = variables

    def run(self, source):
        self.source = source.strip()
        try:
            tree = ast.parse(source.strip(), mode="exec")
        except SyntaxError as e:
            raise toolhost.ToolError(f"`{source}` is not an expression: {e.msg}")
        if len(tree.body) != 1:
            raise toolhost.ToolError(f"`{source}`: one expression or assignment per entry")
        statement = tree.body[0]
        if isinstance(statement, ast.Assign):
            if len(statement.targets) != 1 or not isinstance(statement.targets[0], ast.Name):
                raise toolhost.ToolError(f"`{source}`: assign to one plain name")
            name = statement.targets[0].id
            if name in _CONSTANTS or name in _FUNCTIONS:
                raise toolhost.ToolError(f"`{name}` is a built-in name and cannot be assigned")
            value = self.value(statement.value)
            self.variables[name] = value
            return f"{name} = {_show(value)}"
        if isinstance(statement, ast.Expr):
            return _show(self.value(statement.value))
        raise toolhost.ToolError(f"`{source}`: only expressions and assignments are evaluated", "unsupported")

    def value(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Name):
            if node.id in self.variables:
                return self.variables[node.id]
            if node.id in _CONSTANTS:
                return _CONSTANTS[node.id]
            known = ", ".join(sorted(self.variables)) or "none yet"
            raise toolhost.ToolError(f"`{node.id}` is not defined (variables: {known})", "not-found")
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, right = self.value(node.left), self.value(node.right)
            try:
                return _BINARY[type(node.op)](left, right)
            except ZeroDivisionError:
                raise toolhost.ToolError("division by zero")
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](self.value(node.operand))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
            if node.keywords:
                raise toolhost.ToolError(f"{node.func.id}() takes no keyword arguments")
            args = [self.value(a) for a in node.args]
            try:
                return _FUNCTIONS[node.func.id](*args)
            except (TypeError, ValueError) as e:
                raise toolhost.ToolError(f"{node.func.id}(): {e}")
        raise toolhost.ToolError(
            f"`{ast.get_source_segment(self.source, node) or type(node).__name__}` is not supported: numbers, variables, + - * / // % **, and "
            f"{', '.join(sorted(_FUNCTIONS))}",
            "unsupported",
        )


def _assigns(input):
    return any("=" in e.replace("==", "") for e in input.get("expressions", []))


class Calc(toolhost.Tool):
    name = "Calc"
    description = "Evaluates arithmetic exactly, keeping variables for the session."
    prompt = (
        "Evaluates arithmetic expressions exactly: integers of any size, fractions (1/3 stays 1/3), "
        "decimals, + - * / // % **, and abs, round, floor, ceil, sqrt, min, max, gcd; pi and e.\n"
        "- Pass the steps in order in `expressions`; each is an expression or an assignment "
        "(`total = price * 3`).\n"
        "- Variables you assign stay defined for later calls in this conversation.\n"
        "- Use it instead of doing arithmetic in your head whenever the exact result matters."
    )
    search_hint = "math arithmetic calculator fractions"
    input_schema = {
        "type": "object",
        "properties": {
            "expressions": {
                "type": "array",
                "items": {"type": "string", "maxLength": 1000},
                "minItems": 1,
                "maxItems": 100,
                "description": "Expressions or assignments, evaluated in order",
            },
            "forget": {
                "type": "boolean",
                "description": "Forget every variable before evaluating",
            },
        },
        "required": ["expressions"],
    }
    read_only = True
    # Variables live in session state, nothing in the instance: one warm
    # instance may serve the session's calls.
    reuse_instance = True
    destructive = False

    def is_concurrency_safe(self, input):
        # Assignments change the session's variables: those calls run alone.
        return not _assigns(input) and not input.get("forget", False)

    def call(self, input, ctx):
        stored = {} if input.get("forget") else ctx.session.get_json("variables", {})
        evaluator = _Evaluator({name: _decode(v) for name, v in stored.items()})
        lines = []
        for i, source in enumerate(input["expressions"]):
            ctx.progress(f"{i + 1}/{len(input['expressions'])}: {source}")
            lines.append(evaluator.run(source))
        if _assigns(input) or input.get("forget"):
            ctx.session.set_json("variables", {n: _encode(v) for n, v in evaluator.variables.items()})
        return "\n".join(lines)


Tool = toolhost.export(Calc)
