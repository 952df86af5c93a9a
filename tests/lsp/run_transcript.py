#!/usr/bin/env python3
"""Replays an LSP transcript against `NETC lsp` and checks the server's replies.

Usage: run_transcript.py NETC TRANSCRIPT [--source-dir DIR] [--verbose]

A transcript is JSON Lines: one step per line; blank lines and lines whose
first non-blank character is `#` are comments. Steps:

  {"send": {...}}          frame the message with Content-Length and send it
                           ("jsonrpc": "2.0" is added when missing).
  {"send_raw": "..."}      write the string's UTF-8 bytes as they are (use
                           \\r\\n escapes), to test malformed framing.
  {"expect": {...}}        read server messages until one is "the same thing"
                           as the pattern, then check it against the pattern:
                           - a pattern with "id" (and no "method") takes the
                             next response with that id (null included);
                           - a pattern with "method" takes the next
                             notification with that method (and, when the
                             pattern has params.uri, the same params.uri).
                           window/logMessage notifications are skipped unless
                           the pattern asks for them. Messages read while
                           waiting that do not match (logs included) are kept,
                           in order, for later expectations (so the order of a
                           response and a debounced publishDiagnostics does
                           not matter).
                           The check: objects match when every key of the
                           pattern is present with a matching value (extra
                           keys are fine); arrays need the same length and
                           matching elements; a string pattern is equal, or,
                           if it starts with "re:", a regular expression that
                           must fullmatch the value (re.DOTALL); numbers,
                           booleans and null are equal (a boolean only to a
                           boolean).
  {"expect_exit": N}       wait for the server to exit and check its status.
  {"open_example": "mnist.net", "uri": "file:///mnist.net", "version": 1}
                           send textDocument/didOpen with the text of
                           examples/<name> under --source-dir (uri defaults to
                           file:///<name>, version to 1).
  {"expect_no_exit": true} check that the server is still running.
  {"close_input": true}    close the server's stdin (end of input).

No message within 60 s while an expectation waits fails the run (a guard
against a hung server, not a speed check). On any failure the server's
stderr is shown. If the transcript does not expect an exit, the script ends
with shutdown + exit and checks exit status 0.
"""

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time

TIMEOUT_S = 60.0
FINAL_SHUTDOWN_ID = "run_transcript:shutdown"


class TranscriptFailure(Exception):
    pass


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class Server:
    """The server process, a reader thread splitting its stdout into messages
    and a thread collecting its stderr."""

    def __init__(self, argv, verbose):
        self.verbose = verbose
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
        self.messages = queue.Queue()  # (message or None at end of output, framing error or None)
        self.stderr_chunks = []
        self.backlog = []  # messages read but not yet matched by an expectation
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self):
        out = self.proc.stdout
        try:
            while True:
                length = None
                saw_header = False
                while True:
                    line = out.readline()
                    if not line:
                        if saw_header:
                            self.messages.put((None, "the server's output ended inside a header"))
                        else:
                            self.messages.put((None, None))
                        return
                    saw_header = True
                    if line in (b"\r\n", b"\n"):
                        break
                    name, _, value = line.decode("ascii", "replace").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value.strip())
                if length is None:
                    self.messages.put((None, "a server message has no Content-Length header"))
                    return
                body = out.read(length)
                if len(body) < length:
                    self.messages.put((None, "the server's output ended inside a message body"))
                    return
                try:
                    message = json.loads(body.decode("utf-8"))
                except (UnicodeDecodeError, ValueError) as e:
                    self.messages.put((None, f"the server sent a body that is not JSON ({e}): {body[:200]!r}"))
                    return
                self.messages.put((message, None))
        except Exception as e:  # noqa: BLE001 -- report anything as a framing failure
            self.messages.put((None, f"reading the server's output failed: {e}"))

    def _read_stderr(self):
        for chunk in iter(lambda: self.proc.stderr.read1(4096), b""):
            self.stderr_chunks.append(chunk)

    def stderr_text(self):
        return b"".join(self.stderr_chunks).decode("utf-8", "replace")

    def write(self, data: bytes):
        if self.verbose:
            print(f"--> {data.decode('utf-8', 'replace')}", file=sys.stderr)
        try:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            raise TranscriptFailure(f"cannot write to the server (exit status {self.proc.poll()}): {e}")

    def send(self, message):
        if isinstance(message, dict) and "jsonrpc" not in message:
            message = {"jsonrpc": "2.0", **message}
        self.write(frame(json.dumps(message, ensure_ascii=False).encode("utf-8")))

    def next_message(self, waiting_for):
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TranscriptFailure(f"no message from the server in {TIMEOUT_S:.0f} s while waiting for "
                                        f"{waiting_for}")
            try:
                message, error = self.messages.get(timeout=left)
            except queue.Empty:
                continue
            if message is None:
                self.messages.put((None, error))  # keep reporting the end
                if error:
                    raise TranscriptFailure(f"{error} (while waiting for {waiting_for})")
                raise TranscriptFailure(f"the server's output ended (exit status {self.proc.poll()}) while "
                                        f"waiting for {waiting_for}")
            if self.verbose:
                print(f"<-- {json.dumps(message, ensure_ascii=False)}", file=sys.stderr)
            return message

    def wait_exit(self, timeout=TIMEOUT_S):
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# ---- matching ----

def same_thing(pattern, message):
    """Whether `message` is what `pattern` waits for (see the module doc)."""
    if not isinstance(message, dict):
        return False
    if "method" in pattern:
        if message.get("method") != pattern["method"] or "id" in message and "id" not in pattern:
            return False
        if "id" in pattern and message.get("id") != pattern["id"]:
            return False
        uri = pattern.get("params", {}).get("uri") if isinstance(pattern.get("params"), dict) else None
        if isinstance(uri, str) and not uri.startswith("re:"):
            params = message.get("params")
            return isinstance(params, dict) and params.get("uri") == uri
        return True
    if "id" in pattern:
        return "method" not in message and "id" in message and message["id"] == pattern["id"] and \
            type(message["id"]) is type(pattern["id"])
    raise TranscriptFailure('an "expect" pattern needs an "id" or a "method"')


def first_difference(pattern, actual, path="$"):
    """None when `actual` matches `pattern`, else (path, reason)."""
    if isinstance(pattern, dict):
        if not isinstance(actual, dict):
            return path, f"expected an object, got {json.dumps(actual, ensure_ascii=False)[:200]}"
        for key, value in pattern.items():
            if key not in actual:
                return f"{path}.{key}", "missing"
            diff = first_difference(value, actual[key], f"{path}.{key}")
            if diff:
                return diff
        return None
    if isinstance(pattern, list):
        if not isinstance(actual, list):
            return path, f"expected an array, got {json.dumps(actual, ensure_ascii=False)[:200]}"
        for i, (p, a) in enumerate(zip(pattern, actual)):
            diff = first_difference(p, a, f"{path}[{i}]")
            if diff:
                return diff
        if len(pattern) != len(actual):
            return path, f"expected {len(pattern)} element(s), got {len(actual)}"
        return None
    if isinstance(pattern, str):
        if pattern.startswith("re:"):
            if not isinstance(actual, str):
                return path, f"expected a string matching /{pattern[3:]}/, got {json.dumps(actual)[:200]}"
            if re.fullmatch(pattern[3:], actual, re.DOTALL) is None:
                return path, f"{json.dumps(actual, ensure_ascii=False)} does not match /{pattern[3:]}/"
            return None
        if actual != pattern or not isinstance(actual, str):
            return path, f"expected {json.dumps(pattern, ensure_ascii=False)}, got " \
                         f"{json.dumps(actual, ensure_ascii=False)}"
        return None
    if isinstance(pattern, bool) or pattern is None:
        if actual is not pattern:
            return path, f"expected {json.dumps(pattern)}, got {json.dumps(actual, ensure_ascii=False)[:200]}"
        return None
    if isinstance(pattern, (int, float)):
        if isinstance(actual, bool) or not isinstance(actual, (int, float)) or actual != pattern:
            return path, f"expected {json.dumps(pattern)}, got {json.dumps(actual, ensure_ascii=False)[:200]}"
        return None
    raise TranscriptFailure(f"unsupported pattern value at {path}: {pattern!r}")


def describe(pattern):
    if "method" in pattern:
        return f'notification "{pattern["method"]}"'
    return f"the response to id {json.dumps(pattern['id'])}"


def expect(server, pattern):
    if not isinstance(pattern, dict):
        raise TranscriptFailure('"expect" needs an object')
    # window/logMessage notifications are kept with the rest: only a pattern
    # for window/logMessage matches them, so other expectations skip them.
    for i, message in enumerate(server.backlog):
        if same_thing(pattern, message):
            del server.backlog[i]
            break
    else:
        while True:
            message = server.next_message(describe(pattern))
            if same_thing(pattern, message):
                break
            server.backlog.append(message)
    diff = first_difference(pattern, message)
    if diff:
        raise TranscriptFailure(
            f"the reply does not match\n  pattern: {json.dumps(pattern, ensure_ascii=False)}\n"
            f"  actual:  {json.dumps(message, ensure_ascii=False)}\n"
            f"  first difference at {diff[0]}: {diff[1]}")


# ---- the transcript ----

def read_steps(path):
    steps = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            stripped = line.strip()
            if not stripped or stripped.startswith("#"):
                continue
            try:
                step = json.loads(stripped)
            except ValueError as e:
                raise TranscriptFailure(f"{path}:{number}: not valid JSON: {e}")
            if not isinstance(step, dict) or len(step.keys() & STEP_KINDS) != 1:
                raise TranscriptFailure(f"{path}:{number}: a step is an object with exactly one of "
                                        f"{', '.join(sorted(STEP_KINDS))}")
            steps.append((number, step))
    return steps


STEP_KINDS = {"send", "send_raw", "expect", "expect_exit", "open_example", "expect_no_exit", "close_input"}


def run_step(server, step, source_dir):
    """Runs one step; returns True when the server was expected to exit."""
    if "send" in step:
        server.send(step["send"])
    elif "send_raw" in step:
        server.write(step["send_raw"].encode("utf-8"))
    elif "expect" in step:
        expect(server, step["expect"])
    elif "open_example" in step:
        name = step["open_example"]
        with open(os.path.join(source_dir, "examples", name), encoding="utf-8") as f:
            text = f.read()
        server.send({"method": "textDocument/didOpen",
                     "params": {"textDocument": {"uri": step.get("uri", f"file:///{name}"),
                                                 "languageId": "netsharp",
                                                 "version": step.get("version", 1), "text": text}}})
    elif "close_input" in step:
        server.proc.stdin.close()
    elif "expect_no_exit" in step:
        if server.proc.poll() is not None:
            raise TranscriptFailure(f"the server exited with status {server.proc.returncode}")
    elif "expect_exit" in step:
        status = server.wait_exit()
        if status is None:
            raise TranscriptFailure(f"the server did not exit within {TIMEOUT_S:.0f} s")
        if status != step["expect_exit"]:
            raise TranscriptFailure(f"the server exited with status {status}, expected {step['expect_exit']}")
        return True
    return False


def main():
    parser = argparse.ArgumentParser(description="Replay an LSP transcript against `NETC lsp`.")
    parser.add_argument("netc")
    parser.add_argument("transcript")
    parser.add_argument("--source-dir", default=os.path.normpath(os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..")), help="the repository root (for examples/)")
    parser.add_argument("--verbose", "-v", action="store_true", help="print every message sent and received")
    args = parser.parse_args()

    try:
        steps = read_steps(args.transcript)
    except (OSError, TranscriptFailure) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2

    server = Server([args.netc, "lsp"], args.verbose)
    where = "at the end"
    exited = False
    try:
        for number, step in steps:
            where = f"{args.transcript}:{number}"
            exited = run_step(server, step, args.source_dir)
        if not exited:
            where = f"{args.transcript}: the closing shutdown + exit"
            server.send({"id": FINAL_SHUTDOWN_ID, "method": "shutdown"})
            expect(server, {"id": FINAL_SHUTDOWN_ID, "result": None})
            server.send({"method": "exit"})
            run_step(server, {"expect_exit": 0}, args.source_dir)
    except TranscriptFailure as e:
        server.kill()
        print(f"FAIL {where}\n{e}", file=sys.stderr)
        if server.backlog:
            print("messages received and not matched by any expectation:", file=sys.stderr)
            for message in server.backlog[-10:]:
                print(f"  {json.dumps(message, ensure_ascii=False)[:1000]}", file=sys.stderr)
        time.sleep(0.1)  # let the stderr thread finish
        stderr = server.stderr_text()
        print(f"server stderr:\n{stderr}" if stderr else "server stderr: (empty)", file=sys.stderr)
        return 1
    finally:
        server.kill()
    stderr = server.stderr_text()
    if stderr and args.verbose:
        print(f"server stderr:\n{stderr}", file=sys.stderr)
    print(f"PASS {args.transcript} ({len(steps)} steps)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
