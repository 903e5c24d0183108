"""What one wake-up costs a process on this machine, in its own CPU time: the floor under a served
hub that is idle between its clients' frames (bench/serve_vs_ag2.py prints the hub's sleeps per
session; docs/benchmarks.md, "Serve hub CPU, session 13").

Two processes on a loopback TCP connection. The receiver waits in `epoll_wait` (`selectors`),
reads what arrived and waits again; the sender sends a small message (SIZE bytes, TCP_NODELAY,
as a WebSocket client's frame) every GAP microseconds, busy in between as AG2's client process
is. Printed: the receiver's CPU time per wake-up (`epoll_wait` returning, one `recv`, going back
to sleep), and for comparison the sender's CPU per `send` with the receiver waiting, and a
thread's CPU per `time.sleep(GAP)` (a timer wake-up, no socket). Each figure is the median of
ROUNDS runs of N messages.

    python3 bench/wake_cost.py [--n 3000] [--gap-us 800] [--size 300] [--rounds 3]

With nothing else running, the receiver's figure is what the kernel and the hypervisor charge a
process for being woken by a peer; on a 2-core virtual machine it is tens of microseconds, on
bare metal a few.
"""

from __future__ import annotations

import argparse
import os
import selectors
import socket
import statistics
import time


def _pair() -> tuple[socket.socket, int]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    return listener, listener.getsockname()[1]


def _busy(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def receiver_wake(n: int, gap: float, size: int) -> tuple[float, float]:
    """(receiver CPU µs per wake-up, sender CPU µs per send) over `n` messages."""
    listener, port = _pair()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the sender
        os.close(read_end)
        conn = socket.create_connection(("127.0.0.1", port))
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        message = b"x" * size
        spent = 0.0
        for _ in range(n):
            t0 = time.thread_time()
            conn.send(message)
            spent += time.thread_time() - t0
            _busy(gap)
        conn.close()
        os.write(write_end, f"{spent / n * 1e6:.3f}".encode())
        os._exit(0)
    os.close(write_end)
    sock, _ = listener.accept()
    selector = selectors.EpollSelector()
    selector.register(sock, selectors.EVENT_READ)
    wakes = 0
    t0 = time.thread_time()
    while True:
        selector.select()
        wakes += 1
        if not sock.recv(1 << 16):
            break
    cpu = time.thread_time() - t0
    os.waitpid(pid, 0)
    sender = float(os.read(read_end, 64).decode())
    os.close(read_end)
    sock.close()
    listener.close()
    return cpu / wakes * 1e6, sender


def timer_wake(n: int, gap: float) -> float:
    """CPU µs per `time.sleep(gap)`."""
    t0 = time.thread_time()
    for _ in range(n):
        time.sleep(gap)
    return (time.thread_time() - t0) / n * 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--gap-us", type=float, default=800.0)
    ap.add_argument("--size", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    gap = args.gap_us / 1e6
    wakes, sends, sleeps = [], [], []
    for _ in range(args.rounds):
        wake, send = receiver_wake(args.n, gap, args.size)
        wakes.append(wake)
        sends.append(send)
        sleeps.append(timer_wake(args.n, gap))
    print(f"load average {os.getloadavg()[0]:.2f}; medians of {args.rounds} rounds of {args.n} messages, "
          f"{args.size} bytes every {args.gap_us:.0f} µs")
    print(f"receiver, woken by each message (epoll_wait + recv): {statistics.median(wakes):6.1f} µs of CPU per wake-up "
          f"({', '.join(f'{w:.1f}' for w in wakes)})")
    print(f"sender, per send to a waiting receiver:              {statistics.median(sends):6.1f} µs")
    print(f"a thread's time.sleep of the same gap:              {statistics.median(sleeps):6.1f} µs")


if __name__ == "__main__":
    main()
