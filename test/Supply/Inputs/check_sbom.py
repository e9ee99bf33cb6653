"""Validates build/sbom.spdx.json for sbom.test: the fields SPDX 2.3 requires
of a document and of each package, well-formed ids and relationships, and
that the key Debian packages appear at their installed versions (from
dpkg-query, independently of the generator) with their purl."""

import json
import re
import subprocess
import sys

doc = json.load(open(sys.argv[1]))
errors = []


def need(cond, what):
    if not cond:
        errors.append(what)


need(doc.get("spdxVersion") == "SPDX-2.3", "spdxVersion is not SPDX-2.3")
need(doc.get("dataLicense") == "CC0-1.0", "dataLicense is not CC0-1.0")
need(doc.get("SPDXID") == "SPDXRef-DOCUMENT", "document SPDXID")
need(bool(doc.get("name")), "document name")
ns = doc.get("documentNamespace", "")
need(re.match(r"^[a-z]+://[^#\s]+$", ns), f"documentNamespace not a URI without '#': {ns!r}")
ci = doc.get("creationInfo", {})
need(re.match(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$", ci.get("created", "")), "creationInfo.created")
need(ci.get("creators") and all(re.match(r"^(Tool|Person|Organization): .+", c)
                                for c in ci["creators"]), "creationInfo.creators")

ids = {"SPDXRef-DOCUMENT"}
by_name = {}
for p in doc.get("packages", []):
    sid = p.get("SPDXID", "")
    need(re.match(r"^SPDXRef-[A-Za-z0-9.-]+$", sid), f"bad SPDXID {sid!r}")
    need(sid not in ids, f"duplicate SPDXID {sid}")
    ids.add(sid)
    for field in ("name", "downloadLocation", "versionInfo", "supplier"):
        need(p.get(field), f"{sid}: no {field}")
    need(p.get("supplier") == "NOASSERTION" or
         re.match(r"^(Person|Organization): .+", p.get("supplier", "")), f"{sid}: supplier format")
    need(p.get("filesAnalyzed") is False or "packageVerificationCode" in p,
         f"{sid}: filesAnalyzed without a verification code")
    by_name[p["name"]] = p
for r in doc.get("relationships", []):
    need(r.get("spdxElementId") in ids and r.get("relatedSpdxElement") in ids,
         f"relationship to an unknown element: {r}")
need(any(r.get("relationshipType") == "DESCRIBES" and r.get("spdxElementId") == "SPDXRef-DOCUMENT"
         for r in doc.get("relationships", [])), "no DOCUMENT DESCRIBES relationship")

key = ["llvm-22-dev", "libmlir-22-dev", "libgloo-dev", "libopenblas-dev", "cmake"]
out = subprocess.run(["dpkg-query", "-W", "-f", "${Package}\\t${Version}\\n", *key],
                     capture_output=True, text=True, check=True).stdout
for line in out.splitlines():
    name, version = line.split("\t")
    p = by_name.get(name)
    need(p is not None, f"{name} missing")
    if p is None:
        continue
    need(p["versionInfo"] == version, f"{name}: {p['versionInfo']} but installed {version}")
    purls = [e["referenceLocator"] for e in p.get("externalRefs", [])
             if e.get("referenceType") == "purl"]
    want = f"pkg:deb/debian/{name}@{version.replace(':', '%3A').replace('+', '%2B')}?"
    need(purls and purls[0].startswith(want), f"{name}: purl {purls} does not start with {want}")
    need(p["supplier"].startswith("Organization: "), f"{name}: supplier {p['supplier']}")

# The libraries CMake found: MLIR at Debian's LLVM 22, Gloo, OpenBLAS, cpp-httplib with
# their paths and the Debian package that holds them.
mlir = by_name.get("MLIR", {})
need(mlir.get("versionInfo", "").startswith("22."), f"MLIR version {mlir.get('versionInfo')}")
for name in ("MLIR", "Gloo", "OpenBLAS", "GTest", "cpp-httplib"):
    p = by_name.get(name)
    need(p is not None and "found by CMake at /" in p.get("sourceInfo", ""), f"{name}: no CMake path")
    need(p is not None and "from Debian " in p.get("sourceInfo", ""), f"{name}: no Debian package")

for e in errors:
    print("sbom:", e)
print(f"sbom: {len(doc.get('packages', []))} packages, {len(errors)} errors")
sys.exit(1 if errors else 0)
