"""Import an example script from `examples/` (not a package) as a module, for the smoke tests."""

import importlib.util
import pathlib
import sys

EXAMPLES_DIR = pathlib.Path(__file__).resolve().parent.parent / "examples"


def load_example(name):
    """The module `examples/<name>.py`, imported once per process. The examples directory is put
    on `sys.path` first so that an example (the tour) can import its siblings."""
    module_name = f"gpcompose_example_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    if str(EXAMPLES_DIR) not in sys.path:
        sys.path.insert(0, str(EXAMPLES_DIR))
    spec = importlib.util.spec_from_file_location(module_name, EXAMPLES_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module
