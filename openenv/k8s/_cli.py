"""``openenv k8s IMAGE``: print the Kubernetes manifest that serves an env image."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_commands(sub: Any) -> None:
    p = sub.add_parser("k8s", help="write a Kubernetes manifest (workload, headless Service) for an image")
    p.add_argument("image", help="the env image, as the cluster pulls it (e.g. registry/openenv-echo:1)")
    p.add_argument("--name", default="", help="object and DNS name (default: from the image, openenv-echo)")
    p.add_argument("--replicas", type=int, default=1, help="pods (default 1)")
    p.add_argument("--statefulset", action="store_true",
                   help="a StatefulSet (stable pod names) instead of a Deployment")
    p.add_argument("-n", "--namespace", help="namespace (default: kubectl's current one)")
    p.add_argument("--cpu", default="250m", help="CPU request per pod (default 250m)")
    p.add_argument("--cpu-limit", default="1", help="CPU limit per pod (default 1)")
    p.add_argument("--memory", default="256Mi", help="memory request per pod (default 256Mi)")
    p.add_argument("--memory-limit", default="1Gi", help="memory limit per pod (default 1Gi)")
    p.add_argument("--drain", type=int, default=5, metavar="S",
                   help="preStop seconds for the Service to drop a terminating pod (default 5)")
    p.add_argument("--start-timeout", type=int, default=120, metavar="S",
                   help="seconds a pod may take to answer /health before it is restarted (default 120)")
    p.add_argument("--max-sessions", type=int, help="concurrent sessions per pod (OPENENV_MAX_SESSIONS)")
    p.add_argument("--writable", action="append", default=[], metavar="PATH",
                   help="another writable folder (an emptyDir) besides /tmp; repeatable")
    p.add_argument("--root", action="store_true",
                   help="run as root with a few capabilities, for images built so (openenv-coding)")
    p.add_argument("-o", "--output", help="write to this file instead of stdout")
    p.set_defaults(func=_k8s)


def _k8s(args: argparse.Namespace) -> int:
    from ._manifest import K8sOptions, manifest, to_yaml

    options = K8sOptions(
        image=args.image,
        name=args.name,
        replicas=args.replicas,
        kind="StatefulSet" if args.statefulset else "Deployment",
        namespace=args.namespace,
        cpu_request=args.cpu,
        cpu_limit=args.cpu_limit,
        memory_request=args.memory,
        memory_limit=args.memory_limit,
        drain_s=args.drain,
        start_timeout_s=args.start_timeout,
        max_sessions=args.max_sessions,
        writable=tuple(args.writable),
        root=args.root,
    )
    try:
        text = to_yaml(manifest(options))
    except ValueError as exc:
        print(f"openenv k8s: {exc}", file=sys.stderr)
        return 2
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0
