"""Prepares through the Python client with a registry-addressed check-back
(run by clients/e2e_test.go).

Environment: EC_URL (producer API), EC_TOKEN, EC_BIZ (bizID), EC_VERIFY (a
zookeeper:// ec-verify, prepared as key <bizID>-zk) and EC_BAD_VERIFY (a
JSON list of ec-verify values the center must refuse). Prints one JSON
object: what prepare returned and, per refused value, the error.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from eventcenter import ApiError, Client  # noqa: E402

biz = os.environ["EC_BIZ"]
client = Client(os.environ["EC_URL"], token=os.environ["EC_TOKEN"])
out = {"prepared": client.prepare(biz, biz + "-zk", "through the registry", "orders.events",
                                  verify=os.environ["EC_VERIFY"], check_after_ms=100)}
refused = {}
for bad in json.loads(os.environ["EC_BAD_VERIFY"]):
    try:
        client.prepare(biz, biz + "-zk-bad", "never", "orders.events", verify=bad)
        refused[bad] = {"status": 200}
    except ApiError as e:
        refused[bad] = {"status": e.status, "field": e.field, "message": e.message}
out["refused"] = refused
print(json.dumps(out))
