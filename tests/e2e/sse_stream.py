#!/usr/bin/env python3
"""Streams one POST and says when its bytes arrived, to show that server-sent
events pass a proxy as they are made rather than at the end.
Usage: sse_stream.py URL BODY_JSON OUT_BODY OUT_HEADERS
Writes the (de-chunked) body and the status line + headers, and prints one
JSON line: status, reads (reads that brought bytes), data_reads (reads that
brought a data: event), t_first (seconds to the first event), t_end (to the
end of the body), done (it ended with data: [DONE])."""
import http.client, json, sys, time, urllib.parse

url, body, out_body, out_headers = sys.argv[1:5]
u = urllib.parse.urlsplit(url)
c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
t0 = time.monotonic()
c.request('POST', u.path, body=body.encode(), headers={'Content-Type': 'application/json'})
r = c.getresponse()
with open(out_headers, 'w') as f:
    f.write('HTTP/1.%d %d %s\r\n' % (r.version - 10, r.status, r.reason))
    for k, v in r.getheaders():
        f.write('%s: %s\r\n' % (k, v))
data, reads, data_reads, t_first = b'', 0, 0, None
while True:
    try:
        b = r.read1(65536)
    except http.client.IncompleteRead as e:  # the upstream went away mid-stream
        b = e.partial
        data += b
        break
    except (ConnectionError, http.client.HTTPException):
        break
    if not b:
        break
    reads += 1
    if b'data: ' in b:
        data_reads += 1
        if t_first is None:
            t_first = time.monotonic() - t0
    data += b
t_end = time.monotonic() - t0
open(out_body, 'wb').write(data)
print(json.dumps({'status': r.status, 'reads': reads, 'data_reads': data_reads, 't_first': t_first, 't_end': t_end,
                  'done': data.endswith(b'data: [DONE]\n\n'), 'bytes': len(data)}))
