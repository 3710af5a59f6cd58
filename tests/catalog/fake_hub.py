#!/usr/bin/env python3
"""A loopback stand-in for a download server and for the Hugging Face hub, for
the download tests (tests/test_fetch.sh, tests/test_catalog.c). Listens on
127.0.0.1 on a random port (written to --port-file), exits after --lifetime
seconds whatever happens, and appends every request line with its Range and
If-Range headers to --log.

Plain files ROOT/NAME, by the first path part:
  /f/NAME          the file: ETag, Last-Modified, Accept-Ranges; "Range: bytes=N-"
                   gets a 206 unless If-Range names other content (then a 200)
  /cut/NAME        the first request announces the whole length, sends --cut
                   bytes and closes; later ones behave like /f/
  /norange/NAME    like /cut/, but ignores Range (a 200 with the whole file)
                   though it sends Accept-Ranges
  /huge/NAME       announces a petabyte, sends a few bytes and closes
  /nolen/NAME      no Content-Length, no ranges: the whole file, then closes
  /nolencut/NAME   the same, closing after half the file
  /html/NAME       a 200 with an HTML error page
  /gzip/NAME       Content-Encoding: gzip and a body that is not gzip
  /flip/NAME       one byte of the tensor data flipped (a valid GGUF, another hash)
  /fliphead/NAME   one byte of the header flipped (not a valid GGUF)
  /short/NAME      Content-Length: half the file, and that half
  /changing/NAME   like /cut/, then serves ROOT/NAME.v2 (another ETag) from
                   the second request on
  /zero206/NAME    like /cut/, then answers a Range with a 206 from byte 0
  /trickle/NAME    1.5 bytes a second (ranges and an ETag: resumable)
  /tricklenr/NAME  the same without Accept-Ranges or a validator
  /slow/NAME       --rate bytes a second (ranges: resumable)
  /s500/NAME       a 500 with an HTML body
  /loop/NAME       redirects to itself
  /redir/NAME      redirects to /f/NAME
  /redirfile/NAME  redirects to file:///etc/hostname
  /redirftp/NAME   redirects to ftp://127.0.0.1/NAME
  /redirgopher/NAME redirects to gopher://127.0.0.1/NAME

The hub: repositories are folders ROOT/hub/ORG/REPO.
  /api/models/ORG/REPO/tree/main   the file listing (path, size, lfs.oid = SHA-256)
  /ORG/REPO/resolve/main/PATH      a 302 to /cdn/ORG/REPO/PATH (served like
                   /f/) with X-Linked-Etag (the SHA-256, quoted) and X-Linked-Size;
                   ORG "liar" announces another hash, ORG "nohash" none, and ORG
                   "flipper" serves the file with a data byte flipped"""
import argparse, hashlib, http.server, json, os, threading, time

ap = argparse.ArgumentParser()
ap.add_argument("root")
ap.add_argument("--port-file", required=True)
ap.add_argument("--log", required=True)
ap.add_argument("--cut", type=int, default=100000)
ap.add_argument("--rate", type=int, default=200000)
ap.add_argument("--lifetime", type=float, default=60)
args = ap.parse_args()
served_once = set()
lock = threading.Lock()
MODES = {"f", "cut", "norange", "huge", "nolen", "nolencut", "html", "gzip", "flip", "fliphead", "short",
         "changing", "zero206", "trickle", "tricklenr", "slow", "s500", "loop", "redir", "redirfile", "redirftp",
         "redirgopher", "cdn"}
LAST_MODIFIED = "Tue, 01 Dec 2026 00:00:00 GMT"


def sha256(b):
    return hashlib.sha256(b).hexdigest()


def etag_of(b):
    return '"%s"' % sha256(b)[:16]


def flip(b, at):
    b = bytearray(b)
    b[at] ^= 0xFF
    return bytes(b)


def safe_join(root, rel):
    parts = rel.split("/")
    if not rel or any(p in ("", ".", "..") for p in parts):
        return None
    p = os.path.join(root, *parts)
    return p if os.path.isfile(p) else None


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def do_GET(self):
        rng = self.headers.get("Range", "")
        with open(args.log, "a") as f:
            f.write("%s %s %s\n" % (self.path, rng or "-", self.headers.get("If-Range", "-")))
        path = self.path.split("?")[0]
        parts = path.split("/")
        if len(parts) >= 7 and parts[1:3] == ["api", "models"] and parts[5:7] == ["tree", "main"]:
            return self.tree(parts[3], parts[4])
        if len(parts) >= 6 and parts[3:5] == ["resolve", "main"]:
            return self.resolve(parts[1], parts[2], "/".join(parts[5:]))
        if len(parts) < 3 or parts[1] not in MODES:
            return self.fail(404)
        mode = parts[1]
        if mode == "cdn":
            org = parts[2]
            p = safe_join(os.path.join(args.root, "hub"), "/".join(parts[2:]))
            if not p:
                return self.fail(404)
            data = open(p, "rb").read()
            return self.serve("f", flip(data, len(data) - 4096) if org == "flipper" else data, first=False)
        if len(parts) != 3:
            return self.fail(404)
        name = parts[2]
        if mode == "loop":
            return self.redirect(self.path)
        if mode == "redir":
            return self.redirect("/f/" + name)
        if mode == "redirfile":
            return self.redirect("file:///etc/hostname")
        if mode == "redirftp":
            return self.redirect("ftp://127.0.0.1/" + name)
        if mode == "redirgopher":
            return self.redirect("gopher://127.0.0.1/" + name)
        p = safe_join(args.root, name)
        if not p:
            return self.fail(404)
        data = open(p, "rb").read()
        with lock:
            first = path not in served_once
            served_once.add(path)
        if mode == "changing" and not first:
            data = open(p + ".v2", "rb").read()
        return self.serve(mode, data, first)

    def serve(self, mode, data, first):
        if mode == "huge":
            self.send_response(200)
            self.send_header("Content-Length", str(10**15))
            self.end_headers()
            self.wfile.write(data[:1000])
            self.close_connection = True
            return
        if mode == "s500":
            return self.fail(500, b"<html><body>Internal Server Error</body></html>")
        if mode == "html":
            return self.fail(200, b"<!DOCTYPE html><html><head><title>Error</title></head><body>Rate limited</body></html>")
        if mode == "gzip":
            body = b"\x1f\x8b\x08\x00garbage, not deflate data at all" * 50
            self.send_response(200)
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode in ("nolen", "nolencut"):
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(data if mode == "nolen" else data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        if mode == "flip":
            data = flip(data, len(data) - 4096)
        if mode == "fliphead":
            data = flip(data, 9)  # the tensor count's second byte
        if mode == "short":
            half = data[:len(data) // 2]
            self.send_response(200)
            self.send_header("Content-Length", str(len(half)))
            self.end_headers()
            self.wfile.write(half)
            return
        ranges = mode != "tricklenr"  # norange says it can, then does not
        etag = etag_of(data)
        start = 0
        rng = self.headers.get("Range", "")
        if_range = self.headers.get("If-Range")
        if rng and ranges and mode != "norange" and (if_range is None or if_range in (etag, LAST_MODIFIED)):
            if not rng.startswith("bytes=") or not rng[6:].endswith("-"):
                return self.fail(400)
            start = int(rng[6:-1])
            if start >= len(data):
                return self.fail(416)
        if mode == "zero206" and start:
            start = 0
            self.send_response(206)
            self.send_header("Content-Range", "bytes 0-%d/%d" % (len(data) - 1, len(data)))
        else:
            self.send_response(206 if start else 200)
            if start:
                self.send_header("Content-Range", "bytes %d-%d/%d" % (start, len(data) - 1, len(data)))
        self.send_header("Content-Length", str(len(data) - start))
        if ranges:
            self.send_header("Accept-Ranges", "bytes")
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", LAST_MODIFIED)
        self.end_headers()
        body = data[start:]
        if mode in ("cut", "norange", "changing", "zero206") and first:
            self.wfile.write(body[:args.cut])
            self.wfile.flush()
            self.close_connection = True
            return
        if mode in ("trickle", "tricklenr"):
            return self.drip(body, 1, 1 / 1.5)
        if mode == "slow":
            return self.drip(body, max(1, args.rate // 10), 0.1)
        self.wfile.write(body)

    def drip(self, body, chunk, every):
        try:
            for i in range(0, len(body), chunk):
                self.wfile.write(body[i:i + chunk])
                self.wfile.flush()
                time.sleep(every)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def tree(self, org, repo):
        top = os.path.join(args.root, "hub", org, repo)
        if not os.path.isdir(top):
            return self.fail(404)
        out = []
        for d, _, files in os.walk(top):
            for fn in sorted(files):
                full = os.path.join(d, fn)
                rel = os.path.relpath(full, top)
                data = open(full, "rb").read()
                out.append({"type": "file", "oid": sha256(data)[:40], "size": len(data), "path": rel,
                            "lfs": {"oid": sha256(data), "size": len(data), "pointerSize": 134}})
        body = json.dumps(out).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def resolve(self, org, repo, rel):
        p = safe_join(os.path.join(args.root, "hub", org, repo), rel)
        if not p:
            return self.fail(404)
        data = open(p, "rb").read()
        self.send_response(302)
        self.send_header("Location", "/cdn/%s/%s/%s" % (org, repo, rel))
        if org != "nohash":
            sha = sha256(data if org != "liar" else data + b"x")
            self.send_header("X-Linked-Etag", '"%s"' % sha)
            self.send_header("X-Linked-Size", str(len(data)))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def redirect(self, where):
        self.send_response(302)
        self.send_header("Location", where)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def fail(self, code, body=b""):
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        if body:
            self.send_header("Content-Type", "text/html")
        self.end_headers()
        self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # clients hang up on purpose (zinc aborting a refused download)


srv = Server(("127.0.0.1", 0), H)
threading.Timer(args.lifetime, lambda: os._exit(0)).start()
with open(args.port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(args.port_file + ".tmp", args.port_file)
srv.serve_forever()
