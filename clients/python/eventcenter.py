"""eventcenter producer client: transactional messages over HTTP.

Standard library only (Python 3.8+). Talks to the center's producer API
(ingress.listen): PREPARE, run the local transaction, then COMMIT or
ROLLBACK; each call returns once the broker acknowledged the envelope.
Also verifies the center's check-back signatures (EC-Signature v2) for a
check-back endpoint served with http.server (see checkback_handler).

    client = Client("http://127.0.0.1:8081", token="...")
    client.transact("orders", order_id, payload, topic="orders.events",
                    local_tx=save_order, verify="http://10.0.0.5:8090/checkback")
    client.wait_settled("orders", order_id)  # {"status": "COMMITTED", "send_status": "SENT", ...}

A key names one message, once: a later PREPARE or COMMIT of the same key
changes nothing (a COMMIT after a ROLLBACK is a conflict, ignored).
"""

import hashlib
import hmac
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler

__all__ = ["Client", "ApiError", "CommitUnsent", "settled", "verify_signature", "SignatureError",
           "checkback_handler", "COMMIT", "ROLLBACK", "UNKNOWN"]

# Check-back answers (TrustMessage's messageStatus values).
COMMIT, ROLLBACK, UNKNOWN = 2, 3, 1


class ApiError(Exception):
    """An answer other than 2xx: status, the field it names (if any) and why."""

    def __init__(self, status, message, field=None, retry_after=None, body=None):
        super().__init__("HTTP %d: %s" % (status, message))
        self.status = status
        self.message = message
        self.field = field
        self.retry_after = retry_after
        self.body = body


class CommitUnsent(Exception):
    """The local transaction committed but its COMMIT was not acknowledged.

    The message is not lost: the center checks the producer back (the
    verify endpoint) and then forwards it.
    """


def _order(order_key):
    """The commit/rollback parameter that reaches an ordered PREPARE's partition."""
    return [("ec-order-key", order_key)] if order_key else None


def settled(st):
    """Whether a state from Client.state() is final for a producer: see
    Client.wait_settled."""
    status = st.get("status")
    if st.get("orphan") or status in ("ROLLED_BACK", "CANCELLED", "VERIFY_FAILED"):
        return True
    return status == "COMMITTED" and st.get("send_status") in ("SENT", "DEAD")


class Client:
    """A producer API client. Thread-safe (each call is one HTTP request).

    base_url: the producer API, e.g. "http://127.0.0.1:8081".
    token: a producer token (ingress.tokens), or None in dev.
    retries: how many times a 503 or 429 answer (or a connection error) is
    retried, waiting Retry-After (or 1s) in between; a repeated envelope is
    harmless.
    """

    def __init__(self, base_url, token=None, timeout=15.0, retries=3, max_wait=10.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.max_wait = max_wait

    # -- envelopes ---------------------------------------------------------

    def prepare(self, biz_id, key, payload, topic, fkey=None, target=None, tag=None,
                verify=None, check_after_ms=None, headers=None, order_key=None):
        """Announce a message; returns {"id", "type", "topic", "partition", "offset"}.

        payload: bytes or str (UTF-8). headers: dict of forwarded headers
        (name -> value), sent as ec-h-<name>, names keep their case.
        order_key: messages of biz_id with one order key are forwarded in
        commit order; pass it again to commit or rollback.
        """
        params = [("ec-topic", topic)]
        for name, value in (("ec-fkey", fkey), ("ec-target", target), ("ec-tag", tag),
                            ("ec-verify", verify), ("ec-order-key", order_key)):
            if value is not None:
                params.append((name, value))
        if check_after_ms is not None:
            params.append(("ec-check-after", str(int(check_after_ms))))
        for name, value in (headers or {}).items():
            params.append(("ec-h-" + name, value))
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        return self._call("POST", self._path(biz_id, key, "prepare"), params, payload or b"")

    def commit(self, biz_id, key, order_key=None):
        """Commit a prepared message (order_key: the one it was prepared with)."""
        return self._call("POST", self._path(biz_id, key, "commit"), _order(order_key))

    def rollback(self, biz_id, key, order_key=None):
        """Roll a prepared message back (order_key: the one it was prepared with)."""
        return self._call("POST", self._path(biz_id, key, "rollback"), _order(order_key))

    def state(self, biz_id, key):
        """The message's state: {"status", "send_status", ...}; ApiError 404 if unknown."""
        return self._call("GET", self._path(biz_id, key))

    def wait_settled(self, biz_id, key, timeout=30.0, interval=0.2):
        """Poll state() until the message settled, and return that state.

        Settled: forwarded (COMMITTED, send_status SENT), given up (DEAD),
        ROLLED_BACK, CANCELLED, VERIFY_FAILED, or an orphan COMMIT (a
        COMMIT whose PREPARE never came: "orphan": true). A message not
        stored yet (404), PREPARED, or committed and waiting to be sent is
        polled again; after timeout seconds the last state read is
        returned ({"status": None} if there was none).
        """
        deadline = time.monotonic() + timeout
        last = {"biz_id": biz_id, "key": key, "status": None}
        while True:
            try:
                last = self.state(biz_id, key)
            except ApiError as e:
                if e.status != 404:
                    raise
            if settled(last) or time.monotonic() >= deadline:
                return last
            time.sleep(interval)

    def batch(self, envelopes):
        """Send several envelopes: dicts with type, biz_id, key, payload or
        payload_base64, headers (by parameter name, e.g. {"ec-topic": ...})."""
        body = json.dumps({"envelopes": envelopes}).encode("utf-8")
        return self._call("POST", "/v1/batch", None, body, "application/json")

    def transact(self, biz_id, key, payload, topic, local_tx, **prepare_opts):
        """PREPARE, run local_tx(), then COMMIT (or ROLLBACK if it raised).

        Returns local_tx's result. If local_tx raises, the message is rolled
        back (best effort: check-back settles it otherwise) and the exception
        is re-raised. If the COMMIT cannot be sent, CommitUnsent is raised:
        the local transaction did commit, and check-back will settle the
        message, so give a verify endpoint (prepare_opts["verify"]).
        """
        self.prepare(biz_id, key, payload, topic, **prepare_opts)
        try:
            result = local_tx()
        except BaseException:
            try:
                self.rollback(biz_id, key, prepare_opts.get("order_key"))
            except Exception:  # check-back answers rollback later
                pass
            raise
        try:
            self.commit(biz_id, key, prepare_opts.get("order_key"))
        except Exception as e:
            raise CommitUnsent("%s:%s committed locally, commit not sent: %s" % (biz_id, key, e)) from e
        return result

    # -- plumbing ----------------------------------------------------------

    @staticmethod
    def _path(biz_id, key, action=None):
        p = "/v1/messages/%s/%s" % (urllib.parse.quote(biz_id, safe=""), urllib.parse.quote(key, safe=""))
        return p + "/" + action if action else p

    def _call(self, method, path, params=None, body=None, content_type="application/octet-stream"):
        url = self.base_url + path
        if params:
            url += "?" + urllib.parse.urlencode(params, quote_via=urllib.parse.quote)
        attempt = 0
        while True:
            req = urllib.request.Request(url, data=body if method == "POST" else None, method=method)
            if self.token:
                req.add_header("Authorization", "Bearer " + self.token)
            if method == "POST":
                req.add_header("Content-Type", content_type)
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    return json.loads(resp.read() or b"null")
            except urllib.error.HTTPError as e:
                raw = e.read()
                try:
                    doc = json.loads(raw)
                except ValueError:
                    doc = {"error": raw.decode("utf-8", "replace")}
                retry_after = e.headers.get("Retry-After")
                err = ApiError(e.code, doc.get("error", ""), doc.get("field"),
                               float(retry_after) if retry_after else None, doc)
                if e.code not in (429, 503) or attempt >= self.retries or \
                        (e.code == 429 and retry_after is None):
                    raise err from None
                wait = err.retry_after or 1.0
            except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
                if attempt >= self.retries:
                    raise
                wait = 1.0
            attempt += 1
            time.sleep(min(wait, self.max_wait))


# -- check-back ---------------------------------------------------------------

class SignatureError(Exception):
    """An EC-Signature that is missing, malformed, stale, replayed or wrong."""


def canonical_v2(t, method, host, target, body, tri_version="", tri_group=""):
    """The string a v2 signature is the HMAC-SHA256 of (see docs/checkback.md)."""
    host = host.lower()
    for suffix in (":80", ":443"):
        if host.endswith(suffix):
            host = host[: -len(suffix)]
            break
    fields = ["v2", str(t), method, host, target, tri_version, tri_group,
              hashlib.sha256(body).hexdigest()]
    if any("\r" in f or "\n" in f for f in fields):
        raise SignatureError("a signed field holds CR or LF")
    return "\n".join(fields)


def verify_signature(header, method, host, target, body, secrets, now=None,
                     max_age=300, max_future=30, tri_version="", tri_group=""):
    """Check an EC-Signature header (v2) against the request as received.

    target is the request target as sent (path and raw query), host the
    Host header. secrets: the accepted secrets (str or bytes; several while
    rotating). Returns the matching signature (hex, a replay-cache key) or
    raises SignatureError.
    """
    if not header:
        raise SignatureError("missing EC-Signature")
    ts, macs = None, []
    for part in header.split(","):
        k, sep, v = part.strip().partition("=")
        if not sep:
            raise SignatureError("bad EC-Signature")
        if k == "t":
            if ts is not None:
                raise SignatureError("bad EC-Signature")
            ts = v
        elif k == "v2":
            macs.append(v.lower())
    try:
        t = int(ts)
    except (TypeError, ValueError):
        raise SignatureError("bad EC-Signature") from None
    if not macs:
        raise SignatureError("EC-Signature has no v2 signature")
    now = time.time() if now is None else now
    if now - t > max_age or t - now > max_future:
        raise SignatureError("EC-Signature timestamp outside the allowed window")
    canonical = canonical_v2(t, method, host, target, body, tri_version, tri_group).encode("utf-8")
    for secret in secrets:
        if isinstance(secret, str):
            secret = secret.encode("utf-8")
        want = hmac.new(secret, canonical, hashlib.sha256).hexdigest()
        for m in macs:
            if hmac.compare_digest(m, want):
                return m
    raise SignatureError("bad EC-Signature")


class _ReplayCache:
    """Signatures accepted within the window; a second use is a replay."""

    def __init__(self, ttl, size=100000):
        self.ttl, self.size = ttl, size
        self.seen = {}
        self.lock = threading.Lock()

    def first_use(self, mac, now):
        with self.lock:
            if self.seen.get(mac, 0) >= now:
                return False
            if len(self.seen) >= self.size:
                for k in [k for k, exp in self.seen.items() if exp < now]:
                    del self.seen[k]
                while len(self.seen) >= self.size:  # the one nearest its expiry
                    del self.seen[min(self.seen, key=self.seen.get)]
            self.seen[mac] = now + self.ttl
            return True


def checkback_handler(decide, secrets=(), max_age=300, max_future=30):
    """A BaseHTTPRequestHandler class answering the center's HTTP check-back.

    decide(biz_id, key) returns COMMIT, ROLLBACK or UNKNOWN (or the strings
    "commit", "rollback", "unknown"). With secrets, every request must carry
    a valid v2 EC-Signature signed with one of them, not seen before;
    otherwise it is answered 401 (the center reads that as unknown and asks
    again later).

        server = ThreadingHTTPServer(("0.0.0.0", 8090), checkback_handler(decide, [secret]))
        server.serve_forever()
    """
    secrets = list(secrets)
    replays = _ReplayCache(max_age + max_future)
    statuses = {"commit": COMMIT, "rollback": ROLLBACK, "unknown": UNKNOWN}

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet; override to log
            pass

        def _answer(self, code, doc):
            body = json.dumps(doc).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _refuse(self, code, error, **headers):
            # The body was not read: close the connection, so that it is
            # never taken for the next request.
            self.close_connection = True
            body = json.dumps({"status": "FAIL", "error": error}).encode("utf-8")
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _not_get(self):
            return self._refuse(405, "want GET", Allow="GET")

        do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _not_get

        def do_GET(self):
            # The framing is checked before anything is read: a check-back
            # is a GET without a body, so no body is ever read.
            if self.headers.get("Content-Length", "0").strip() not in ("", "0") or "Transfer-Encoding" in self.headers:
                return self._refuse(400, "a GET carries no body")
            if secrets:
                try:
                    mac = verify_signature(self.headers.get("EC-Signature", ""), "GET",
                                           self.headers.get("Host", ""), self.path, b"", secrets,
                                           max_age=max_age, max_future=max_future)
                except SignatureError as e:
                    return self._answer(401, {"status": "FAIL", "error": str(e)})
                if not replays.first_use(mac, time.time()):
                    return self._answer(401, {"status": "FAIL", "error": "EC-Signature replayed"})
            q = urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query)
            biz_id, key = q.get("bizID", [""])[0], q.get("messageKey", [""])[0]
            if not biz_id or not key:
                return self._answer(400, {"status": "FAIL", "error": "bizID and messageKey are required"})
            decision = decide(biz_id, key)
            decision = statuses.get(decision, decision)
            if decision not in (COMMIT, ROLLBACK, UNKNOWN):
                decision = UNKNOWN
            self._answer(200, {"status": "SUCCESS", "data": {"messageKey": key, "messageStatus": decision}})

    return Handler
