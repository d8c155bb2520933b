"""A loopback OpenAI-compatible chat completion server for the schema run: every caption request gets a caption;
a thread request (response_format json_schema) gets an empty but valid answer of its schema."""
import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        content = "A small square of one colour."
        schema = ((request.get("response_format") or {}).get("json_schema") or {}).get("name")
        if schema:
            content = json.dumps({"thread_summary": {"summary": ["Nothing much happened."], "keyPoints": []},
                                  "action_items": {"items": []}, "decisions": {"decisions": []}}.get(schema, {}))
        body = json.dumps({"choices": [{"message": {"content": content}}],
                           "usage": {"prompt_tokens": 12, "completion_tokens": 7, "total_tokens": 19}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
