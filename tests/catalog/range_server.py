#!/usr/bin/env python3
"""A loopback HTTP server for test_catalog.sh: serves files from a folder with
Range support (python's http.server has none) and misbehaves on request:

  /f/NAME        the file; "Range: bytes=N-" gets 206 and the rest
  /cut/NAME      the first request announces the whole length but sends only
                 --cut bytes and closes (an interrupted download); later ones
                 behave like /f/
  /norange/NAME  like /cut/, but always ignores Range (200, whole file)
  /huge/NAME     announces a petabyte, sends a few bytes and closes

Every request line and its Range header are appended to --log. The port is
written to --port-file. Exits after --lifetime seconds whatever happens."""
import argparse, http.server, os, threading

ap = argparse.ArgumentParser()
ap.add_argument("root"); ap.add_argument("--port-file", required=True); ap.add_argument("--log", required=True)
ap.add_argument("--cut", type=int, default=100000); ap.add_argument("--lifetime", type=float, default=60)
args = ap.parse_args()
served_once = set()
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        rng = self.headers.get("Range", "")
        with open(args.log, "a") as f:
            f.write("%s %s\n" % (self.path, rng or "-"))
        parts = self.path.split("/")
        if len(parts) != 3 or parts[1] not in ("f", "cut", "norange", "huge") or parts[2] in ("", ".", ".."):
            return self.fail(404)
        path = os.path.join(args.root, parts[2])
        if not os.path.isfile(path):
            return self.fail(404)
        data = open(path, "rb").read()
        with lock:
            first = self.path not in served_once
            served_once.add(self.path)
        mode = parts[1]
        if mode == "huge":
            self.send_response(200)
            self.send_header("Content-Length", str(10**15))
            self.end_headers()
            self.wfile.write(data[:1000])
            self.close_connection = True
            return
        start = 0
        if rng and mode != "norange":
            if not rng.startswith("bytes=") or not rng[6:].endswith("-"):
                return self.fail(400)
            start = int(rng[6:-1])
            if start >= len(data):
                return self.fail(416)
        self.send_response(206 if start else 200)
        self.send_header("Content-Length", str(len(data) - start))
        self.send_header("Accept-Ranges", "bytes")
        if start:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.end_headers()
        body = data[start:]
        if mode != "f" and first:
            self.wfile.write(body[:args.cut])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)

    def fail(self, code):
        self.send_response(code)
        self.send_header("Content-Length", "0")
        self.end_headers()


class Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # clients hang up on purpose (zinc aborting a refused download)


srv = Server(("127.0.0.1", 0), H)
threading.Timer(args.lifetime, lambda: os._exit(0)).start()
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
srv.serve_forever()
