"""Fetch, verify and unpack the front-end files of the offline slides and site.

    python tools/web_assets.py            make build/vendor/ up to date
    python tools/web_assets.py --check    exit 1 if build/vendor/ is missing or stale

The slide decks and the static site (both built by tools/publish.py:
``make slides``, ``make site``) must work with no network when they are
viewed, so reveal.js, RequireJS, MathJax and ipywidgets' HTML manager are
served from files next to the pages; publish.py copies them from
``build/vendor/``. axe-core is fetched the same way for the accessibility
test (tests/test_accessibility.py) and is never copied into a build
(``make web`` runs this script; ``make slides``, ``site`` and ``test`` depend
on it).

Each package comes from the npm registry as a tarball, pinned in
``web/packages.json`` by version *and* by the registry's sha512 integrity
hash: a tarball that does not match is refused. Only the
paths listed under ``keep`` are unpacked (minus any name containing a
``drop`` string), into ``build/vendor/<package name>/``.

This runs at set-up time, like ``pip install``; it needs no Node.js. The
registry is ``$NPM_CONFIG_REGISTRY`` or https://registry.npmjs.org/.
Tarballs are cached in ``build/cache/npm/`` so a rebuild downloads nothing.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path, PurePosixPath

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ROOT / "web" / "packages.json"
VENDOR = ROOT / "build" / "vendor"
CACHE = ROOT / "build" / "cache" / "npm"
STAMP_NAME = ".packages.json"


def load_pins(path: Path = PACKAGES) -> dict[str, dict]:
    """The pinned packages: name -> {version, integrity, keep, drop, license}."""
    return json.loads(path.read_text(encoding="utf-8"))["packages"]


def registry() -> str:
    return os.environ.get("NPM_CONFIG_REGISTRY", "https://registry.npmjs.org/").rstrip("/")


def tarball_url(name: str, version: str) -> str:
    """The registry's tarball address: scoped packages keep their scope in the path only."""
    basename = name.split("/")[-1]
    return f"{registry()}/{name}/-/{basename}-{version}.tgz"


def integrity_of(data: bytes) -> str:
    """npm's integrity string (Subresource Integrity, sha512) of a tarball."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode("ascii")


def fetch(name: str, pin: dict, cache: Path = CACHE) -> bytes:
    """The verified tarball of one pinned package, from the cache or the registry."""
    cache.mkdir(parents=True, exist_ok=True)
    cached = cache / f"{name.replace('/', '__')}-{pin['version']}.tgz"
    if cached.exists():
        data = cached.read_bytes()
        if integrity_of(data) == pin["integrity"]:
            return data
        cached.unlink()  # a damaged download: fetch it again
    url = tarball_url(name, pin["version"])
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            data = response.read()
    except OSError as exc:
        raise SystemExit(f"web_assets: could not download {name}@{pin['version']} from {url}: {exc}") from exc
    got = integrity_of(data)
    if got != pin["integrity"]:
        raise SystemExit(
            f"web_assets: {name}@{pin['version']} from {url} does not match web/packages.json\n"
            f"  expected {pin['integrity']}\n  got      {got}"
        )
    cached.write_bytes(data)
    return data


def _wanted(path: str, pin: dict) -> bool:
    keep = any(path == k or (k.endswith("/") and path.startswith(k)) for k in pin["keep"])
    return keep and not any(d in path for d in pin["drop"])


def unpack(data: bytes, pin: dict, dest: Path) -> int:
    """Unpack the kept files of a package tarball into ``dest``; return how many."""
    count = 0
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile():
                continue
            parts = PurePosixPath(member.name).parts
            # npm tarballs hold one top folder (usually "package/"); never follow ".." or absolute names.
            if len(parts) < 2 or ".." in parts or parts[0].startswith("/"):
                continue
            rel = "/".join(parts[1:])
            if not _wanted(rel, pin):
                continue
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(tar.extractfile(member).read())
            count += 1
    return count


def up_to_date(vendor: Path = VENDOR, packages: Path = PACKAGES) -> bool:
    stamp = vendor / STAMP_NAME
    return stamp.exists() and stamp.read_text(encoding="utf-8") == packages.read_text(encoding="utf-8")


def ensure(vendor: Path = VENDOR, packages: Path = PACKAGES, *, quiet: bool = False) -> Path:
    """Make ``vendor`` hold exactly the pinned files; return it. Cheap when up to date."""
    if up_to_date(vendor, packages):
        return vendor
    if vendor.exists():
        shutil.rmtree(vendor)
    for name, pin in load_pins(packages).items():
        count = unpack(fetch(name, pin), pin, vendor / name)
        if count == 0:
            raise SystemExit(f"web_assets: nothing of {name}@{pin['version']} matched 'keep' in {packages}")
        if not quiet:
            print(f"web_assets: {name}@{pin['version']}: {count} files")
    (vendor / STAMP_NAME).write_text(packages.read_text(encoding="utf-8"), encoding="utf-8")
    return vendor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether build/vendor is up to date")
    args = parser.parse_args(argv)
    if args.check:
        ok = up_to_date()
        print("web_assets: up to date" if ok else "web_assets: build/vendor is missing or stale")
        return 0 if ok else 1
    ensure()
    return 0


if __name__ == "__main__":
    sys.exit(main())
