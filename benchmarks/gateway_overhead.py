"""What the model gateway adds to one model call: the same chat completion asked of the scripted
OpenAI-compatible server (tests/openai_server.py) directly, through litellm from the host (the
basic agent's path), and through the gateway from a client behind its forwarder (a command
agent's path: loopback port -> unix socket -> gateway -> LLMClient -> litellm -> server), median
of N calls each, interleaved so that a busy machine slows all alike.

    .venv/bin/python benchmarks/gateway_overhead.py [--n 50]

Prints one line per path and the gateway's median overhead over litellm alone.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from openai_server import ScriptedServer  # noqa: E402

from sabench.gateway.server import FORWARDER, Gateway  # noqa: E402
from sabench.gateway.settings import GatewaySettings  # noqa: E402
from sabench.llm import LLMClient, LLMSettings  # noqa: E402

#: The client behind the forwarder: N timed calls, one JSON line of seconds.
CLIENT = """
import json, os, sys, time, urllib.request
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
headers = {"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"]}
times = []
for _ in range(int(sys.argv[1])):
    request = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", body, headers)
    t0 = time.perf_counter()
    urllib.request.urlopen(request).read()
    times.append(time.perf_counter() - t0)
print(json.dumps(times))
"""


def direct(url: str, n: int) -> list[float]:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode()
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        urllib.request.urlopen(urllib.request.Request(url + "/chat/completions", body)).read()
        times.append(time.perf_counter() - t0)
    return times


def through_litellm(url: str, n: int) -> list[float]:
    client = LLMClient(LLMSettings(model="openai/m", api_base=url, cache=False, max_retries=0))

    async def calls() -> list[float]:
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            await client.forward([{"role": "user", "content": "hi"}], {})
            times.append(time.perf_counter() - t0)
        return times

    return asyncio.run(calls())


def through_gateway(url: str, n: int) -> list[float]:
    settings = GatewaySettings.from_agent({"model": "openai/m", "api_base": url})
    with Gateway(settings) as gateway:
        env = {**os.environ, "SABENCH_GATEWAY_TOKEN": gateway.token}
        argv = [sys.executable, str(FORWARDER), str(gateway.socket_path), "5", "--"]
        out = subprocess.run(
            [*argv, sys.executable, "-c", CLIENT, str(n)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=50)
    args = parser.parse_args()
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    with ScriptedServer([{"replies": [{"content": "ok"}]}]) as server:
        through_litellm(server.url, 3)  # litellm's import and first-call set-up, not timed
        results: dict[str, list[float]] = {"direct": [], "litellm": [], "gateway": []}
        for _ in range(5):  # interleaved rounds
            results["direct"] += direct(server.url, args.n // 5)
            results["litellm"] += through_litellm(server.url, args.n // 5)
            results["gateway"] += through_gateway(server.url, args.n // 5)
    medians = {name: statistics.median(times) * 1000 for name, times in results.items()}
    for name, ms in medians.items():
        print(f"{name:8s} median {ms:7.2f} ms per call ({len(results[name])} calls)")
    print(f"gateway overhead over litellm alone: +{medians['gateway'] - medians['litellm']:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
