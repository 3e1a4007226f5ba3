"""Regenerate the Python stubs of the device plugin API from its .proto.

Run from anywhere (paths are resolved from this file)::

    python tools/gen_protos.py            # rewrite lab02_device_plugin/api/deviceplugin_pb2*.py(i)
    python tools/gen_protos.py --out DIR  # write the three files into DIR instead (used by tests)

The proto is compiled with the repository root as include path, so its file name inside the
descriptor pool is ``lab02_device_plugin/api/deviceplugin.proto`` and the generated
``deviceplugin_pb2_grpc.py`` imports ``from lab02_device_plugin.api import deviceplugin_pb2``:
the stubs work from an installed package, not only from the source tree.

Needs grpcio-tools (the ``dev`` extra). tests/lab02/test_api.py regenerates into a temporary
folder and fails when the committed stubs differ.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
PROTO_REL = Path("lab02_device_plugin/api/deviceplugin.proto")
GENERATED = ("deviceplugin_pb2.py", "deviceplugin_pb2_grpc.py", "deviceplugin_pb2.pyi")


def generate(out_dir: Path, root: Path = REPO_ROOT) -> list[Path]:
    """Compile ``<root>/lab02_device_plugin/api/deviceplugin.proto`` into ``out_dir``.

    ``root`` is the include path (default: this repository); tests pass a copy to check that a
    changed proto is noticed. Returns the paths written (``GENERATED``, in that order).
    Raises RuntimeError when protoc fails (its message is printed on stderr by grpc_tools).
    """
    from grpc_tools import protoc  # imported here: only maintainers need grpcio-tools

    import grpc_tools

    well_known = Path(grpc_tools.__file__).parent / "_proto"
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        rc = protoc.main([
            "grpc_tools.protoc",
            f"-I{root}",
            f"-I{well_known}",
            f"--python_out={tmp}",
            f"--pyi_out={tmp}",
            f"--grpc_python_out={tmp}",
            str(Path(root) / PROTO_REL),
        ])
        if rc != 0:
            raise RuntimeError(f"protoc failed on {PROTO_REL} (exit status {rc})")
        written = []
        for name in GENERATED:
            src = Path(tmp) / PROTO_REL.parent / name
            dst = out_dir / name
            shutil.copyfile(src, dst)
            written.append(dst)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / PROTO_REL.parent,
                        help="folder for the generated files (default: %(default)s)")
    args = parser.parse_args(argv)
    for path in generate(args.out):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
