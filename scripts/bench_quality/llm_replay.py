#!/usr/bin/env python3
"""Record and replay an OpenAI-compatible chat-completions endpoint, so the priority LLM engine can be measured on
the labelled sets again and again without calling the model (scripts/bench-quality's LLM part).

    llm_replay.py record --upstream https://api.openai.com/v1 --file REC.jsonl [--port P] [--api-key-env OPENAI_API_KEY]
    llm_replay.py replay --file REC.jsonl [--port P]

Both modes serve POST /v1/chat/completions on 127.0.0.1 and print "listening on http://127.0.0.1:PORT" when
ready. `record` forwards each request to the upstream (adding the bearer key from the named environment
variable), returns its answer unchanged and appends {key, model, messages, status, body} to the file. `replay`
answers from the file only: the same model and messages (the key is a SHA-256 of them, so a changed prompt, text
or context is a miss) get the recorded status and body; a miss is a 404 with an OpenAI-style error, which makes
Sluice's LLM engine fall back to the rules and say so (`engine: "rules (llm fallback)"`), so a miss is counted,
never passed off as the model's answer. Standard library only.
"""

import argparse
import hashlib
import http.server
import json
import os
import sys
import threading
import urllib.request


def request_key(body):
    """What identifies an answer: the model and the exact messages."""
    canonical = json.dumps({"model": body.get("model"), "messages": body.get("messages")}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def load(path):
    recordings = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if line.strip():
                    try:
                        entry = json.loads(line)
                        recordings[entry["key"]] = entry
                    except (ValueError, KeyError) as error:
                        sys.exit(f"llm_replay.py: {path}:{number}: not a recording line: {error}")
    return recordings


def make_handler(mode, args, recordings, lock):
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, fmt, *values):
            pass

        def answer(self, status, body):
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/healthz":
                self.answer(200, {"mode": mode, "recordings": len(recordings)})
            else:
                self.answer(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})

        def do_POST(self):
            if self.path.rstrip("/") != "/v1/chat/completions":
                self.answer(404, {"error": {"message": f"no route {self.path}", "type": "invalid_request_error"}})
                return
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw)
            except ValueError:
                self.answer(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
                return
            key = request_key(body)
            if mode == "replay":
                entry = recordings.get(key)
                if entry is None:
                    self.answer(404, {"error": {"message": "not recorded: this model and these messages were never recorded",
                                                "type": "not_recorded"}})
                else:
                    self.answer(entry["status"], entry["body"].encode())
                return
            request = urllib.request.Request(args.upstream.rstrip("/") + "/chat/completions", data=raw, method="POST",
                                             headers={"Content-Type": "application/json"})
            key_value = os.environ.get(args.api_key_env or "", "")
            if key_value:
                request.add_header("Authorization", f"Bearer {key_value}")
            try:
                with urllib.request.urlopen(request, timeout=120) as response:
                    status, data = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, data = error.code, error.read()
            except OSError as error:
                self.answer(502, {"error": {"message": f"upstream unreachable: {error}", "type": "upstream"}})
                return
            if status == 200:
                with lock:
                    recordings[key] = {"key": key, "model": body.get("model"), "messages": body.get("messages"),
                                       "status": status, "body": data.decode("utf-8", "replace")}
                    with open(args.file, "a", encoding="utf-8") as handle:
                        handle.write(json.dumps(recordings[key], ensure_ascii=False, sort_keys=True) + "\n")
            self.answer(status, data)

    return Handler


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mode", choices=["record", "replay"])
    parser.add_argument("--file", required=True)
    parser.add_argument("--upstream")
    parser.add_argument("--api-key-env", default="OPENAI_API_KEY")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    if args.mode == "record" and not args.upstream:
        parser.error("record needs --upstream")
    recordings = load(args.file)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port),
                                             make_handler(args.mode, args, recordings, threading.Lock()))
    print(f"listening on http://127.0.0.1:{server.server_address[1]} ({args.mode}, {len(recordings)} recordings)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
