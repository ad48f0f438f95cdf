#!/usr/bin/env python3
"""Drives a language server over stdin/stdout for a short session: initialize, open a Swift
file, a few requests (document symbols, hover, completion, definition), shutdown, exit.

    lsp-session.py DIR -- COMMAND [ARGS...]

DIR gets a one-file Swift workspace (main.swift). COMMAND is the server, or a wrapper that runs
it with the same stdio (`stallwatch record -o T -- sourcekit-lsp`). Prints one line per
response it got, and exits 0 when the server answered every request and exited."""
import json, os, subprocess, sys, time

def main():
    args = sys.argv[1:]
    if len(args) < 3 or args[1] != "--":
        sys.exit(__doc__)
    root, command = os.path.abspath(args[0]), args[2:]
    os.makedirs(root, exist_ok=True)
    source = os.path.join(root, "main.swift")
    text = "struct Greeter {\n    let name: String\n    func greet() -> String { \"Hello, \" + name }\n}\n" \
           "let greeter = Greeter(name: \"pool\")\nprint(greeter.greet())\ngreeter.\n"
    with open(source, "w") as f:
        f.write(text)
    server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    next_id = [0]

    def send(method, params, notify=False):
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if not notify:
            next_id[0] += 1
            message["id"] = next_id[0]
        body = json.dumps(message).encode()
        server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        server.stdin.flush()
        return message.get("id")

    def receive(wanted):
        while True:
            length = None
            while True:
                line = server.stdout.readline()
                if not line:
                    raise SystemExit("server closed its output while %s was pending" % wanted)
                line = line.strip()
                if not line:
                    break
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            message = json.loads(server.stdout.read(length))
            if message.get("id") == wanted and "method" not in message:
                return message
            if "method" in message and "id" in message:  # a request from the server: answer null
                reply = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": None}).encode()
                server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(reply) + reply)
                server.stdin.flush()

    uri = "file://" + source
    ask = lambda method, params: print(method, "error" if "error" in receive(send(method, params)) else "ok", flush=True)
    ask("initialize", {"processId": os.getpid(), "rootUri": "file://" + root, "capabilities": {}})
    send("initialized", {}, notify=True)
    send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "swift", "version": 1, "text": text}},
         notify=True)
    document = {"textDocument": {"uri": uri}}
    for _ in range(int(os.environ.get("LSP_ROUNDS", "5"))):
        ask("textDocument/documentSymbol", document)
        ask("textDocument/hover", dict(document, position={"line": 4, "character": 16}))
        ask("textDocument/completion", dict(document, position={"line": 6, "character": 8}))
        ask("textDocument/definition", dict(document, position={"line": 5, "character": 8}))
        time.sleep(0.3)
    ask("shutdown", None)
    send("exit", None, notify=True)
    server.stdin.close()
    sys.exit(0 if server.wait(timeout=60) == 0 else 1)

main()
