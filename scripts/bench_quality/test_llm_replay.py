"""llm_replay.py records what an upstream answered and replays exactly that, and only that (python3 -m unittest)."""

import http.client
import http.server
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "llm_replay.py"


class Upstream(http.server.BaseHTTPRequestHandler):
    seen = []

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Upstream.seen.append((self.path, self.headers.get("Authorization"), body))
        text = body["messages"][-1]["content"]
        answer = {"choices": [{"message": {"role": "assistant", "content": json.dumps({"priority": "high", "echo": text})}}]}
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def start(args, env=None):
    proc = subprocess.Popen([sys.executable, str(SCRIPT)] + args, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, **(env or {})})
    line = proc.stdout.readline()
    port = int(re.search(r"127\.0\.0\.1:(\d+)", line).group(1))
    return proc, port


def post(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("POST", "/v1/chat/completions", body=json.dumps(body), headers={"Content-Type": "application/json"})
    response = conn.getresponse()
    return response.status, response.read()


class ReplayTests(unittest.TestCase):
    def test_record_then_replay(self):
        upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        threading.Thread(target=upstream.serve_forever, daemon=True).start()
        with tempfile.TemporaryDirectory() as folder:
            recordings = os.path.join(folder, "rec.jsonl")
            request = {"model": "m-1", "messages": [{"role": "user", "content": "water everywhere"}], "temperature": 0}
            recorder, port = start(["record", "--upstream", f"http://127.0.0.1:{upstream.server_address[1]}/v1",
                                    "--file", recordings, "--api-key-env", "REPLAY_TEST_KEY"], env={"REPLAY_TEST_KEY": "k-9"})
            try:
                status, recorded = post(port, request)
            finally:
                recorder.terminate()
                recorder.wait()
            self.assertEqual(status, 200)
            self.assertEqual(Upstream.seen[-1][:2], ("/v1/chat/completions", "Bearer k-9"))
            lines = Path(recordings).read_text().splitlines()
            self.assertEqual(len(lines), 1)
            self.assertEqual(json.loads(lines[0])["model"], "m-1")

            replayer, port = start(["replay", "--file", recordings])
            try:
                before = len(Upstream.seen)
                status, replayed = post(port, {**request, "temperature": 0.7})
                self.assertEqual((status, replayed), (200, recorded), "same model and messages: the recorded answer")
                status, missed = post(port, {**request, "messages": [{"role": "user", "content": "water everywhere!"}]})
                self.assertEqual(status, 404)
                self.assertEqual(json.loads(missed)["error"]["type"], "not_recorded")
                status, _ = post(port, {**request, "model": "m-2"})
                self.assertEqual(status, 404, "another model is a miss")
                self.assertEqual(len(Upstream.seen), before, "replay never calls the upstream")
            finally:
                replayer.terminate()
                replayer.wait()
        upstream.shutdown()

    def test_a_broken_recording_names_the_line(self):
        with tempfile.TemporaryDirectory() as folder:
            recordings = os.path.join(folder, "rec.jsonl")
            Path(recordings).write_text('{"key": "a", "status": 200, "body": "{}"}\nnot json\n')
            result = subprocess.run([sys.executable, str(SCRIPT), "replay", "--file", recordings], capture_output=True, text=True, timeout=10)
            self.assertNotEqual(result.returncode, 0)
            self.assertIn("rec.jsonl:2: not a recording line", result.stderr)


if __name__ == "__main__":
    unittest.main()
