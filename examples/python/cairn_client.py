#!/usr/bin/env python3
"""A minimal Cairn client in Python (standard library only).

It speaks JSON-RPC 2.0 with LSP framing (Content-Length headers), over the
daemon's Unix socket or over stdio (it starts `cairn daemon --stdio` itself),
initializes, upserts a memory and searches for it. Proves the protocol is
language-agnostic; CI runs it.

    python3 cairn_client.py --socket /run/user/1000/cairn/d-xxxx.sock
    python3 cairn_client.py --stdio --db /tmp/demo.db [--cairn path/to/bin/cairn.js]
"""
import argparse
import json
import os
import socket
import subprocess
import sys


class CairnError(Exception):
    def __init__(self, error):
        data = error.get("data") or {}
        super().__init__(f"[{data.get('name', error.get('code'))} {error.get('code')}] {error.get('message')}")
        self.code = error.get("code")
        self.name = data.get("name")
        self.data = data


class Client:
    def __init__(self, reader, writer):
        self._r = reader
        self._w = writer
        self._next = 1
        self.notifications = []

    def _send(self, msg):
        body = json.dumps(msg).encode("utf-8")
        self._w.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self._w.flush()

    def _read(self):
        length = None
        while True:
            line = self._r.readline()
            if not line:
                raise EOFError("daemon closed the connection")
            line = line.strip()
            if not line:
                break
            name, _, value = line.decode("ascii").partition(":")
            if name.lower() == "content-length":
                length = int(value.strip())
        return json.loads(self._r.read(length).decode("utf-8"))

    def request(self, method, params=None):
        rid = self._next
        self._next += 1
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        while True:
            msg = self._read()
            if msg.get("id") == rid:
                if "error" in msg:
                    raise CairnError(msg["error"])
                return msg["result"]
            if "method" in msg:  # a notification such as memory/didChange
                self.notifications.append(msg)

    def notify(self, method, params=None):
        self._send({"jsonrpc": "2.0", "method": method, "params": params or {}})


def connect_socket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return Client(s.makefile("rb"), s.makefile("wb")), s


def connect_stdio(cairn, db):
    proc = subprocess.Popen(["node", cairn, "daemon", "--stdio", "--db", db, "--no-embeddings"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    return Client(proc.stdout, proc.stdin), proc


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--socket", help="daemon socket path")
    ap.add_argument("--stdio", action="store_true", help="start `cairn daemon --stdio` and talk over its stdin/stdout")
    ap.add_argument("--db", default=os.path.join(here, "demo.db"), help="store file for --stdio")
    ap.add_argument("--cairn", default=os.path.join(here, "..", "..", "daemon", "bin", "cairn.js"))
    ap.add_argument("--namespace", default="project.python-demo")
    args = ap.parse_args()

    if args.socket:
        client, handle = connect_socket(args.socket)
    elif args.stdio:
        client, handle = connect_stdio(args.cairn, args.db)
    else:
        ap.error("give --socket PATH or --stdio")

    init = client.request("initialize", {"processId": os.getpid(), "clientInfo": {"name": "cairn-python-example"}, "capabilities": {}})
    client.notify("initialized")
    print(f"connected to {init['serverInfo']['name']} {init['serverInfo']['version']} (protocol {init['protocolVersion']})")

    up = client.request("memory/upsert", {
        "namespace": args.namespace, "key": "greeting-style",
        "value": "Python clients greet with snake_case function names like say_hello_world",
        "kind": "preference", "tags": ["python", "style"], "source": "agent:python-example",
    })
    print(f"{'created' if up['created'] else 'updated'} {up['memory']['namespace']}/{up['memory']['key']} v{up['memory']['version']} at position {up['position']}")

    res = client.request("memory/search", {"query": "hello world", "scope": {"root": args.namespace}, "mode": "fts", "limit": 3})
    for i, hit in enumerate(res["hits"], 1):
        print(f"{i}. {hit['memory']['namespace']}/{hit['memory']['key']} score={hit['score']:.3f} {hit['snippet']}")
    if not res["hits"] or res["hits"][0]["memory"]["key"] != "greeting-style":
        print("search did not find the memory", file=sys.stderr)
        return 1

    try:
        client.request("memory/upsert", {"namespace": "Not Valid", "key": "k", "value": "v"})
        print("expected an InvalidNamespace error", file=sys.stderr)
        return 1
    except CairnError as e:
        print(f"bad input is refused with a typed error: {e.name} ({e.data.get('field')})")
        if e.name != "InvalidNamespace":
            return 1

    client.request("shutdown")
    client.notify("exit")
    if isinstance(handle, subprocess.Popen):
        handle.stdin.close()
        handle.wait(timeout=10)
    else:
        handle.close()
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
