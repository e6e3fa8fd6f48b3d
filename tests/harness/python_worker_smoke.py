"""The Python worker started as the judge starts it, without torch or a GPU: python3 loads
libfp4arena_pyworker.so, passes its arguments, takes the Landlock step and serves; where there
is no GPU its first word is a fatal naming the CUDA device, where there is one a hello (then
it is told to quit), for a PyTorch and for a Triton solution (whose worker's Landlock step
lists the programs it may run). Stand-ins for torch (no tensors) and triton let the host
script run on CI. The Triton worker's C compiler is a shell script that execs a program
beside it (as a packaged gcc can be); the stand-in triton runs it after the Landlock step,
as Triton runs $CC to build its launcher, and the worker dies if it is refused.

Usage: python_worker_smoke.py BUILD_DIR
"""

import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import json

STUB = '''
class _T:
    device = "cuda:0"
    T = property(lambda self: self)
    def __matmul__(self, o): return self
    def __add__(self, o): return self
    def sum(self): return self
    def item(self): return 0.0
def ones(*a, **k): return _T()
def tensor(*a, **k): return _T()
def set_num_threads(n): pass
def set_num_interop_threads(n): pass
class cuda:
    @staticmethod
    def set_device(d): pass
    @staticmethod
    def synchronize(): pass
'''


def read_message(sock):
    header = b""
    while len(header) < 4:
        chunk = sock.recv(4 - len(header))
        if not chunk:
            return None
        header += chunk
    (length,) = struct.unpack("<I", header)
    body = b""
    while len(body) < length:
        chunk = sock.recv(length - len(body))
        if not chunk:
            return None
        body += chunk
    return json.loads(body)


def send_message(sock, msg):
    body = json.dumps(msg).encode()
    sock.sendall(struct.pack("<I", len(body)) + body)


# The stand-in triton runs $CC, as Triton does at its first compile; a refusal ends the worker.
TRITON_STUB = '''
import os, subprocess
if os.environ.get("CC"):
    subprocess.run([os.environ["CC"], "--version"], check=True, stdout=subprocess.DEVNULL)
'''


def wrapped_compiler(work):
    """A C compiler that is a shell script exec'ing a program in its own folder."""
    folder = os.path.join(work, "cc")
    os.makedirs(folder)
    real = os.path.join(folder, "cc-real")
    shutil.copy("/bin/true", real)
    cc = os.path.join(folder, "cc")
    with open(cc, "w") as f:
        f.write("#!/bin/sh\nexec %s \"$@\"\n" % real)
    os.chmod(cc, 0o755)
    return cc


def main(build):
    # A PyTorch solution's worker may run no program; a Triton one's Triton's compilers.
    return start(build, "pytorch") or start(build, "triton")


def start(build, language):
    work = tempfile.mkdtemp(prefix="fp4arena-pyworker-smoke-")
    for module, text in (("torch", STUB), ("triton", TRITON_STUB)):
        os.makedirs(os.path.join(work, "stubs", module))
        with open(os.path.join(work, "stubs", module, "__init__.py"), "w") as f:
            f.write(text)
    private = os.path.join(work, "private")
    os.makedirs(private)
    solution = os.path.join(work, "solution.py")
    with open(solution, "w") as f:
        f.write("def solve(*args):\n    pass\n")
    judge_end, worker_end = socket.socketpair()
    shm = os.memfd_create("fp4arena-smoke")
    os.ftruncate(shm, 4096)

    def child_fds():
        os.dup2(worker_end.fileno(), 3)
        os.dup2(shm, 4)

    env = dict(os.environ, PYTHONPATH=os.path.join(work, "stubs"))
    env.pop("CC", None)
    if language == "triton":
        env["CC"] = wrapped_compiler(work)
    argv = [sys.executable, "-B", os.path.join(build, "fp4arena_python_worker.py"),
            os.path.join(build, "libfp4arena_pyworker.so"), "--so", solution, "--shm-bytes",
            "4096", "--device", "0", "--tmp", private, "--language", language]
    proc = subprocess.Popen(argv, preexec_fn=child_fds, env=env, pass_fds=(3, 4),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    worker_end.close()
    judge_end.settimeout(120)
    msg = read_message(judge_end)
    if msg is not None and msg.get("op") == "hello":
        send_message(judge_end, {"op": "quit"})
    out = proc.communicate(timeout=120)[0].decode(errors="replace")
    print(language, "worker's first word:", msg)
    print("worker output:", out)
    print("exit:", proc.returncode)
    if msg is None:
        print("FAIL: the worker said nothing")
        return 1
    if msg.get("op") == "fatal":
        if "CUDA device" not in msg.get("error", "") or proc.returncode != 2:
            print("FAIL: a fatal word, but not the missing CUDA device")
            return 1
        return 0
    sandbox = msg.get("sandbox", "")
    lists_programs = "programs run only from" in sandbox or "landlock ABI" not in sandbox
    if msg.get("op") == "hello" and proc.returncode == 0 and "landlock" in sandbox and (
            language != "triton" or lists_programs):
        return 0
    print("FAIL: unexpected")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
