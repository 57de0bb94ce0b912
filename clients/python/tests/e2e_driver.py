"""Drives the Python client against a running center (run by clients/e2e_test.go).

Environment: EC_URL (producer API), EC_TOKEN, EC_BIZ (bizID), EC_SECRET
(the bizID's check-back secret), EC_GOOD_PORT and EC_BAD_PORT (the check-back
servers: the second verifies with a wrong secret), EC_VECTOR (a signature
made by the center's signing code, to verify). Prints one JSON object.
"""
import json
import os
import sys
import threading
import time
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import eventcenter  # noqa: E402
from eventcenter import ApiError, Client, SignatureError, checkback_handler, verify_signature  # noqa: E402

biz = os.environ["EC_BIZ"]
secret = os.environ["EC_SECRET"]
client = Client(os.environ["EC_URL"], token=os.environ["EC_TOKEN"])
out = {}

# A signature the center's own code made, and tampered copies.
v = json.loads(os.environ["EC_VECTOR"])
args = (v["method"], v["host"], v["target"], b"", [secret])
out["vector_ok"] = verify_signature(v["header"], *args, now=v["now"]) != ""
bad = {}
for name, change in {"target": ("target", v["target"] + "x"), "host": ("host", "other:1"),
                     "secret": ("secret", "wrong")}.items():
    a = dict(method=v["method"], host=v["host"], target=v["target"], secret=secret)
    a[change[0]] = change[1]
    try:
        verify_signature(v["header"], a["method"], a["host"], a["target"], b"", [a["secret"]], now=v["now"])
        bad[name] = "accepted"
    except SignatureError as e:
        bad[name] = str(e)
try:
    verify_signature(v["header"], *args, now=v["now"] + 3600)
    bad["stale"] = "accepted"
except SignatureError as e:
    bad["stale"] = str(e)
out["vector_refused"] = bad

# Check-back servers: decisions for keys whose "local transaction" committed.
committed = {biz + "-checkback"}
calls = {"good": 0, "bad": 0}


def decider(name):
    def decide(biz_id, key):
        calls[name] += 1
        return eventcenter.COMMIT if key in committed else eventcenter.ROLLBACK
    return decide


servers = []
for name, port, secrets in (("good", int(os.environ["EC_GOOD_PORT"]), [secret]),
                            ("bad", int(os.environ["EC_BAD_PORT"]), ["not-the-secret"])):
    srv = ThreadingHTTPServer(("127.0.0.1", port), checkback_handler(decider(name), secrets))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    servers.append(srv)
good = "http://127.0.0.1:%s/checkback" % os.environ["EC_GOOD_PORT"]
bad_url = "http://127.0.0.1:%s/checkback" % os.environ["EC_BAD_PORT"]

# 1. transact, local transaction commits.
out["commit_result"] = client.transact(biz, biz + "-commit", ("payload " + biz) * 40, "orders.events",
                                       lambda: "saved", fkey=biz + "-commit", verify=good,
                                       headers={"Trace-Id": "t-" + biz})


# 2. transact, local transaction fails: rolled back, the error goes on.
def failing():
    raise RuntimeError("insufficient stock")


try:
    client.transact(biz, biz + "-rollback", "never", "orders.events", failing, verify=good)
    out["rollback_error"] = None
except RuntimeError as e:
    out["rollback_error"] = str(e)

# 2b. a batch: prepare and commit of one message in one request, in order.
out["batch"] = [r["type"] for r in client.batch([
    {"type": "prepare", "biz_id": biz, "key": biz + "-batch", "payload": "batched",
     "headers": {"ec-topic": "orders.events", "ec-fkey": biz + "-batch"}},
    {"type": "commit", "biz_id": biz, "key": biz + "-batch"},
])["results"]]

# 3. prepared, then the producer "dies": check-back commits (signed, verified).
client.prepare(biz, biz + "-checkback", "checked back", "orders.events", verify=good, check_after_ms=100)
# 4. prepared, check-back endpoint with the wrong secret: refused, stays prepared.
client.prepare(biz, biz + "-badsig", "never", "orders.events", verify=bad_url, check_after_ms=100)

# 5. errors name the field.
try:
    client.prepare(biz, biz + "-invalid", "x", "bad topic!")
except ApiError as e:
    out["invalid"] = {"status": e.status, "field": e.field, "message": e.message}
try:
    Client(os.environ["EC_URL"], token="not-a-token-0123456789").commit(biz, "x")
except ApiError as e:
    out["unauthorized"] = e.status

# 6. wait_settled: the final state, whatever the message became; a COMMIT
# for a key never prepared settles as an orphan, not as a healthy message.
client.commit(biz, biz + "-orphan")
out["settled"] = {k: client.wait_settled(biz, biz + k) for k in ("-commit", "-rollback", "-orphan")}
out["settled_rule"] = [eventcenter.settled(json.loads(st)) for st in json.loads(os.environ["EC_SETTLED_CASES"])]

# Wait for the center (404 until ingest has stored the message).
def state_or_none(key):
    try:
        return client.state(biz, key)
    except ApiError as e:
        if e.status != 404:
            raise
        return {"status": None, "verify_attempts": 0}


want = {biz + "-commit": ("COMMITTED", "SENT"), biz + "-rollback": ("ROLLED_BACK", None),
        biz + "-batch": ("COMMITTED", "SENT"),
        biz + "-checkback": ("COMMITTED", "SENT")}
deadline = time.time() + 60
states = {}
while time.time() < deadline:
    states = {k: state_or_none(k) for k in list(want) + [biz + "-badsig"]}
    done = all(states[k]["status"] == s and states[k].get("send_status") == ss for k, (s, ss) in want.items())
    if done and states[biz + "-badsig"]["verify_attempts"] >= 1 and calls["good"] >= 1:
        break
    time.sleep(0.2)
out["states"] = {k: {"status": s["status"], "send_status": s.get("send_status"),
                     "verify_attempts": s["verify_attempts"]} for k, s in states.items()}
out["calls"] = calls
for srv in servers:
    srv.shutdown()
print(json.dumps(out))
