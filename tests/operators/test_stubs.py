"""``python/fieldrank/_core.pyi`` against the binary, so the hand-written stub cannot drift.

pybind11 writes each function's signature as the first line of its ``__doc__``
(``name(arg: type, ... = default) -> return``). The stub is parsed with ``ast``; names, argument
names and order, defaults, argument kinds (float32/int64 array and rank, int, float, bool,
sequences, optional) and return types must agree. ``mypy.stubtest`` runs too where mypy is installed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import fieldrank
from fieldrank import _core

STUB = Path(fieldrank.__file__).with_name("_core.pyi")
PREFIX = "fieldrank._core."


# --------------------------------------------------------------------------- the binary's side


def split_top_level(text: str, separator: str = ",") -> list:
    """Split on `separator` outside brackets and quotes."""
    parts, depth, quote, current = [], 0, None, []
    for char in text:
        if quote:
            quote = None if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    if "".join(current).strip():
        parts.append("".join(current).strip())
    return parts


def binary_signature(function):
    """[(name, kind, default or None)], return type, from pybind11's docstring signature line."""
    line = (function.__doc__ or "").splitlines()[0]
    name = function.__name__
    assert line.startswith(name + "("), f"{name}: no signature line in __doc__: {line!r}"
    depth, end = 0, None
    for i, char in enumerate(line[len(name):], start=len(name)):
        depth += char == "("
        depth -= char == ")"
        if depth == 0:
            end = i
            break
    arguments = []
    for part in split_top_level(line[len(name) + 1:end]):
        head, _, default = part.partition(" = ")
        arg, _, annotation = head.partition(": ")
        arguments.append((arg.strip(), binary_kind(annotation.strip()), default.strip() or None))
    returns = line[end + 1:].strip()
    assert returns.startswith("-> "), line
    return arguments, returns[3:].replace(PREFIX, "")


def binary_kind(annotation: str) -> str:
    """A canonical kind of a pybind11 annotation."""
    if annotation.endswith(" | None"):
        return binary_kind(annotation[: -len(" | None")]) + "|None"
    sequence = "collections.abc.Sequence["
    if annotation.startswith(sequence):
        return f"seq[{binary_kind(annotation[len(sequence):-1])}]"
    for dtype in ("float32", "float64", "int64", "int32", "uint16", "uint8", "int8"):  # uint8 before int8
        if f"numpy.{dtype}" in annotation:
            rank = 2 if '"[m, n]"' in annotation else 1
            contiguous = "C" if "flags.c_contiguous" in annotation else ""
            return f"{dtype}[{rank}]{contiguous}"
    simple = {
        "typing.SupportsInt | typing.SupportsIndex": "int",
        "typing.SupportsFloat | typing.SupportsIndex": "float",
        "bool": "bool",
        "int": "int",
        "str": "str",
    }
    assert annotation in simple, f"unknown pybind11 annotation {annotation!r}: teach binary_kind"
    return simple[annotation]


# --------------------------------------------------------------------------- the stub's side

STUB_ALIASES = {
    "_F32Matrix": "float32[2]C",
    "_F32Vector": "float32[1]",
    "_I64Vector": "int64[1]",
    "_U16Matrix": "uint16[2]C",
    "_I8Matrix": "int8[2]C",
    "_I32Vector": "int32[1]",
    "_F64Matrix": "float64[2]C",
    "_U8Vector": "uint8[1]",
    "_F32Result": "float32[2]",
    "int": "int",
    "str": "str",
    "float": "float",
    "bool": "bool",
}


def stub_kind(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        assert node.id in STUB_ALIASES, f"unknown stub annotation {node.id}"
        return STUB_ALIASES[node.id]
    assert isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name), ast.unparse(node)
    if node.value.id == "Optional":
        return stub_kind(node.slice) + "|None"
    if node.value.id == "Sequence":
        return f"seq[{stub_kind(node.slice)}]"
    raise AssertionError(f"unknown stub annotation {ast.unparse(node)}")


def parse_stub(source: str):
    """(functions {name: (arguments, returns)}, classes {name: members}, constants {name})."""
    tree = ast.parse(source)
    functions, classes, constants = {}, {}, set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            args = node.args
            assert not (args.vararg or args.kwarg or args.kwonlyargs or args.posonlyargs), node.name
            defaults = [None] * (len(args.args) - len(args.defaults)) + [ast.unparse(d) for d in args.defaults]
            arguments = [(a.arg, stub_kind(a.annotation), default) for a, default in zip(args.args, defaults)]
            functions[node.name] = (arguments, ast.unparse(node.returns))
        elif isinstance(node, ast.ClassDef):
            classes[node.name] = {item.name for item in node.body if isinstance(item, ast.FunctionDef)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            constants.add(node.target.id)
    return functions, classes, constants


# --------------------------------------------------------------------------- the comparison


def stub_problems(source: str) -> list:
    """Every difference between a stub source and the binary (empty: they agree)."""
    functions, classes, constants = parse_stub(source)
    problems = []
    public = {name for name in dir(_core) if not name.startswith("_")}
    stubbed = set(functions) | set(classes) | constants
    problems += [f"{name}: in the binary, not in the stub" for name in sorted(public - stubbed)]
    problems += [f"{name}: in the stub, not in the binary" for name in sorted(stubbed - public)]
    for name in sorted(set(functions) & public):
        binary = getattr(_core, name)
        if not callable(binary) or isinstance(binary, type):
            problems.append(f"{name}: a function in the stub, not in the binary")
            continue
        arguments, returns = binary_signature(binary)
        stub_arguments, stub_returns = functions[name]
        if arguments != stub_arguments:
            problems.append(f"{name}: arguments {stub_arguments} in the stub, {arguments} in the binary")
        # An array returned by value is compared by kind (dtype and rank), as arguments are.
        array_return = returns.startswith("typing.Annotated[numpy")
        if (binary_kind(returns) != STUB_ALIASES.get(stub_returns)) if array_return else returns != stub_returns:
            problems.append(f"{name}: returns {stub_returns} in the stub, {returns} in the binary")
    for name in sorted(set(classes) & public):
        binary = getattr(_core, name)
        members = {member for member in vars(binary) if not member.startswith("_")}
        if members != classes[name]:
            problems.append(f"{name}: members {sorted(classes[name])} in the stub, {sorted(members)} in the binary")
    return problems


def test_stub_matches_the_binary():
    problems = stub_problems(STUB.read_text(encoding="utf-8"))
    assert problems == [], "\n".join(problems)


def test_every_binary_function_has_a_signature_line():
    for name in dir(_core):
        value = getattr(_core, name)
        if callable(value) and not isinstance(value, type) and not name.startswith("_"):
            arguments, returns = binary_signature(value)
            assert returns


def test_constants_have_the_stubbed_types():
    assert isinstance(_core.DEFAULTS, dict) and _core.DEFAULTS
    for key, value in _core.DEFAULTS.items():
        assert isinstance(key, str) and type(value) in (int, float), (key, value)
    assert isinstance(_core.BUILD_INFO, dict) and _core.BUILD_INFO
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in _core.BUILD_INFO.items())


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("def prefilter(E: _F32Matrix, q: _F32Vector, p: int,", "def prefilter(E: _F32Matrix, q: _F32Vector, k: int,"),
        ("    n_threads: int = 0,\n) -> NativeBatchRanking: ...\ndef cfs_pool(",
         "    n_threads: int = 1,\n) -> NativeBatchRanking: ...\ndef cfs_pool("),
        ("    fista: bool,\n    subset: Optional[_I64Vector] = None,\n) -> NativeReconstruction:",
         "    fista: float,\n    subset: Optional[_I64Vector] = None,\n) -> NativeReconstruction:"),
        ("def tie_key(seed: int, lap: int, id: int) -> int:", "def tie_key(seed: int, id: int, lap: int) -> int:"),
        ("    @property\n    def coef(self) -> _F32Vector: ...\n", ""),
        ("def hardware_threads(n_threads: int = 0) -> int:", "def hardware_thread(n_threads: int = 0) -> int:"),
        ("BUILD_INFO: dict[str, str]", "BUILD: dict[str, str]"),
        (") -> list[NativeFusedRanking]: ...", ") -> NativeFusedRanking: ..."),
    ],
    ids=["arg-name", "default", "arg-type", "arg-order", "member", "function-name", "constant", "return"],
)
def test_a_drifted_stub_is_caught(old, new):
    source = STUB.read_text(encoding="utf-8")
    assert source.count(old) == 1, old
    assert stub_problems(source.replace(old, new))


def test_stubtest(tmp_path):
    """mypy's own stub checker, where mypy is installed (it sees names; pybind11 hides signatures from it)."""
    pytest.importorskip("mypy.stubtest")
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\ncache_dir = {tmp_path / 'cache'}\n", encoding="utf-8")
    # pybind11 classes have the pybind11_type metaclass and a constructor that only raises
    # ("No constructor defined"); the stub states neither, on purpose.
    allowlist = tmp_path / "allowlist.txt"
    entries = [r"fieldrank\._core\.Native\w+", r"fieldrank\._core\.Native\w+\.__init__"]
    allowlist.write_text("\n".join(entries) + "\n", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "fieldrank._core", "--mypy-config-file", str(config),
         "--allowlist", str(allowlist)],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
