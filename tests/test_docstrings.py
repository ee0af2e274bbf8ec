"""Every public name of gpcompose has a non-empty docstring, and every public module a page in
the API reference (issue 9, "Documentation").

Public means: every module of `gpcompose` whose dotted path has no component starting
with `_` (`gpcompose.contrib` in a test of its own, run when its optional dependencies are
installed); in each, every name not starting with `_` whose object is defined in gpcompose
(re-exported third-party objects such as `jax.typing.ArrayLike` are not ours to document);
and the public methods and properties of the public classes. Module-level constants (a dict of
problems, say) carry an attribute docstring: a string literal right after the assignment,
the convention that mkdocstrings renders in the API reference.
"""

import ast
import dataclasses
import importlib
import inspect
import pathlib
import pkgutil
import re
import sys
import types

import pytest

import gpcompose

# Bridges to other libraries: importing them needs their optional dependencies (NumPyro,
# ArviZ), which take seconds to import, so they are checked by a test of their own.
OPTIONAL_PACKAGE = "gpcompose.contrib"


def _is_private(dotted_name):
    return any(part.startswith("_") for part in dotted_name.split("."))


def _public_module_names():
    """The public modules, found without importing them (pkgutil imports only packages)."""
    names = ["gpcompose"]
    for info in pkgutil.walk_packages(gpcompose.__path__, "gpcompose.", onerror=lambda name: None):
        if not _is_private(info.name):
            names.append(info.name)
    return names


def _is_optional(name):
    return name == OPTIONAL_PACKAGE or name.startswith(OPTIONAL_PACKAGE + ".")


def _defined_in_gpcompose(obj):
    module = getattr(obj, "__module__", None)
    return isinstance(module, str) and (module == "gpcompose" or module.startswith("gpcompose."))


def _own_class_docstring(cls):
    """The class's own docstring, or None: a dataclass (every `eqx.Module`) without one is
    given `Name(field: type, ...)` by `dataclasses`, which documents nothing."""
    docstring = cls.__dict__.get("__doc__")
    if docstring and dataclasses.is_dataclass(cls) and re.fullmatch(rf"{re.escape(cls.__name__)}\(.*\)", docstring):
        return None
    return docstring


def _attribute_docstring(module, name):
    """The string literal after `name = ...` in the gpcompose module that defines `name`,
    following `from ._private import name as name` re-exports. Returns False for a name
    imported from outside gpcompose (not ours to document) and None for a missing docstring."""
    tree = ast.parse(pathlib.Path(inspect.getfile(module)).read_text())
    for position, statement in enumerate(tree.body):
        if isinstance(statement, ast.ImportFrom):
            bound = {alias.asname or alias.name: alias.name for alias in statement.names}
            if name not in bound:
                continue
            if statement.level == 0 and not (statement.module or "").startswith("gpcompose"):
                return False
            package = module.__name__ if hasattr(module, "__path__") else module.__name__.rpartition(".")[0]
            source = importlib.import_module("." * statement.level + (statement.module or ""), package)
            return _attribute_docstring(source, bound[name])
        if isinstance(statement, ast.Assign):
            targets = statement.targets
        elif isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        else:
            continue
        if any(isinstance(target, ast.Name) and target.id == name for target in targets):
            following = tree.body[position + 1] if position + 1 < len(tree.body) else None
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                return following.value.value
            return None
    return None


def _member_docstring(cls, name):
    """Docstring of a public method or property, looked up along the MRO through gpcompose
    classes (an override documented in its abstract base is documented); None for fields."""
    for owner in cls.__mro__:
        if name not in owner.__dict__:
            continue
        if not _defined_in_gpcompose(owner):
            return ""  # inherited from equinox or the standard library: not ours
        member = owner.__dict__[name]
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        if isinstance(member, property):
            member = member.fget
        if not callable(member):
            return ""  # a dataclass field's default or an enumeration item
        if member.__doc__:
            return member.__doc__
    return None


def _offenders(module_names):
    offenders = []
    for module_name in module_names:
        module = importlib.import_module(module_name)
        if not (module.__doc__ or "").strip():
            offenders.append(f"module {module_name}")
        for name in sorted(vars(module)):
            obj = getattr(module, name)
            if name.startswith("_") or isinstance(obj, types.ModuleType):
                continue
            qualified = f"{module_name}.{name}"
            if isinstance(obj, type):
                if not _defined_in_gpcompose(obj):
                    continue
                if not (_own_class_docstring(obj) or "").strip():
                    offenders.append(f"class {qualified}")
                for member_name in sorted(dir(obj)):
                    if member_name.startswith("_"):
                        continue
                    docstring = _member_docstring(obj, member_name)
                    if docstring != "" and not (docstring or "").strip():
                        offenders.append(f"member {qualified}.{member_name}")
            elif callable(obj):
                if _defined_in_gpcompose(obj) and not (obj.__doc__ or "").strip():
                    offenders.append(f"function {qualified}")
            else:
                docstring = _attribute_docstring(module, name)
                if docstring is not False and not (docstring or "").strip():
                    offenders.append(f"constant {qualified}")
    return offenders


def test_every_public_name_has_a_docstring():
    offenders = _offenders([name for name in _public_module_names() if not _is_optional(name)])
    assert not offenders, f"{len(offenders)} public names without a docstring:\n" + "\n".join(offenders)


def test_every_public_name_of_contrib_has_a_docstring():
    """`gpcompose.contrib`, when its optional dependencies are installed (`gpcompose[contrib]`)."""
    pytest.importorskip("numpyro")
    pytest.importorskip("arviz")
    offenders = _offenders([name for name in _public_module_names() if _is_optional(name)])
    assert not offenders, f"{len(offenders)} public names without a docstring:\n" + "\n".join(offenders)


def test_the_walk_sees_undocumented_names(monkeypatch):
    """The checker itself can fail: an undocumented function, class, method and a dataclass
    with only its generated docstring are reported, documented ones are not."""
    module = types.ModuleType("gpcompose.fake", "A module for this test.")

    def undocumented_function():
        pass

    class Undocumented:
        def method(self):
            pass

    @dataclasses.dataclass
    class AutoDocumented:
        field: int

    class Documented:
        """Documented."""

        @property
        def documented_property(self):
            """Documented."""

    for obj in (undocumented_function, Undocumented, AutoDocumented, Documented):
        obj.__module__ = "gpcompose.fake"
        setattr(module, obj.__name__, obj)
    monkeypatch.setitem(sys.modules, "gpcompose.fake", module)
    assert _offenders(["gpcompose.fake"]) == [
        "class gpcompose.fake.AutoDocumented",
        "class gpcompose.fake.Undocumented",
        "member gpcompose.fake.Undocumented.method",
        "function gpcompose.fake.undocumented_function",
    ]
    assert _attribute_docstring(gpcompose, "__version__") is None


def test_api_reference_covers_every_public_module():
    """Every public module has a `::: module` directive in docs/api/, so that mkdocstrings
    renders all of its public names in the API reference."""
    api_pages = pathlib.Path(__file__).resolve().parents[1] / "docs" / "api"
    rendered = {
        match
        for page in api_pages.glob("*.md")
        for match in re.findall(r"^::: ([\w.]+)$", page.read_text(), flags=re.MULTILINE)
    }
    missing = sorted(set(_public_module_names()) - rendered)
    assert not missing, f"public modules without an API page (docs/api/*.md): {missing}"
