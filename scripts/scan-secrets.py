#!/usr/bin/env python3
"""Scans rtx's tracked files for committed secrets: keys and tokens.

    scripts/scan-secrets.py [--root DIR] [--allowlist FILE]

In a git checkout it reads the files `git ls-files` lists (the tracked tree,
what CI checks out); pointed at a folder that is not a checkout, every file
under it. Each finding is printed as `path:line: rule: description` with the
secret itself masked, and the exit status is 1; 0 when clean.

Why a script and not a tool: gitleaks, trufflehog and detect-secrets are not
in Debian 12's archive (`apt-cache policy gitleaks` finds no candidate), and
rtx installs only from it. The rules follow gitleaks' default rules for the
same kinds of secret.

The allowlist (scripts/secrets-allowlist.txt) holds documented false
positives: `RULE PATH-GLOB  # why`, RULE `*` for every rule
(docs/supply-chain.md).
"""

import argparse
import fnmatch
import math
import os
import re
import subprocess
import sys

# (rule id, description, pattern). A pattern's group "secret", when present,
# is the part that is masked and entropy-checked.
RULES = [
    ("private-key", "PEM private key",
     re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY( BLOCK)?-----")),
    ("aws-access-key-id", "AWS access key id",
     re.compile(r"\b(?P<secret>(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b")),
    ("aws-secret-access-key", "AWS secret access key",
     re.compile(r"(?i)aws_?secret_?access_?key\s*[:=]\s*[\"']?(?P<secret>[A-Za-z0-9/+=]{40})\b")),
    ("github-token", "GitHub token",
     re.compile(r"\b(?P<secret>gh[pousr]_[A-Za-z0-9]{36,255})\b")),
    ("github-fine-grained-pat", "GitHub fine-grained personal access token",
     re.compile(r"\b(?P<secret>github_pat_[A-Za-z0-9_]{22,255})\b")),
    ("gitlab-token", "GitLab personal access token",
     re.compile(r"\b(?P<secret>glpat-[A-Za-z0-9_-]{20,})\b")),
    ("slack-token", "Slack token",
     re.compile(r"\b(?P<secret>xox[abposr]-[A-Za-z0-9-]{10,})\b")),
    ("slack-webhook", "Slack webhook URL",
     re.compile(r"(?P<secret>hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+)")),
    ("google-api-key", "Google API key",
     re.compile(r"\b(?P<secret>AIza[0-9A-Za-z_-]{35})\b")),
    ("openai-api-key", "OpenAI API key",
     re.compile(r"\b(?P<secret>sk-(?:proj-)?[A-Za-z0-9_-]{20,}T3BlbkFJ[A-Za-z0-9_-]{20,})\b")),
    ("huggingface-token", "Hugging Face access token",
     re.compile(r"\b(?P<secret>hf_[A-Za-z0-9]{34,})\b")),
    ("stripe-key", "Stripe secret key",
     re.compile(r"\b(?P<secret>[sr]k_live_[A-Za-z0-9]{20,})\b")),
    ("jwt", "JSON web token",
     re.compile(r"\b(?P<secret>eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,})")),
    ("url-credentials", "password in a URL",
     re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@\"']+:(?P<secret>[^\s:/@\"'$<>{}]{6,})@[\w.-]+")),
    # A generic key, token, secret or password assigned a quoted literal that
    # looks random (entropy below), in code or configuration.
    ("generic-secret-assignment", "high-entropy value assigned to a key/token/secret/password",
     re.compile(r"(?i)\b[\w.-]*(?:api[_-]?key|apikey|secret|token|passwd|password|access[_-]?key|auth)"
                r"[\w.-]*[\"']?\s*(?::=|=>|[:=])\s*[\"'](?P<secret>[^\"'\s]{16,})[\"']")),
]
# Shannon entropy (bits per character) above which a generic assignment's
# value is taken for a secret; "changeme-placeholder-value" and paths stay
# below it, random base64/hex keys above.
GENERIC_MIN_ENTROPY = 3.5
MAX_FILE_BYTES = 5 * 1024 * 1024


def entropy(s):
    counts = {}
    for ch in s:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


def mask(secret):
    return secret[:4] + "*" * max(4, len(secret) - 4) if len(secret) > 8 else "****"


def load_allowlist(path):
    entries = []
    if not path or not os.path.exists(path):
        return entries
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            if len(parts) != 2:
                sys.exit(f"scan-secrets: {path}:{n}: expected 'RULE PATH-GLOB', got '{line}'")
            entries.append((parts[0], parts[1]))
    return entries


def allowed(allowlist, rule, path):
    return any((r == "*" or r == rule) and fnmatch.fnmatchcase(path, g) for r, g in allowlist)


def list_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        inside = subprocess.run(["git", "-C", root, "rev-parse", "--show-prefix"],
                                check=True, capture_output=True, text=True).stdout.strip()
        # Only when root is the top of the checkout are paths relative to it.
        if inside == "":
            return [p.decode() for p in out.split(b"\0") if p]
    except (OSError, subprocess.CalledProcessError):
        pass
    files = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in filenames:
            files.append(os.path.relpath(os.path.join(dirpath, name), root))
    return sorted(files)


def scan_file(root, rel, allowlist):
    path = os.path.join(root, rel)
    if os.path.islink(path) or not os.path.isfile(path):
        return []
    if os.path.getsize(path) > MAX_FILE_BYTES:
        return []
    with open(path, "rb") as f:
        data = f.read()
    if b"\0" in data[:8192]:
        return []  # binary
    findings = []
    for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        for rule, desc, pattern in RULES:
            for m in pattern.finditer(line):
                secret = m.groupdict().get("secret") or m.group(0)
                if rule == "generic-secret-assignment" and entropy(secret) < GENERIC_MIN_ENTROPY:
                    continue
                if allowed(allowlist, rule, rel):
                    continue
                findings.append(f"{rel}:{n}: {rule}: {desc} ({mask(secret)})")
    return findings


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.dirname(here),
                    help="checkout or folder to scan (default: this checkout)")
    ap.add_argument("--allowlist", default=None,
                    help="allowlist file (default: ROOT/scripts/secrets-allowlist.txt)")
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    allowlist = load_allowlist(args.allowlist or
                               os.path.join(root, "scripts", "secrets-allowlist.txt"))
    files = list_files(root)
    findings = [f for rel in files for f in scan_file(root, rel, allowlist)]
    for f in findings:
        print(f)
    if findings:
        print(f"scan-secrets: {len(findings)} possible secret(s) in {root}; remove them "
              "(and rotate them: they are in the history), or add a documented entry to "
              "scripts/secrets-allowlist.txt if one is a false positive", file=sys.stderr)
        return 1
    print(f"scan-secrets: {len(files)} files, no secrets")
    return 0


if __name__ == "__main__":
    sys.exit(main())
