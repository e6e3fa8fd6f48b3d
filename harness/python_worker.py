"""fp4arena's Python worker: hosts libfp4arena_pyworker.so, the CUDA worker's protocol, clock
and sandbox, and makes its loads and calls in Python.

Started by run_challenge only, as
    python3 -I -B fp4arena_python_worker.py LIB --so SOLUTION.py --shm-bytes N --device D
        [--tmp DIR] [--language pytorch|triton]
For a Triton solution the worker may run the programs Triton compiles with (ptxas, the C
compiler: _triton_programs()) and no other; a PyTorch solution's may run none.
with the judge's channel on fd 3 and its shared memory on fd 4. Order matters:
1. the library's fp4arena_py_begin() while this process has one thread (Landlock: file
   changes only under DIR);
2. torch (and triton) imported, their caches pointed into DIR; torch does not touch CUDA yet;
3. fp4arena_py_serve(): CUDA set-up, the seccomp filter, then the judge's requests. At the
   judge's "load", inside the sandbox, torch joins the worker's CUDA context and warms up,
   then the solution's module is imported.
Every buffer reaches solve() as a torch tensor over the worker's own device memory (no copy),
with the spec's shape; scalars and dims as Python numbers. Whatever solve() raises ends the
worker with its traceback on stderr: the judge reports an early exit.
"""

import ctypes
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import traceback

# The spec's dtypes as (typestr for __cuda_array_interface__, torch dtype name to view as).
# Packed E2M1 and the FP8 scales arrive as uint8 (docs/python.md).
_DTYPES = {
    "uint8": ("|u1", None),
    "e2m1x2": ("|u1", None),
    "fp8_e4m3": ("|u1", None),
    "fp8_e8m0": ("|u1", None),
    "int32": ("<i4", None),
    "fp16": ("<f2", None),
    "bf16": ("<u2", "bfloat16"),
    "fp32": ("<f4", None),
}


class _DeviceBuffer:
    """A buffer of the worker's device memory, described for torch.as_tensor."""

    def __init__(self, ptr, shape, typestr):
        self.__cuda_array_interface__ = {
            "shape": tuple(shape),
            "typestr": typestr,
            "data": (ptr, False),
            "version": 2,
        }


# Folders never allowed whole: a wrapper script that lives in one is allowed alone.
_SYSTEM_BIN = {"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"}


def _interpreter(path):
    """The program a script's #! line runs (and, for "#!/usr/bin/env NAME", NAME), or []."""
    try:
        with open(path, "rb") as f:
            head = f.read(256)
    except OSError:
        return []
    if not head.startswith(b"#!"):
        return []
    words = head[2:].split(b"\n")[0].decode(errors="replace").split()
    if not words:
        return []
    found = [words[0]]
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        found.append(shutil.which(words[1]) or words[1])
    return found


def _compiler_folders(cc):
    """The folders the C compiler runs its own programs from (cc1, as, collect2, ld), as it
    reports them; a wrapper's -B folders are among them."""
    try:
        out = subprocess.run([cc, "-print-search-dirs"], capture_output=True, text=True,
                             timeout=30, stdin=subprocess.DEVNULL).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    for line in out.splitlines():
        if line.startswith("programs: ="):
            return [d for d in line[len("programs: ="):].split(":") if d]
    return []


def _triton_programs():
    """What Triton runs when it compiles a kernel: ptxas (its own, or $TRITON_PTXAS_PATH) and
    the C compiler that builds its launcher ($CC, else gcc or clang), with the programs the
    compiler runs and the ELF interpreter, as real paths: the only programs the sandbox lets
    this worker run. A compiler that is a script (such as "#!/bin/sh exec gcc-real -B...")
    brings its interpreter and its own folder."""
    paths = []
    spec = importlib.util.find_spec("triton")
    if spec is not None and spec.submodule_search_locations:
        root = list(spec.submodule_search_locations)[0]
        paths.append(os.environ.get("TRITON_PTXAS_PATH") or
                     os.path.join(root, "backends", "nvidia", "bin", "ptxas"))
    cc = os.environ.get("CC") or shutil.which("gcc") or shutil.which("clang")
    programs = [p for p in (cc, shutil.which("as"), shutil.which("ld")) if p]
    for program in programs:
        paths.append(program)
        script = _interpreter(program)
        paths += script
        folder = os.path.dirname(os.path.realpath(program))
        if script and folder not in _SYSTEM_BIN:
            paths.append(folder)
    if cc:
        paths += [d for d in _compiler_folders(cc)
                  if os.path.realpath(d).rstrip("/") not in _SYSTEM_BIN]
    paths += ["/usr/lib/gcc", "/usr/libexec/gcc", "/lib64/ld-linux-x86-64.so.2",
              "/lib/ld-linux-aarch64.so.1"]
    return sorted({os.path.realpath(p) for p in paths if p and os.path.exists(p)})


def _libcuda_dir():
    """The folder of the libcuda this process loaded (Triton looks for it with ldconfig, a
    program the sandbox does not run, unless $TRITON_LIBCUDA_PATH names it)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1]
            if os.path.basename(path).startswith("libcuda.so"):
                return os.path.dirname(path)
    return None


def _die(what):
    traceback.print_exc()
    sys.stderr.write("fp4arena python worker: %s\n" % what)
    sys.stderr.flush()
    os._exit(1)


def _options(argv):
    opts = {}
    for i in range(0, len(argv) - 1, 2):
        opts[argv[i]] = argv[i + 1]
    return opts


class _Host:
    def __init__(self, torch, device):
        self.torch = torch
        self.device = device
        self.solve = None
        self.calls = {}  # set index -> the argument list solve() gets

    def load(self, path):
        try:
            # torch joins the CUDA context the worker made (as a CUDA solution's runtime does)
            # and starts its own threads here, before the judge counts threads around solve().
            self.torch.cuda.set_device(self.device)
            _warm_up(self.torch, self.device)
            libcuda = _libcuda_dir()
            if libcuda and "TRITON_LIBCUDA_PATH" not in os.environ:
                os.environ["TRITON_LIBCUDA_PATH"] = libcuda
            spec = importlib.util.spec_from_file_location("fp4arena_solution", path.decode())
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            self.solve = getattr(module, "solve")
            return 0
        except BaseException:  # noqa: BLE001 - the solution's failure, reported as such
            traceback.print_exc()
            sys.stderr.flush()
            return 1

    def tensor(self, arg):
        typestr, view = _DTYPES[arg["dtype"]]
        shape = [int(x) for x in arg["shape"]]
        t = self.torch.as_tensor(_DeviceBuffer(int(arg["ptr"]), shape, typestr),
                                 device="cuda:%d" % self.device)
        return t.view(getattr(self.torch, view)) if view else t

    def prepare(self, set_index, args_json):
        try:
            values = []
            for arg in json.loads(args_json.decode()):
                if "ptr" in arg:
                    values.append(self.tensor(arg))
                elif "int" in arg:
                    values.append(int(arg["int"]))
                else:
                    values.append(float(arg["float"]))
            self.calls[set_index] = values
            return 0
        except BaseException:  # noqa: BLE001
            traceback.print_exc()
            sys.stderr.flush()
            return 1

    def call(self, set_index):
        try:
            self.solve(*self.calls[set_index])
        except BaseException:  # noqa: BLE001 - a raise in solve() ends the worker
            _die("solve() raised")


def _warm_up(torch, device):
    """torch's own threads and lazy set-up, started before the judge counts threads around
    solve() (a thread still running after solve() returns is its verdict): one CPU thread for
    torch's operators, a GPU matmul, a copy from the host."""
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:  # only before torch's first parallel work; then it keeps its pool
        pass
    x = torch.ones((64, 64), device="cuda:%d" % device)
    y = (x @ x.T).sum() + torch.tensor([1.0], device=x.device)
    y.item()
    torch.cuda.synchronize()


def main(argv):
    if len(argv) < 2:
        sys.stderr.write("fp4arena's Python worker is started by run_challenge, not by hand\n")
        return 2
    lib_path, rest = argv[1], argv[2:]
    opts = _options(rest)
    if opts.get("--language") == "triton":
        for program in _triton_programs():
            rest += ["--exec", program]
    lib = ctypes.CDLL(lib_path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    c_argv = (ctypes.c_char_p * (len(rest) + 1))(b"fp4arena_python_worker",
                                                 *[a.encode() for a in rest])
    if lib.fp4arena_py_begin(len(rest) + 1, c_argv) != 0:
        return 2
    private = opts.get("--tmp")
    if private:  # every cache of the libraries inside the private folder
        for var, sub in (("TRITON_CACHE_DIR", "triton"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"),
                         ("XDG_CACHE_HOME", "cache"), ("HOME", "home")):
            os.environ[var] = os.path.join(private, sub)
    import torch  # noqa: E402 - after Landlock, before seccomp
    if opts.get("--language") == "triton":
        import triton  # noqa: F401,E402
    host = _Host(torch, int(opts.get("--device", "0")))
    load_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_char_p)
    prepare_t = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.c_char_p)
    call_t = ctypes.CFUNCTYPE(None, ctypes.c_int)
    callbacks = (load_t(host.load), prepare_t(host.prepare), call_t(host.call))
    lib.fp4arena_py_serve.argtypes = [load_t, prepare_t, call_t]
    return lib.fp4arena_py_serve(*callbacks)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
