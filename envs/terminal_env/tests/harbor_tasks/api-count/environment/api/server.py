"""The inventory API: GET /items?page=N, three pages of items, each page naming the next."""

import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

ITEMS = [{"id": i, "status": "ok" if i % 3 else "broken", "size": (i * 7) % 11 + 1} for i in range(1, 26)]
PER_PAGE = 10


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path != "/items":
            self.send_error(404)
            return
        page = int(parse_qs(url.query).get("page", ["1"])[0])
        chunk = ITEMS[(page - 1) * PER_PAGE : page * PER_PAGE]
        more = page * PER_PAGE < len(ITEMS)
        body = json.dumps({"items": chunk, "next": page + 1 if more else None}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


ThreadingHTTPServer(("0.0.0.0", 8000), Handler).serve_forever()
