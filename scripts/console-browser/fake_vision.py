"""A loopback stand-in for the images:annotate wire format, for the console's browser test.

Every image gets the SafeSearch answer named in the file given as argv[2] ("review" → adult POSSIBLE, so the
item waits for a person; "block" → adult VERY_LIKELY; "approve" → everything VERY_UNLIKELY), read per request so
the test can change its mind between runs.
"""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ANSWERS = {
    "review": {"adult": "POSSIBLE", "spoof": "UNLIKELY", "medical": "UNLIKELY", "violence": "UNLIKELY", "racy": "UNLIKELY"},
    "block": {"adult": "VERY_LIKELY", "spoof": "UNLIKELY", "medical": "UNLIKELY", "violence": "UNLIKELY", "racy": "VERY_LIKELY"},
    "approve": {"adult": "VERY_UNLIKELY", "spoof": "VERY_UNLIKELY", "medical": "VERY_UNLIKELY", "violence": "VERY_UNLIKELY", "racy": "VERY_UNLIKELY"},
}


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        with open(sys.argv[2]) as mode_file:
            answer = ANSWERS[mode_file.read().strip()]
        body = json.dumps({"responses": [{"safeSearchAnnotation": answer} for _ in request.get("requests", [])]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
