"""Send one transactional message over the producer API.

    python3 examples/producer.py http://127.0.0.1:8081 [token]

With `eventcenter dev` running (its producer API is on 127.0.0.1:8081).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from eventcenter import Client  # noqa: E402

base = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8081"
client = Client(base, token=sys.argv[2] if len(sys.argv) > 2 else None)


def save_order():
    print("local transaction: order 42 saved")  # your database transaction


client.transact("orders", "order-42", json.dumps({"id": 42, "total": "9.90"}), topic="orders.events",
                fkey="order-42", verify="http://127.0.0.1:8090/checkback", local_tx=save_order)
print(client.state("orders", "order-42"))
