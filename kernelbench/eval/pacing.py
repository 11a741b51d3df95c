"""The external clock of the timed loop: every timed call on fresh inputs is paced by the grader's own process,
which keeps what it saw, so a candidate's timing claims are weighed against evidence gathered outside its process.

Whatever runs in the bench stage's process is the candidate's to read and rewrite (frames, locals, memory through
ctypes): its reply, its samples and its choice of kept calls are claims. So, for each timed call on fresh inputs,
the bench process and the grader exchange three messages over a socket pair the grader made:

1. READY: the grader answers with the call's nonce, the seed of the permutation that makes the call's inputs
   fresh (portable.fresh.freshen). No work on those inputs can start before the grader sent it.
2. DONE (after the call and its synchronise): the grader answers with a weight seed, unknown until then.
3. COMMIT, with the output's fingerprint under that weight (portable.fresh.fingerprint, a nonlinear tree hash of
   the output's bytes: computable only from the whole output, and not met later by nudging another output): the
   grader decides, by
   reservoir sampling from its own randomness, whether the call is kept for the trusted fresh stage, and answers
   with its slot (or -1).

The grader stamps its own clock at each message (`PacedCall`). The trusted fresh stage then paces the same
steps without any call between them (the L2 flush, the inputs freshened, a synchronise, the reference output
fingerprinted): the median of those spans is the overhead a paced call carries beside its own work. What follows
(kernelbench.eval.verdict.paced_*): a published median is refused when it is below EXTERNAL_FRACTION of what the
grader's clock leaves for the calls (their shortest span, the one least slowed by anything else the machine did,
less OVERHEAD_FACTOR times that overhead), less EXTERNAL_SLACK_MS, and also below the shortest span divided by
SPAN_RATIO (a suspicion the grader settles by timing the shape again: eval.stages.timing.time_again);
the kept calls must be the grader's choice, on the grader's nonces; the fresh stage recomputes each kept output's
fingerprint and judges it against the reference. A candidate that skips the work of a call (a fast wrong answer) commits to a fingerprint before it
knows whether the call is kept: each such call is caught with the chance that it is kept.
"""

from __future__ import annotations

import secrets
import socket
import struct
import threading
import time
from dataclasses import dataclass, field

READY, DONE, COMMIT = b"R", b"D", b"C"
REQUEST = struct.Struct("!cHq")    # kind, shape index, value (the fingerprint of a COMMIT)
ANSWER = struct.Struct("!q")
SEED_BITS = 62
# a published median may not be below EXTERNAL_FRACTION of the shortest span less OVERHEAD_FACTOR times the
# measured overhead (the span also holds the flush, the permutation of the inputs, the fingerprint of the output
# and the round trips between processes; the candidate's process may carry more of it than the trusted one, when
# its own threads compete for the host), less the slack
# The overhead is measured in another process at another moment: a machine busier while the bench stage ran (other
# gradings on the host, say) lengthens that stage's spans but not the overhead measured, so the factor is wide.
# The second rule does not depend on that measure at all: contention slows a call's own time with its span.
EXTERNAL_FRACTION = 0.25
OVERHEAD_FACTOR = 10.0
EXTERNAL_SLACK_MS = 0.01
SPAN_RATIO = 20.0                  # and the shortest span must be at least this many times the published median
CALIBRATION_CALLS = {"cuda": 12, "cpu": 4}  # per shape (the CPU's timed loop makes four calls)


@dataclass
class PacedCall:
    number: int                 # 1-based, in the shape's sequence of calls on fresh inputs (warm-up included)
    nonce: int
    sent_ns: int                # the grader's clock when the nonce left
    done_ns: int | None = None
    weight: int | None = None
    committed_ns: int | None = None
    fingerprint: int | None = None

    @property
    def span_ms(self) -> float | None:
        return None if self.committed_ns is None else (self.committed_ns - self.sent_ns) / 1e6


@dataclass
class PacedShape:
    size: int                                   # kept calls wanted
    calls: list[PacedCall] = field(default_factory=list)
    kept: list[PacedCall] = field(default_factory=list)

    def spans_ms(self) -> list[float]:
        return sorted(c.span_ms for c in self.calls if c.span_ms is not None)

    def median_span_ms(self) -> float | None:
        spans = self.spans_ms()
        return spans[len(spans) // 2] if spans else None

    def shortest_span_ms(self) -> float | None:
        spans = self.spans_ms()
        return spans[0] if spans else None

    def choose(self, call: PacedCall) -> int:
        """Reservoir sampling with the grader's randomness: the slot the call takes, or -1."""
        if self.size <= 0:
            return -1
        if len(self.kept) < self.size:
            self.kept.append(call)
            return len(self.kept) - 1
        slot = secrets.randbelow(call.number)
        if slot < self.size:
            self.kept[slot] = call
            return slot
        return -1


class Pacer(threading.Thread):
    """The grader's side: answers the bench process and records what it saw. `violations` lists messages that
    broke the protocol (out of order, unknown kind): the candidate's process speaking for itself."""

    def __init__(self, sock: socket.socket, kept_per_shape: int):
        super().__init__(daemon=True, name="kernelbench-pacer")
        self.sock, self.kept_per_shape = sock, kept_per_shape
        self.shapes: dict[int, PacedShape] = {}
        self.violations: list[str] = []

    def run(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = self.sock.recv(4096)
            except OSError:
                return
            if not chunk:
                return
            buffer += chunk
            while len(buffer) >= REQUEST.size:
                kind, shape, value = REQUEST.unpack_from(buffer)
                buffer = buffer[REQUEST.size:]
                answer = self.answer(kind, shape, value)
                try:
                    self.sock.sendall(ANSWER.pack(answer))
                except OSError:
                    return
                if kind == READY and self.shapes.get(shape) and self.shapes[shape].calls:
                    self.shapes[shape].calls[-1].sent_ns = time.monotonic_ns()  # when the nonce really left

    def answer(self, kind: bytes, shape: int, value: int) -> int:
        now = time.monotonic_ns()
        paced = self.shapes.setdefault(shape, PacedShape(self.kept_per_shape))
        last = paced.calls[-1] if paced.calls else None
        if kind == READY:
            if last is not None and last.committed_ns is None:
                self.violations.append(f"shape {shape}: call {last.number + 1} began before call {last.number} "
                                       "was committed")
            call = PacedCall(len(paced.calls) + 1, secrets.randbits(SEED_BITS), now)
            paced.calls.append(call)
            return call.nonce
        if kind == DONE and last is not None and last.done_ns is None:
            last.done_ns, last.weight = now, secrets.randbits(SEED_BITS)
            return last.weight
        if kind == COMMIT and last is not None and last.done_ns is not None and last.committed_ns is None:
            last.committed_ns, last.fingerprint = now, value
            return paced.choose(last)
        self.violations.append(f"shape {shape}: a {kind!r} message out of order")
        return -1

    def stop(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        self.join(timeout=5)


def open_pacer(kept_per_shape: int) -> tuple[Pacer, socket.socket]:
    """The grader's pacer, running, and the other end of its socket pair for the bench process (inheritable)."""
    ours, theirs = socket.socketpair()
    theirs.set_inheritable(True)
    pacer = Pacer(ours, kept_per_shape)
    pacer.start()
    return pacer, theirs


class PacerClient:
    """The bench process's side (made before any candidate code is imported)."""

    def __init__(self, fd: int):
        self.sock = socket.socket(fileno=fd)
        self._send, self._recv = self.sock.sendall, self.sock.recv

    def _ask(self, kind: bytes, shape: int, value: int = 0) -> int:
        self._send(REQUEST.pack(kind, shape, value))
        data = b""
        while len(data) < ANSWER.size:
            chunk = self._recv(ANSWER.size - len(data))
            if not chunk:
                raise ConnectionError("the grader's pacer closed the connection")
            data += chunk
        return ANSWER.unpack(data)[0]

    def ready(self, shape: int) -> int:
        return self._ask(READY, shape)

    def done(self, shape: int) -> int:
        return self._ask(DONE, shape)

    def commit(self, shape: int, fingerprint: int) -> int:
        return self._ask(COMMIT, shape, fingerprint)
