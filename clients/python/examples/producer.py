"""Send one transactional message over the producer API; print where it ended.

    python3 clients/python/examples/producer.py [URL [TOKEN]]

With `eventcenter dev` running (its producer API is on 127.0.0.1:8081, the
default URL; dev needs no token). Each run sends a message of its own (a
fresh key), waits until it settled and prints its final state; it exits 0
once the message was forwarded, 1 otherwise.
"""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from eventcenter import Client  # noqa: E402

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8081"
client = Client(url, token=sys.argv[2] if len(sys.argv) > 2 else None)
order_id = "order-%d" % time.time_ns()  # a fresh key: a key names one message, once


def save_order():  # your local transaction: raise to roll the message back
    print("local transaction: %s saved" % order_id)


client.transact("orders", order_id, json.dumps({"id": order_id, "total": "9.90"}), topic="orders.events",
                fkey=order_id, verify="http://127.0.0.1:8090/checkback", local_tx=save_order)
final = client.wait_settled("orders", order_id)
print(json.dumps(final))
if final.get("send_status") != "SENT":
    print("not forwarded: %s" % (final.get("note") or final.get("status")), file=sys.stderr)
    sys.exit(1)
