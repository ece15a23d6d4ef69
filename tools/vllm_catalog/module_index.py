"""The vLLM sources of one release: modules parsed lazily, top-level names resolved
through imports the way Python would resolve them at runtime."""

from __future__ import annotations

import ast
import zipfile
from dataclasses import dataclass


@dataclass
class Binding:
    """What a top-level name is bound to at *runtime* in a module."""

    kind: str  # class | func | value | module | external
    module: str
    name: str
    node: ast.AST | None = None


class ModuleIndex:
    """Lazily parsed `vllm/**.py` sources of one wheel."""

    def __init__(self, wheel: zipfile.ZipFile) -> None:
        self.zip = wheel
        self.names = set(wheel.namelist())
        self._trees: dict[str, ast.Module] = {}
        self._tables: dict[str, dict[str, Binding]] = {}

    def path_of(self, module: str) -> str | None:
        base = module.replace(".", "/")
        for cand in (f"{base}.py", f"{base}/__init__.py"):
            if cand in self.names:
                return cand
        return None

    def is_package(self, module: str) -> bool:
        return f"{module.replace('.', '/')}/__init__.py" in self.names

    def tree(self, module: str) -> ast.Module:
        if module not in self._trees:
            path = self.path_of(module)
            if path is None:
                raise KeyError(module)
            self._trees[module] = ast.parse(self.zip.read(path), filename=path)
        return self._trees[module]

    def table(self, module: str) -> dict[str, Binding]:
        if module not in self._tables:
            table: dict[str, Binding] = {}
            self._tables[module] = table  # break import cycles
            self._fill(module, self.tree(module).body, table)
        return self._tables[module]

    def absolute_module(self, module: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        parts = module.split(".")
        pkg = parts if self.is_package(module) else parts[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        return ".".join(pkg + ([node.module] if node.module else []))

    def _fill(self, module: str, body: list[ast.stmt], table: dict[str, Binding]) -> None:
        """Bind the names a module body defines, in order (later bindings win)."""
        for stmt in body:
            if isinstance(stmt, ast.If):
                # Runtime semantics: `if TYPE_CHECKING:` is False, so only the
                # else branch binds names (e.g. `QuantizationMethods = Any`).
                test = ast.unparse(stmt.test)
                if test in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
                    self._fill(module, stmt.orelse, table)
                else:
                    self._fill(module, stmt.body, table)
            elif isinstance(stmt, ast.Try):
                self._fill(module, stmt.body, table)
            else:
                table.update(self._bindings(module, stmt))

    def _bindings(self, module: str, stmt: ast.stmt) -> dict[str, Binding]:
        """The names one top-level statement binds."""
        if isinstance(stmt, ast.ClassDef):
            return {stmt.name: Binding("class", module, stmt.name, stmt)}
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            return {stmt.name: Binding("func", module, stmt.name, stmt)}
        if isinstance(stmt, ast.Assign):
            return {
                t.id: Binding("value", module, t.id, stmt.value)
                for t in stmt.targets
                if isinstance(t, ast.Name)
            }
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            return {stmt.target.id: Binding("value", module, stmt.target.id, stmt.value)}
        if isinstance(stmt, ast.Import):
            found = {}
            for alias in stmt.names:
                if alias.asname:
                    found[alias.asname] = self._module_binding(alias.name)
                else:
                    top = alias.name.split(".")[0]
                    found[top] = self._module_binding(top)
            return found
        if isinstance(stmt, ast.ImportFrom):
            src = self.absolute_module(module, stmt)
            return {(a.asname or a.name): Binding("import", src, a.name) for a in stmt.names}
        return {}

    def _module_binding(self, name: str) -> Binding:
        if name.startswith("vllm") and self.path_of(name):
            return Binding("module", name, name)
        return Binding("external", name, name)

    def lookup(self, module: str, name: str, depth: int = 0) -> Binding:
        """Resolve `name` as seen from `module`, following imports."""
        if depth > 30:
            return Binding("external", module, name)
        if not module.startswith("vllm") or self.path_of(module) is None:
            return Binding("external", module, f"{module}.{name}" if module else name)
        binding = self.table(module).get(name)
        if binding is None:
            sub = f"{module}.{name}"
            if self.path_of(sub):
                return Binding("module", sub, sub)
            return Binding("external", module, f"{module}.{name}")
        if binding.kind == "import":
            src = binding.module
            if src.startswith("vllm") and self.path_of(src):
                return self.lookup(src, binding.name, depth + 1)
            sub = f"{src}.{binding.name}"
            if sub.startswith("vllm") and self.path_of(sub):
                return Binding("module", sub, sub)
            return Binding("external", src, f"{src}.{binding.name}")
        return binding

    def find_class(self, module: str, name: str) -> Binding:
        binding = self.lookup(module, name)
        if binding.kind != "class":
            raise KeyError(f"{module}.{name} is not a class ({binding.kind})")
        return binding


def src_ref(index: ModuleIndex, module: str, node: ast.AST) -> str:
    return f"{index.path_of(module)}:{getattr(node, 'lineno', 0)}"
