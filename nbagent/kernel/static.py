"""Reading a value without running its code: static attributes, plain items, safe reprs.

``getattr(obj, name)`` runs properties, ``__getattr__`` and ``__getattribute__``;
``obj[key]`` runs ``__getitem__``; ``repr(obj)`` runs ``__repr__``. Here attributes
are looked up in the instance's ``__dict__`` and the class's MRO dictionaries, as
:func:`inspect.getattr_static` does, but every step reads C-level data only (even
``__dict__`` and ``__mro__`` are read through ``type``'s own descriptors, so a class
that redefines them runs nothing). A Python-level descriptor (a property) raises
:class:`NotEvaluated`, whose message tells the model what it can do instead.

pandas and numpy types count as library code (:func:`is_trusted`): a type is
trusted only if it is the very object its pandas/numpy module defines under its
name, so ``__module__ = "numpy.x"`` on a user's class does not make it trusted.
"""

from __future__ import annotations

import collections
import sys
import types
from typing import Any

__all__ = [
    "NotEvaluated",
    "class_members",
    "defined_in",
    "exact_builtin_base",
    "is_trusted",
    "public_class_attributes",
    "static_attribute",
    "static_item",
    "static_repr",
    "type_label",
]

_TYPE_DICT = type.__dict__["__dict__"]
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_NAME = type.__dict__["__name__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]
_TYPE_MODULE = type.__dict__["__module__"]
_MISSING = object()
_TRUSTED_PACKAGES = ("pandas", "numpy")

_Pair: Any = collections.namedtuple("_Pair", "a")
_C_METHODS: tuple[type, ...] = (
    types.MethodDescriptorType,  # list.append
    types.WrapperDescriptorType,  # object.__init__
    types.ClassMethodDescriptorType,  # dict.fromkeys
    types.BuiltinFunctionType,
)
_C_DESCRIPTORS: tuple[type, ...] = (
    types.MemberDescriptorType,  # __slots__
    types.GetSetDescriptorType,  # C-level attributes (complex.real, datetime.year)
    type(_Pair.a),  # a namedtuple's fields
    *_C_METHODS,
)
_BUILTIN_CONTAINERS = (list, tuple, dict, set, frozenset, str, bytes, bytearray)
_STDLIB_DICTS = (collections.OrderedDict, collections.defaultdict, collections.Counter)
"""dict subclasses whose stored items are read through dict's own methods (a
defaultdict's __missing__ never runs: a missing key is a KeyError, nothing is added)."""
_PLAIN_SCALARS = (type(None), bool, int, float, complex, range)
_SAFE_KEYS = (str, bytes, int, float, complex, bool, type(None))
_STDLIB_SCALARS = {
    "datetime": ("date", "datetime", "time", "timedelta", "timezone"),
    "decimal": ("Decimal",),
    "fractions": ("Fraction",),
    "uuid": ("UUID",),
    "pathlib": ("PurePosixPath", "PureWindowsPath", "PosixPath", "WindowsPath"),
}
"""Standard-library value types whose repr is the library's (exact types only)."""


class NotEvaluated(Exception):
    """Reading this would run the user's code; the message says what and what to do instead."""


def _is(value: Any, kind: type | tuple[type, ...]) -> bool:
    """``isinstance`` from the type alone (``isinstance`` may read ``value.__class__``)."""
    return issubclass(type(value), kind)


def _mro(kind: type) -> tuple[type, ...]:
    try:
        mro = _TYPE_MRO.__get__(kind, type)
    except Exception:  # noqa: BLE001 - not a real type object
        return ()
    return tuple(mro) if isinstance(mro, tuple) else ()


def _class_dict(kind: type) -> Any:
    return _TYPE_DICT.__get__(kind, type)  # a mappingproxy of a plain dict


def _lookup(kind: type, name: str) -> Any:
    """``name`` as found in ``kind``'s MRO dictionaries, or _MISSING."""
    for klass in _mro(kind):
        found = _class_dict(klass).get(name, _MISSING)
        if found is not _MISSING:
            return found
    return _MISSING


def type_label(kind: type) -> str:
    """``module.QualName`` (``QualName`` for builtins), read from the type object itself."""
    try:
        name = _TYPE_QUALNAME.__get__(kind, type)
        module = _TYPE_MODULE.__get__(kind, type)
    except Exception:  # noqa: BLE001
        return "object"
    name = name if isinstance(name, str) else "object"
    return name if module in ("builtins", "__main__", None, "") else f"{module}.{name}"


def defined_in(kind: type, packages: tuple[str, ...]) -> bool:
    """Whether ``kind`` is the object its module (in ``packages``) defines under its name."""
    try:
        module = _TYPE_MODULE.__get__(kind, type)
        qualname = _TYPE_QUALNAME.__get__(kind, type)
    except Exception:  # noqa: BLE001
        return False
    if not isinstance(module, str) or not isinstance(qualname, str):
        return False
    if module.partition(".")[0] not in packages or module not in sys.modules:
        return False
    found: Any = sys.modules[module]
    for part in qualname.split("."):
        space = vars(found) if _is(found, types.ModuleType) else None
        if space is None:
            space = _class_dict(found) if _is(found, type) else {}
        found = space.get(part, _MISSING)
        if found is _MISSING:
            return False
    return found is kind


def is_trusted(kind: type) -> bool:
    """Whether ``kind`` is a pandas or numpy type (library code, not a user's subclass)."""
    return defined_in(kind, _TRUSTED_PACKAGES)


def _stdlib_scalar(kind: type) -> bool:
    for module, names in _STDLIB_SCALARS.items():
        loaded = sys.modules.get(module)
        if loaded is not None and any(vars(loaded).get(n) is kind for n in names):
            return True
    return False


def exact_builtin_base(value: Any) -> type | None:
    """The builtin container ``value`` is (or subclasses), else None."""
    for klass in _mro(type(value)):
        if klass in _BUILTIN_CONTAINERS:
            return klass
    return None


def _instance_dict(value: Any) -> dict[str, Any] | None:
    """The instance's ``__dict__``, when the type's slot for it is the C-level one."""
    descriptor = _lookup(type(value), "__dict__")
    if type(descriptor) is not types.GetSetDescriptorType:
        return None
    try:
        found = descriptor.__get__(value, type(value))
    except Exception:  # noqa: BLE001
        return None
    return found if type(found) is dict else None


def _has(kind: type, name: str) -> bool:
    return _lookup(kind, name) is not _MISSING


def _is_data_descriptor(attribute: Any) -> bool:
    kind = type(attribute)
    return _has(kind, "__set__") or _has(kind, "__delete__")


def _refuse(path: str, attribute: Any, owner: type) -> NotEvaluated:
    what = "a property" if _is(attribute, property) else "computed by its class's code"
    return NotEvaluated(
        f"{path}: not evaluated. It is {what} of {type_label(owner)}, and reading it runs "
        "that code, which may change something; inspect_variable only reads stored values. "
        "If the value is needed, ask the user or use run_python, which they approve first."
    )


def _names(value: Any) -> list[str]:
    """Attribute names found statically (for "close matches")."""
    names = set(_instance_dict(value) or ())
    for klass in _mro(type(value)):
        names.update(k for k in _class_dict(klass) if type(k) is str)
    return sorted(n for n in names if not n.startswith("_"))


def static_attribute(value: Any, name: str, path: str) -> Any:
    """``value.name`` read statically (pandas/numpy objects: read normally).

    Raises:
        AttributeError: not found; its args after the first are the names that exist.
        NotEvaluated: only a property or other code could produce it.
    """
    kind = type(value)
    if is_trusted(kind):
        try:
            return getattr(value, name)
        except AttributeError:
            raise AttributeError(path, *[a for a in dir(value) if not a.startswith("_")]) from None
    if _is(value, type):  # a class: its attribute as stored (functions stay functions)
        for klass in _mro(value):
            found = _class_dict(klass).get(name, _MISSING)
            if found is not _MISSING:
                return found
        raise AttributeError(path, *_names(value))
    in_class = _lookup(kind, name)
    if in_class is not _MISSING and _is_data_descriptor(in_class):
        return _bind(in_class, value, path)
    fields = _instance_dict(value)
    if fields is not None and dict.__contains__(fields, name):
        return dict.__getitem__(fields, name)
    if in_class is not _MISSING:
        return _bind(in_class, value, path)
    if _has(kind, "__getattr__"):
        raise NotEvaluated(
            f"{path}: not found as a stored attribute; {type_label(kind)} computes other "
            "attributes with its own __getattr__, which inspect_variable does not run."
        )
    raise AttributeError(path, *_names(value))


def _bind(attribute: Any, value: Any, path: str) -> Any:
    """What ``value.attribute`` gives for a class attribute, when no user code makes it."""
    kind = type(value)
    if _is(attribute, types.FunctionType):
        return types.MethodType(attribute, value)
    if _is(attribute, staticmethod):
        return attribute.__func__
    if _is(attribute, classmethod):
        return types.MethodType(attribute.__func__, kind)
    if _is(attribute, _C_DESCRIPTORS):
        return attribute.__get__(value, kind)
    if not _has(type(attribute), "__get__"):
        return attribute  # a plain class attribute
    raise _refuse(path, attribute, kind)


def static_item(value: Any, key: Any, path: str) -> Any:
    """``value[key]`` for exact builtin containers and pandas/numpy objects.

    Raises:
        KeyError, IndexError, TypeError: as the lookup would.
        NotEvaluated: the container's own ``__getitem__`` would run.
    """
    kind = type(value)
    if kind in (list, tuple, str, bytes, bytearray, range):
        return value[key]  # C code: an int index, or TypeError
    if kind is dict or kind in _STDLIB_DICTS:
        if type(key) not in _SAFE_KEYS:
            raise TypeError(f"unsupported key {key!r}")
        # Compared only with keys of the same plain type: a user's key object's
        # __eq__ (reached through a hash collision) never runs.
        for stored, item in dict.items(value):
            if type(stored) is type(key) and stored == key:
                return item
        raise KeyError(key)
    if is_trusted(kind):
        return value[key]
    raise NotEvaluated(
        f"{path}: not evaluated. {type_label(kind)} is not a plain dict or list: its [ ] runs "
        "the class's own code, which inspect_variable does not do. If the value is needed, "
        "ask the user or use run_python, which they approve first."
    )


def static_repr(
    value: Any, limit: int = 200, *, quote: bool = True, base: type | None = None, depth: int = 0
) -> str:
    """A repr built without running the value's code (``<module.Type object>`` for others).

    Exact builtin values (nested to 3 levels, 20 items each), a few standard-library
    scalars and pandas/numpy scalars show their repr; ``base`` reads a subclass of a
    builtin container through that builtin's own methods.
    """
    kind = base or type(value)
    if (
        kind in _PLAIN_SCALARS
        or _stdlib_scalar(kind)
        or (is_trusted(kind) and not hasattr(value, "__len__"))
    ):
        try:
            text = repr(value)  # builtin, standard-library or numpy/pandas scalar code
        except ValueError:  # an int too long for str()
            text = f"<int of {value.bit_length():,} bits>"
    elif kind in (str, bytes, bytearray):
        piece = kind.__getitem__(value, slice(0, limit + 1))  # the builtin's own slicing
        text = repr(piece) if quote else str(piece)
    elif kind in (list, tuple, set, frozenset, dict):
        text = _container_repr(value, kind, depth)
    else:
        text = f"<{type_label(type(value))} object>"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _container_repr(value: Any, kind: Any, depth: int) -> str:
    if depth >= 3:
        return f"<{kind.__name__} of {kind.__len__(value)} items>"
    if kind is dict:
        pairs = list(dict.items(value))
        shown = [f"{static_repr(k, 80, depth=depth + 1)}: {static_repr(v, 200, depth=depth + 1)}"
                 for k, v in pairs[:20]]  # fmt: skip
        more = f", … {len(pairs) - 20} more" if len(pairs) > 20 else ""
        return "{" + ", ".join(shown) + more + "}"
    items = list(kind.__iter__(value))
    parts = [static_repr(v, 200, depth=depth + 1) for v in items[:20]]
    if len(items) > 20:
        parts.append(f"… {len(items) - 20} more")
    inner = ", ".join(parts)
    if kind is list:
        return f"[{inner}]"
    if kind is tuple:
        return f"({inner}{',' if len(items) == 1 else ''})"
    return f"{kind.__name__}({{{inner}}})" if items else f"{kind.__name__}()"


def public_class_attributes(value: Any, *, fields_only: bool) -> list[tuple[str, str]]:
    """Public names with what they are, read statically.

    ``fields_only``: the instance's stored fields (``__dict__`` and slots) with their
    safe reprs. Else the class's attributes with their kind ("method", "property,
    not evaluated"...), the class's own and its bases' but ``object``'s.
    """
    if fields_only:
        found = [(k, static_repr(v, 120)) for k, v in (_instance_dict(value) or {}).items()
                 if type(k) is str and not k.startswith("_")]  # fmt: skip
        for klass in _mro(type(value)):
            for name, attribute in _class_dict(klass).items():
                if _is(attribute, types.MemberDescriptorType) and not name.startswith("_"):
                    try:
                        found.append((name, static_repr(attribute.__get__(value), 120)))
                    except AttributeError:
                        found.append((name, "<not set>"))
        return found
    return class_members(type(value))


def class_members(kind: type) -> list[tuple[str, str]]:
    """The public attributes of a class and its bases (but ``object``), with their kind."""
    seen: dict[str, str] = {}
    for klass in _mro(kind):
        if klass is object or klass in _BUILTIN_CONTAINERS:  # their methods are no news
            continue
        for name, attribute in _class_dict(klass).items():
            if type(name) is not str or name.startswith("_") or name in seen:
                continue
            seen[name] = _kind_of(attribute)
    return [(n, k) for n, k in seen.items() if k != "slot"]


_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (types.FunctionType, "method"),
    (classmethod, "class method"),
    (staticmethod, "static method"),
    (property, "property, not evaluated"),
    (types.MemberDescriptorType, "slot"),
    (_C_METHODS, "method"),
    (_C_DESCRIPTORS, "field"),
)
"""What a class attribute is, by its type; the first row that matches decides."""


def _kind_of(attribute: Any) -> str:
    for kind, name in _KINDS:
        if _is(attribute, kind):
            return name
    if _has(type(attribute), "__get__"):
        return "descriptor, not evaluated"
    return "attribute"
