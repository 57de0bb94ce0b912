"""A check-back endpoint for the center (http.server, standard library only).

    EC_SECRET=... python3 examples/checkback_server.py 8090

The center calls GET /checkback?bizID=..&messageKey=..&attempt=.. for a
PREPARE left undecided; answer from your database whether the local
transaction committed. With EC_SECRET set (checkback.biz[].secret), every
call's EC-Signature is verified.
"""
import os
import sys
from http.server import ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from eventcenter import COMMIT, ROLLBACK, checkback_handler  # noqa: E402

committed_orders = {"order-42"}  # stands for a lookup in your database


def decide(biz_id, key):
    return COMMIT if key in committed_orders else ROLLBACK


port = int(sys.argv[1]) if len(sys.argv) > 1 else 8090
secrets = [os.environ["EC_SECRET"]] if os.environ.get("EC_SECRET") else []
ThreadingHTTPServer(("127.0.0.1", port), checkback_handler(decide, secrets)).serve_forever()
