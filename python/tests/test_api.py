"""Every public name has types (parameters and return annotated, `py.typed` shipped) and a
docstring, in the package and on the native classes a user is handed."""

import inspect
from pathlib import Path

import zeptodb
from zeptodb import _native


def public_members(cls):
    for name, member in vars(cls).items():
        if name.startswith("_") and name not in ("__init__", "__len__", "__dlpack__", "__dlpack_device__"):
            continue
        yield name, member


def check_annotated(where, fn):
    sig = inspect.signature(fn)
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        assert p.annotation is not inspect.Parameter.empty, f"{where}: parameter {p.name} has no type"
    assert sig.return_annotation is not inspect.Signature.empty, f"{where}: no return type"


def test_every_public_name_has_types_and_a_docstring():
    assert (Path(zeptodb.__file__).parent / "py.typed").exists()
    assert (Path(zeptodb.__file__).parent / "_native.pyi").exists()
    for name in zeptodb.__all__:
        obj = getattr(zeptodb, name)
        assert obj.__doc__, name
        if inspect.isfunction(obj):
            check_annotated(name, obj)
        if inspect.isclass(obj) and not issubclass(obj, Exception):
            for mname, member in public_members(obj):
                where = f"{name}.{mname}"
                fn = member.fget if isinstance(member, property) else member
                if not callable(fn):
                    continue
                assert fn.__doc__, f"{where} has no docstring"
                check_annotated(where, fn)
    # The native classes a user holds: documented too (their types are in _native.pyi).
    for cls in (_native.Tensor, _native.NativeResult, _native.Database, _native.TimestampParam):
        assert cls.__doc__, cls
        for mname, member in public_members(cls):
            assert getattr(member, "__doc__", None), f"{cls.__name__}.{mname} has no docstring"
