#!/usr/bin/env python3
"""Validates NVUE configurations against NVIDIA's NVUE schema of one Cumulus Linux release.

The schema is the `nvueschema` package (PyPI): Pydantic models generated from NVIDIA's NVUE
OpenAPI document of each 5.x release. Its models ignore unknown keys by default, so a key that a
release does not have (`service lldp` in 5.15) would pass silently; here every model forbids
unknown keys, so such a path fails, named.

Usage: nvue_schema.py RELEASE:FILE...   (FILE: the `nv config patch` YAML `- set: TREE`, the
       JSON `nv config show -o json` prints, or a bare tree; RELEASE: 5.12, 5.15, ...)
Prints PASS or FAIL (with every violation) per file.
Exit: 0 every file valid, 1 a file invalid, 2 usage error or a release without a schema.
"""

import importlib
import json
import sys

import pydantic
import yaml  # PyYAML, pinned with the rest in requirements.txt


class _Strict(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


_MODELS = {}


def load_model(version):
    """The root model of `version`, with unknown keys forbidden at every level."""
    if version in _MODELS:
        return _MODELS[version]
    pydantic.BaseModel = _Strict  # the generated modules do `from pydantic import BaseModel`
    from nvueschema.models._versions import VERSIONS

    if version not in VERSIONS:
        print(f"nvue_schema: no schema for {version}; the package has {', '.join(VERSIONS)}",
              file=sys.stderr)
        sys.exit(2)
    module = importlib.import_module("nvueschema.models.v" + version.replace(".", "_"))
    _MODELS[version] = module.NvueConfig
    return module.NvueConfig


def tree_of(text):
    doc = yaml.safe_load(text)
    if isinstance(doc, list):
        sets = [item["set"] for item in doc if isinstance(item, dict) and "set" in item]
        if len(sets) != 1:
            raise ValueError("expected one `set` item")
        return sets[0]
    if isinstance(doc, dict) and set(doc) == {"set"}:
        return doc["set"]
    if isinstance(doc, dict):
        return doc
    raise ValueError("not an NVUE configuration")


def main(argv):
    pairs = [a.split(":", 1) for a in argv[1:]]
    if not pairs or any(len(p) != 2 for p in pairs):
        print(__doc__, file=sys.stderr)
        return 2
    failed = 0
    for version, path in pairs:
        model = load_model(version)
        try:
            with open(path, encoding="utf-8") as f:
                tree = tree_of(f.read())
            model.model_validate(tree)
            print(f"PASS {version} {path}")
        except pydantic.ValidationError as e:
            failed += 1
            print(f"FAIL {version} {path}")
            for err in e.errors():
                loc = " ".join(str(p) for p in err["loc"])
                print(f"  {loc}: {err['msg']} (got {json.dumps(err.get('input'))[:80]})")
        except (OSError, ValueError, yaml.YAMLError) as e:
            failed += 1
            print(f"FAIL {version} {path}: {e}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
