"""The model gateway inside the sandbox: a loopback TCP port that leads to the gateway's unix
socket, and the agent's command started beside it (a sandbox program: standard library only, run
by the sandbox's Python; sabench.gateway.server is the host side).

    python3 forward.py SOCKET GRACE_S -- COMMAND...

It listens on 127.0.0.1 (a free port: the sandbox's own loopback under bwrap, docker, podman and
apptainer, whose network is otherwise none), sets the variables agents read (OPENAI_BASE_URL,
ANTHROPIC_BASE_URL, their API keys: the run's token), starts the command through the sandbox's
shell (so a command that is not there exits 127, as a shell says it) and exits as it does. The
gateway tells it when the run's budget is spent (a request it holds open until then): the agent then
has GRACE_S seconds to write out what it has before it and its processes are ended.
"""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time

TERM_GRACE_S = 5.0
#: Set once the forwarder ends the agent itself: the SIGTERM it sends its group is not passed on.
ENDING = threading.Event()


def _pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    with contextlib.suppress(OSError):
        dst.shutdown(socket.SHUT_WR)


def _relay(conn, path):
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(path)
    except OSError:
        conn.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, conn), daemon=True)
    back.start()
    _pipe(conn, upstream)
    back.join()
    conn.close()
    upstream.close()


def _serve(listener, path):
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=_relay, args=(conn, path), daemon=True).start()


def _end(agent):
    """SIGTERM to the agent's processes (the forwarder's own group, which the backend ends after the
    run), then SIGKILL of the agent after a grace."""
    ENDING.set()
    with contextlib.suppress(OSError):
        os.killpg(0, signal.SIGTERM)
    deadline = time.monotonic() + TERM_GRACE_S
    while agent.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    with contextlib.suppress(OSError):
        agent.kill()


def _watch_budget(path, token, grace_s, agent):
    """Hold a request open until the gateway answers that the budget is spent; then end the agent
    after ``grace_s`` unless it ends first."""
    request = (
        "GET /sabench/budget HTTP/1.1\r\nHost: gateway\r\n"
        f"Authorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    ).encode()
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(path)
            sock.sendall(request)
            answer = sock.recv(4096)
    except OSError:
        return
    if b" 200 " not in answer.split(b"\r\n", 1)[0] + b" ":
        return
    deadline = time.monotonic() + grace_s
    while agent.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    if agent.poll() is None:
        sys.stderr.write("[sabench] gateway budget spent: ending the agent\n")
        _end(agent)


def main(argv):
    path, grace_s, sep, command = argv[0], float(argv[1]), argv[2], argv[3:]
    if sep != "--" or not command:
        sys.stderr.write("usage: forward.py SOCKET GRACE_S -- COMMAND...\n")
        return 2
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    port = listener.getsockname()[1]
    threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    token = os.environ.get("SABENCH_GATEWAY_TOKEN", "")
    base = f"http://127.0.0.1:{port}"
    env = dict(os.environ)
    env.update(
        SABENCH_GATEWAY_URL=base,
        OPENAI_BASE_URL=base + "/v1",
        OPENAI_API_BASE=base + "/v1",
        OPENAI_API_KEY=token,
        ANTHROPIC_BASE_URL=base,
        ANTHROPIC_API_KEY=token,
        ANTHROPIC_AUTH_TOKEN=token,
    )
    shell = ["/bin/sh", "-c", 'exec "$@"', "agent"] if os.path.exists("/bin/sh") else []
    try:
        agent = subprocess.Popen([*shell, *command], env=env)
    except OSError as exc:
        sys.stderr.write(f"{command[0]}: {exc.strerror}\n")
        return 127

    def pass_on(signum, _frame):
        if not ENDING.is_set():
            with contextlib.suppress(OSError):
                agent.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, pass_on)
    args = (path, token, grace_s, agent)
    threading.Thread(target=_watch_budget, args=args, daemon=True).start()
    while True:
        try:
            code = agent.wait()
            break
        except InterruptedError:
            continue
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
