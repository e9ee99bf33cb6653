#!/usr/bin/env python3
"""Writes rtx's software bill of materials as an SPDX 2.3 JSON document.

Run by the build (cmake/RTXSBOM.cmake) into build/sbom.spdx.json. It lists
  - the Debian packages of scripts/setup.sh's PACKAGES list and of the lock
    file, and the packages that own the files of the components below, each
    with its installed version, supplier (the Debian maintainer) and purl
    pkg:deb/debian/NAME@VERSION;
  - the libraries and tools the CMake configuration found and used (name,
    version, paths), each linked to the Debian package that contains it.
Everything comes from dpkg-query and the configuration; nothing from the
network. Only the standard library (docs/supply-chain.md).
"""

import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys

SPDX_ID_CHARS = re.compile(r"[^A-Za-z0-9.-]")


def spdx_id(kind, name):
    return f"SPDXRef-{kind}-{SPDX_ID_CHARS.sub('-', name)}"


def purl(name, version, arch):
    # purl: the version is percent-encoded (a Debian epoch's ':' is %3A).
    enc = version.replace("%", "%25").replace(":", "%3A").replace("+", "%2B")
    return f"pkg:deb/debian/{name}@{enc}?arch={arch}&distro=debian-{debian_release()}"


def debian_release():
    try:
        with open("/etc/debian_version") as f:
            return f.read().strip().split(".")[0]
    except OSError:
        return "unknown"


def supplier(maintainer):
    # "Name <email>" -> SPDX's "Organization: Name (email)". Debian
    # maintainers are teams as often as people; Organization fits both.
    m = re.match(r"\s*(.*?)\s*<([^>]*)>", maintainer or "")
    if not m:
        return "NOASSERTION" if not maintainer else f"Organization: {maintainer}"
    return f"Organization: {m.group(1)} ({m.group(2)})"


def setup_packages(source):
    out = subprocess.run(
        ["bash", os.path.join(source, "scripts", "setup.sh"), "--print-packages"],
        check=True, capture_output=True, text=True).stdout
    return [p for p in out.split() if p]


def lock_packages(source):
    path = os.path.join(source, "scripts", "debian-packages.lock")
    locked = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if "=" in line:
                name, version = line.split("=", 1)
                locked[name.strip()] = version.strip()
    return locked


def owners(paths):
    """Maps each existing path (symlinks resolved) to its Debian package."""
    real = {}
    for p in paths:
        if p and os.path.exists(p):
            real[p] = os.path.realpath(p)
    if not real:
        return {}
    result = subprocess.run(["dpkg-query", "-S", *sorted(set(real.values()))],
                            capture_output=True, text=True)
    owner_of = {}
    for line in result.stdout.splitlines():
        # "pkg[:arch][, pkg2]: /path"
        pkgs, _, path = line.partition(": ")
        owner_of[path.strip()] = pkgs.split(",")[0].split(":")[0].strip()
    return {p: owner_of.get(r) for p, r in real.items()}


def installed(names):
    fmt = "${Package}\\t${Status}\\t${Version}\\t${Architecture}\\t${Maintainer}\\t${Homepage}\\n"
    result = subprocess.run(["dpkg-query", "-W", "-f", fmt, *sorted(names)],
                            capture_output=True, text=True)
    info = {}
    for line in result.stdout.splitlines():
        name, status, version, arch, maint, home = (line.split("\t") + [""] * 6)[:6]
        if status == "install ok installed":
            info[name] = {"version": version, "arch": arch, "maintainer": maint,
                          "homepage": home}
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--components", required=True,
                    help="the JSON the configuration wrote (sbom-components.json)")
    ap.add_argument("--source", required=True, help="rtx's source folder")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()

    with open(args.components) as f:
        components = json.load(f)["components"]
    locked = lock_packages(args.source)
    all_paths = [p for c in components for p in c["paths"]]
    owner = owners(all_paths)
    wanted = set(setup_packages(args.source)) | set(locked) | {
        o for o in owner.values() if o}
    debs = installed(wanted)

    rtx_id = "SPDXRef-Package-rtx"
    packages = [{
        "SPDXID": rtx_id, "name": "rtx", "versionInfo": "0.0.0+source",
        "supplier": "NOASSERTION", "downloadLocation": "NOASSERTION",
        "filesAnalyzed": False, "licenseConcluded": "NOASSERTION",
        "licenseDeclared": "NOASSERTION", "copyrightText": "NOASSERTION",
        "primaryPackagePurpose": "APPLICATION",
        "comment": "rtx as built from this source tree",
    }]
    relationships = [{"spdxElementId": "SPDXRef-DOCUMENT",
                      "relationshipType": "DESCRIBES",
                      "relatedSpdxElement": rtx_id}]
    for name in sorted(debs):
        d = debs[name]
        pkg = {
            "SPDXID": spdx_id("deb", name), "name": name,
            "versionInfo": d["version"], "supplier": supplier(d["maintainer"]),
            "downloadLocation": "NOASSERTION", "filesAnalyzed": False,
            "licenseConcluded": "NOASSERTION", "licenseDeclared": "NOASSERTION",
            "copyrightText": "NOASSERTION",
            "externalRefs": [{"referenceCategory": "PACKAGE-MANAGER",
                              "referenceType": "purl",
                              "referenceLocator": purl(name, d["version"], d["arch"])}],
        }
        if d["homepage"]:
            pkg["homepage"] = d["homepage"]
        if name in locked and locked[name] != d["version"]:
            pkg["comment"] = f"differs from scripts/debian-packages.lock ({locked[name]})"
        packages.append(pkg)
        relationships.append({"spdxElementId": rtx_id,
                              "relationshipType": "DEPENDS_ON",
                              "relatedSpdxElement": pkg["SPDXID"]})
    for c in components:
        cid = spdx_id("cmake", c["name"])
        from_debs = sorted({owner[p] for p in c["paths"] if owner.get(p) in debs})
        comment = "found by CMake at " + ", ".join(c["paths"]) if c["paths"] else "found by CMake"
        if from_debs:
            comment += "; from Debian " + ", ".join(f"{o} {debs[o]['version']}" for o in from_debs)
        version = c["version"] or (debs[from_debs[0]]["version"] if from_debs else "NOASSERTION")
        packages.append({
            "SPDXID": cid, "name": c["name"], "versionInfo": version,
            "supplier": supplier(debs[from_debs[0]]["maintainer"]) if from_debs else "NOASSERTION",
            "downloadLocation": "NOASSERTION", "filesAnalyzed": False,
            "licenseConcluded": "NOASSERTION", "licenseDeclared": "NOASSERTION",
            "copyrightText": "NOASSERTION", "primaryPackagePurpose": "LIBRARY",
            "sourceInfo": comment,
        })
        relationships.append({"spdxElementId": rtx_id, "relationshipType": "DEPENDS_ON",
                              "relatedSpdxElement": cid})
        for o in from_debs:
            relationships.append({"spdxElementId": spdx_id("deb", o),
                                  "relationshipType": "CONTAINS",
                                  "relatedSpdxElement": cid})

    # SOURCE_DATE_EPOCH (reproducible builds) fixes the creation time.
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    created = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
               else datetime.datetime.now(datetime.timezone.utc))
    body = json.dumps([packages, relationships], sort_keys=True)
    digest = hashlib.sha256(body.encode()).hexdigest()
    doc = {
        "spdxVersion": "SPDX-2.3", "dataLicense": "CC0-1.0",
        "SPDXID": "SPDXRef-DOCUMENT", "name": "rtx-build",
        # Unique per content: the same packages give the same namespace.
        "documentNamespace": f"https://spdx.org/spdxdocs/rtx-build-{digest}",
        "creationInfo": {
            "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "creators": ["Tool: rtx-scripts/sbom.py"],
        },
        "documentDescribes": [rtx_id],
        "packages": packages, "relationships": relationships,
    }
    tmp = args.output + ".tmp"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(tmp, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
