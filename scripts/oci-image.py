#!/usr/bin/env python3
"""Writes an OCI image (image layout, archived as an oci-archive) holding static binaries on an
empty base, deterministically: the same binaries, reference and SOURCE_DATE_EPOCH give the same
bytes, hence the same digests, wherever and whenever it runs.

What makes it reproducible: tar entries sorted by path, every mtime the epoch, uid/gid 0 with no
user or group names, fixed modes, USTAR headers (no PAX times); gzip without a file name and
with mtime 0; JSON with sorted keys and no spaces; the archive around the layout written the same
way. The file names, mtimes and owners of the input files do not matter, only their bytes.

Usage: oci-image.py --ref REGISTRY/NAME:TAG --epoch SECONDS --out ARCHIVE
                    [--label KEY=VALUE]... BINARY...
Prints the manifest digest (sha256:...) on stdout.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import sys
import tarfile
import time

BIN_DIR = "usr/local/bin"
# Directories of the root file system, with their modes. /tmp for tools that want one; the
# shipped manifests mount the file system read-only.
DIRS = {"usr": 0o755, "usr/local": 0o755, BIN_DIR: 0o755, "tmp": 0o1777}


def die(msg):
    print(f"oci-image.py: {msg}", file=sys.stderr)
    sys.exit(1)


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def is_static_elf(data):
    """True for an ELF executable without a program interpreter (PT_INTERP): it needs no
    dynamic loader and no shared library, so an empty base can run it."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return False  # only 64-bit little-endian (x86_64) is built
    phoff = int.from_bytes(data[32:40], "little")
    phentsize = int.from_bytes(data[54:56], "little")
    phnum = int.from_bytes(data[56:58], "little")
    for i in range(phnum):
        p_type = int.from_bytes(data[phoff + i * phentsize:phoff + i * phentsize + 4], "little")
        if p_type == 3:  # PT_INTERP
            return False
    return True


def tar_bytes(entries, epoch):
    """A tar of `entries` [(path, mode, bytes or None for a directory)], sorted by path."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for path, mode, data in sorted(entries, key=lambda e: e[0]):
            info = tarfile.TarInfo(path)
            info.mtime = epoch
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = mode
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def gzipped(data):
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, compresslevel=9, mtime=0) as gz:
        gz.write(data)
    return out.getvalue()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def descriptor(media_type, data, annotations=None):
    d = {"mediaType": media_type, "digest": sha256(data), "size": len(data)}
    if annotations:
        d["annotations"] = annotations
    return d


def build(ref, epoch, binaries, labels):
    """The layout's files {path: bytes} and the manifest digest."""
    entries = [(d, mode, None) for d, mode in DIRS.items()]
    names = set()
    for path in binaries:
        name = os.path.basename(path)
        if name in names:
            die(f"two binaries named {name}")
        names.add(name)
        with open(path, "rb") as f:
            data = f.read()
        if not is_static_elf(data):
            die(f"{path} is not a static x86_64 ELF executable (it names a dynamic loader): "
                "an empty base cannot run it")
        entries.append((f"{BIN_DIR}/{name}", 0o755, data))
    layer_tar = tar_bytes(entries, epoch)
    layer = gzipped(layer_tar)
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
    tag = ref.rsplit(":", 1)[1]
    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": created,
        "config": {
            "Env": [f"PATH=/{BIN_DIR}"],
            "Labels": dict(sorted(labels.items())),
        },
        "rootfs": {"type": "layers", "diff_ids": [sha256(layer_tar)]},
        "history": [{"created": created, "created_by": "scripts/build-image.sh"}],
    }
    config_bytes = canonical_json(config)
    annotations = {
        "org.opencontainers.image.created": created,
        "org.opencontainers.image.version": tag,
        **labels,
    }
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", config_bytes),
        "layers": [descriptor("application/vnd.oci.image.layer.v1.tar+gzip", layer)],
        "annotations": dict(sorted(annotations.items())),
    }
    manifest_bytes = canonical_json(manifest)
    # ref.name for podman and skopeo, io.containerd.image.name for `ctr images import`: both
    # name the image as the manifests do.
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [descriptor(
            "application/vnd.oci.image.manifest.v1+json", manifest_bytes,
            {"org.opencontainers.image.ref.name": ref, "io.containerd.image.name": ref})],
    }
    files = {
        "oci-layout": canonical_json({"imageLayoutVersion": "1.0.0"}),
        "index.json": canonical_json(index),
    }
    for blob in (layer, config_bytes, manifest_bytes):
        files["blobs/sha256/" + sha256(blob).split(":", 1)[1]] = blob
    return files, sha256(manifest_bytes)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ref", required=True, help="REGISTRY/NAME:TAG")
    parser.add_argument("--epoch", required=True, type=int, help="SOURCE_DATE_EPOCH")
    parser.add_argument("--out", required=True, help="the oci-archive to write")
    parser.add_argument("--label", action="append", default=[], help="KEY=VALUE")
    parser.add_argument("binaries", nargs="+")
    args = parser.parse_args()
    name, sep, tag = args.ref.rpartition(":")
    if not sep or not name or not tag or "/" in tag:
        die(f"--ref {args.ref!r} is not REGISTRY/NAME:TAG")
    if args.epoch < 0:
        die("--epoch must be a non-negative number of seconds")
    labels = {}
    for label in args.label:
        key, sep, value = label.partition("=")
        if not sep or not key:
            die(f"--label {label!r} is not KEY=VALUE")
        labels[key] = value
    files, digest = build(args.ref, args.epoch, args.binaries, labels)
    dirs = [("blobs", 0o755, None), ("blobs/sha256", 0o755, None)]
    archive = tar_bytes(dirs + [(p, 0o644, b) for p, b in files.items()], args.epoch)
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(archive)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, args.out)
    print(digest)


if __name__ == "__main__":
    main()
