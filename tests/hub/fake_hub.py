"""TEST DOUBLE of the Hugging Face Hub's HTTP API (no Hub is reachable from here).

A small Starlette app serving only the routes ``huggingface_hub`` 2.x calls for
``whoami``, ``create_repo`` (Spaces), ``upload_folder`` (regular, non-LFS uploads),
``space_info``, ``list_spaces`` and ``snapshot_download``. Repos live in memory; every request is
recorded in ``FakeHub.calls`` so tests can check what arrived. Run with
``FakeHub.start()`` on 127.0.0.1; ``HfApi(endpoint=hub.url, token=hub.token)`` talks to it.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

TOKEN = "hf_fake_token_for_tests"
USER = "alice"


@dataclass
class FakeRepo:
    repo_id: str
    private: bool
    sdk: str | None
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[str] = field(default_factory=list)
    likes: int = 0
    #: The files as each commit left them, by commit sha (a pinned revision reads these).
    snapshots: dict[str, dict[str, bytes]] = field(default_factory=dict)

    @property
    def tags(self) -> list[str]:
        """The ``tags`` of the README's front-matter, as the Hub reads them."""
        match = re.match(rb"^---\n(.*?)\n---", self.files.get("README.md", b""), re.S)
        meta = yaml.safe_load(match.group(1)) if match else None
        return [str(t) for t in meta.get("tags") or []] if isinstance(meta, dict) else []

    @property
    def sha(self) -> str:
        return self.commits[-1] if self.commits else "0" * 40

    def at(self, rev: str) -> tuple[str, dict[str, bytes]] | None:
        """``(sha, files)`` at revision ``rev``: ``main`` or a commit sha; else None."""
        if rev in ("main", self.sha):
            return self.sha, self.files
        if rev in self.snapshots:
            return rev, self.snapshots[rev]
        return None


class FakeHub:
    """The fake Hub: ``repos`` by id, ``calls`` as ``(method, path)`` in order."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.repos: dict[str, FakeRepo] = {}
        self.calls: list[tuple[str, str]] = []
        self.port = 0
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- auth ---------------------------------------------------------------------

    def _authed(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.token}"

    def _repo(self, request: Request) -> FakeRepo | Response:
        p = request.path_params
        repo = self.repos.get(f"{p['ns']}/{p['name']}")
        if repo is None or (repo.private and not self._authed(request)):
            headers = {"x-error-code": "RepoNotFound"}
            return JSONResponse({"error": "Repository not found"}, 404, headers=headers)
        return repo

    # --- routes -------------------------------------------------------------------

    async def whoami(self, request: Request) -> Response:
        if not self._authed(request):
            return JSONResponse({"error": "Invalid credentials in Authorization header"}, 401)
        return JSONResponse({"type": "user", "name": USER, "orgs": [{"name": "org"}], "auth": {}})

    async def create(self, request: Request) -> Response:
        if not self._authed(request):
            return JSONResponse({"error": "Invalid credentials"}, 401)
        body = await request.json()
        repo_id = f"{body.get('organization') or USER}/{body['name']}"
        url = f"{self.url}/spaces/{repo_id}"
        if repo_id in self.repos:
            return JSONResponse({"error": "You already created this space repo", "url": url}, 409)
        private = bool(body.get("private")) or body.get("visibility") == "private"
        self.repos[repo_id] = FakeRepo(repo_id, private, body.get("sdk"))
        return JSONResponse({"url": url, "name": repo_id})

    async def validate_yaml(self, request: Request) -> Response:
        return JSONResponse({"warnings": [], "errors": []})

    async def preupload(self, request: Request) -> Response:
        repo = self._repo(request)
        if isinstance(repo, Response):
            return repo
        body = await request.json()
        files = [
            {"path": f["path"], "uploadMode": "regular", "shouldIgnore": False, "oid": None}
            for f in body.get("files", [])
        ]
        return JSONResponse({"files": files, "commitOid": repo.sha})

    async def commit(self, request: Request) -> Response:
        repo = self._repo(request)
        if isinstance(repo, Response):
            return repo
        if not self._authed(request):
            return JSONResponse({"error": "Invalid credentials"}, 401)
        for line in (await request.body()).splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            if item["key"] == "file":
                value = item["value"]
                repo.files[value["path"]] = base64.b64decode(value["content"])
            elif item["key"] == "deletedFile":
                repo.files.pop(item["value"]["path"], None)
        sha = hashlib.sha1(f"{repo.repo_id}{len(repo.commits)}{time.time()}".encode()).hexdigest()
        repo.commits.append(sha)
        repo.snapshots[sha] = dict(repo.files)
        url = f"{self.url}/spaces/{repo.repo_id}/commit/{sha}"
        return JSONResponse({"commitUrl": url, "commitOid": sha, "pullRequestUrl": None})

    @staticmethod
    def _no_revision(rev: str) -> Response:
        headers = {"x-error-code": "RevisionNotFound"}
        return JSONResponse({"error": f"Invalid rev id: {rev}"}, 404, headers=headers)

    def _snapshot(self, request: Request) -> tuple[FakeRepo, str, dict[str, bytes]] | Response:
        """The request's repo, and its commit and files at the request's revision ("main"
        where the route names none); or the Hub's error answer."""
        repo = self._repo(request)
        if isinstance(repo, Response):
            return repo
        rev = request.path_params.get("rev", "main")
        found = repo.at(rev)
        return self._no_revision(rev) if found is None else (repo, *found)

    async def info(self, request: Request) -> Response:
        snapshot = self._snapshot(request)
        if isinstance(snapshot, Response):
            return snapshot
        repo, sha, files = snapshot
        siblings = [{"rfilename": path} for path in sorted(files)]
        return JSONResponse(
            {
                "id": repo.repo_id,
                "sha": sha,
                "private": repo.private,
                "sdk": repo.sdk,
                "siblings": siblings,
                "runtime": {"stage": "RUNNING"},
                "host": self.url,
                "subdomain": repo.repo_id.replace("/", "-"),
            }
        )

    async def list_spaces(self, request: Request) -> Response:
        """``GET /api/spaces``: ``filter`` (a tag), ``author``, ``search``, ``sort=likes``, ``limit``."""
        query = request.query_params
        tag, author, search = query.get("filter"), query.get("author"), query.get("search")
        found = [
            {
                "id": repo.repo_id,
                "likes": repo.likes,
                "tags": repo.tags,
                "sdk": repo.sdk,
                "private": repo.private,
            }
            for repo in self.repos.values()
            if (not repo.private or self._authed(request))
            and (not tag or tag in repo.tags)
            and (not author or repo.repo_id.startswith(f"{author}/"))
            and (not search or search.lower() in repo.repo_id.lower())
        ]
        if query.get("sort") == "likes":
            found.sort(key=lambda space: -int(space["likes"]))
        return JSONResponse(found[: int(query["limit"])] if query.get("limit") else found)

    async def tree(self, request: Request) -> Response:
        snapshot = self._snapshot(request)
        if isinstance(snapshot, Response):
            return snapshot
        entries = [
            {"type": "file", "path": path, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
            for path, data in sorted(snapshot[2].items())
        ]
        return JSONResponse(entries)

    async def resolve(self, request: Request) -> Response:
        snapshot = self._snapshot(request)
        if isinstance(snapshot, Response):
            return snapshot
        _, commit, files = snapshot
        data = files.get(request.path_params["path"])
        if data is None:
            return JSONResponse({"error": "Entry not found"}, 404, headers={"x-error-code": "EntryNotFound"})
        headers = {
            "x-repo-commit": commit,
            "etag": f'"{hashlib.sha1(data).hexdigest()}"',
            "content-length": str(len(data)),
        }
        body = b"" if request.method == "HEAD" else data
        return Response(body, headers=headers, media_type="application/octet-stream")

    def app(self) -> Starlette:
        space = "/api/spaces/{ns}/{name}"

        async def record(scope: Any, receive: Any, send: Any) -> None:
            if scope["type"] == "http":
                self.calls.append((scope["method"], scope["path"]))
            await inner(scope, receive, send)

        inner = Starlette(
            routes=[
                Route("/api/whoami-v2", self.whoami, methods=["GET"]),
                Route("/api/spaces", self.list_spaces, methods=["GET"]),
                Route("/api/repos/create", self.create, methods=["POST"]),
                Route("/api/validate-yaml", self.validate_yaml, methods=["POST"]),
                Route(space + "/preupload/{rev}", self.preupload, methods=["POST"]),
                Route(space + "/commit/{rev}", self.commit, methods=["POST"]),
                Route(space, self.info, methods=["GET"]),
                Route(space + "/revision/{rev:path}", self.info, methods=["GET"]),
                Route(space + "/tree/{rev}", self.tree, methods=["GET"]),
                Route(space + "/tree/{rev}/{sub:path}", self.tree, methods=["GET"]),
                Route("/spaces/{ns}/{name}/resolve/{rev}/{path:path}", self.resolve, methods=["GET", "HEAD"]),
            ]
        )
        return record  # type: ignore[return-value]

    # --- lifecycle ----------------------------------------------------------------

    def start(self) -> FakeHub:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = uvicorn.Config(
            self.app(), host="127.0.0.1", port=self.port, log_level="warning", lifespan="off"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="fake-hub", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("fake hub did not start in 10 s")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        if self._server is not None and self._thread is not None:
            self._server.should_exit = True
            self._thread.join(10)
