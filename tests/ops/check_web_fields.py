#!/usr/bin/env python3
"""The dashboard reads the model the server writes (issue 26).

coordinator/web/app.js reads answer fields only through field(obj, 'name') and
asArray(obj, 'name'). Every such name must be one the server writes: a JSON key of
common/src/api_model.cc (the API's answers, common/include/hotkey/api_model.h) or of
common/src/hotkey_list.cc (the hot-key list). The dashboard once guessed names the API never
had (rate_per_s, skew_max_avg, hot_key_count, actor) and read the top view from a field
("top") the server does not send.

Usage: check_web_fields.py REPO_ROOT
"""
import os
import re
import sys

root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")


def read(*parts):
    with open(os.path.join(root, *parts), encoding="utf-8") as f:
        return f.read()


app = read("coordinator", "web", "app.js")
writers = read("common", "src", "api_model.cc") + read("common", "src", "hotkey_list.cc")
# Keys the writers put in JSON: {"name", ...}, j["name"] =, read(j, "name", ...).
written = set(re.findall(r'\{"([a-z_0-9]+)",', writers))
written |= set(re.findall(r'\[\s*"([a-z_0-9]+)"\s*\]', writers))
written |= set(re.findall(r'read\(j,\s*"([a-z_0-9]+)"', writers))

used = re.findall(r"\b(?:field|asArray)\([^,()]+(?:\([^()]*\))?,\s*'([^']+)'", app)
if not used:
    print("check_web_fields: no field(...) reads found in app.js: the check is out of date")
    sys.exit(1)
# The old guessing helper must not come back.
if re.search(r"\bpick\(", app):
    print("check_web_fields: app.js uses pick(): read fields by their API name with field()")
    sys.exit(1)
unknown = sorted(set(n for n in used if n not in written))
for name in unknown:
    print(f"check_web_fields: app.js reads '{name}', which the server never writes "
          "(common/src/api_model.cc, common/src/hotkey_list.cc)")
print(f"check_web_fields: {len(set(used))} field names read, {len(unknown)} unknown")
sys.exit(1 if unknown else 0)
