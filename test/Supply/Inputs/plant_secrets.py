"""Writes files with planted secrets for scan-secrets.test into a folder.

Every secret is assembled at run time from pieces, so that this file (which
is tracked) does not itself match the scanner's rules on the real tree.
"""

import os
import sys

out = sys.argv[1]
os.makedirs(os.path.join(out, "src"), exist_ok=True)
os.makedirs(os.path.join(out, "docs"), exist_ok=True)

begin = "-----" + "BEGIN"
aws = "AK" + "IA" + "Q7" * 8                  # 20 characters: AKIA + 16
ghp = "gh" + "p_" + "aB3dE6gH9j" * 3 + "kLmNoP"  # ghp_ + 36
slack = "xo" + "xb-" + "123456789012-" + "AbCdEfGhIjKl"
value = "q8Zr" + "T2vLx9" + "Wm4pN7bK1s"     # 20 random-looking characters

with open(os.path.join(out, "src", "keys.pem"), "w") as f:
    f.write("some text\n" + begin + " RSA PRIVATE KEY" + "-----\nMIIB...\n")
with open(os.path.join(out, "src", "config.py"), "w") as f:
    f.write("# line 1\n")
    f.write("aws_id = '" + aws + "'\n")
    f.write("API_" + "KEY = \"" + value + "\"\n")
    f.write("password = \"" + "changeme" + "\"\n")  # low entropy and short: not reported
with open(os.path.join(out, "src", "ci.sh"), "w") as f:
    f.write("export GITHUB_TOKEN=" + ghp + "\n")
    f.write("curl -H 'Authorization: Bearer " + slack + "'\n")
# The same AWS id in documentation, which the allowlist of the test permits.
with open(os.path.join(out, "docs", "example.md"), "w") as f:
    f.write("For example `" + aws + "`.\n")
