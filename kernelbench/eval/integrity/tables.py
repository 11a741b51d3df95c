"""Which names the lint treats as evidence of which exploit class, and how sure it is.

Severity is calibrated against honest Triton/CUDA solutions: a name only a grader-gamer needs is an error; a name
honest code also uses now and then is a warning (reported, not disqualifying); the runtime guards catch the rest.
"""

from __future__ import annotations

import re

# dotted name -> (class, severity, why). Exact match on the resolved name of a call or reference.
SENSITIVE: dict[str, tuple[int, str, str]] = {}


def _add(klass: int, severity: str, why: str, *names: str) -> None:
    for name in names:
        SENSITIVE[name] = (klass, severity, why)


_add(8, "error", "inspects the call stack (acts differently depending on who calls it)",
     "sys._getframe", "sys._current_frames", "inspect.currentframe", "inspect.stack", "inspect.getouterframes",
     "inspect.trace", "inspect.getinnerframes", "traceback.extract_stack", "traceback.format_stack",
     "traceback.walk_stack", "traceback.print_stack")
_add(8, "error", "walks the interpreter's live objects (can find the grader's expected outputs)",
     "gc.get_objects", "gc.get_referrers", "gc.get_referents")
_add(8, "error", "installs a tracer or profiler hook (observes the grader)",
     "sys.settrace", "sys.setprofile", "threading.settrace", "threading.setprofile", "sys.addaudithook",
     "sys.monitoring.register_callback", "sys.monitoring.use_tool_id")
_add(8, "error", "detects whether the profiler is recording (launch audit)",
     "torch.autograd.profiler._is_profiler_enabled", "torch._C._autograd._profiler_enabled",
     "torch.profiler._utils", "torch._C._profiler")
_add(8, "warning", "reads its caller's context", "inspect.getsource", "inspect.getmodule", "sys.argv",
     "os.getppid", "torch.cuda.is_current_stream_capturing", "torch.is_grad_enabled",
     "torch.is_inference_mode_enabled", "sys.orig_argv", "builtins.globals", "builtins.vars")
_add(12, "error", "ends the process itself (the grader's verdict must come from the grader)",
     "sys.exit", "builtins.exit", "builtins.quit", "os._exit", "os.abort", "os.kill", "os.killpg",
     "signal.signal", "signal.alarm", "signal.setitimer", "atexit.register", "faulthandler.enable")
# names whose effect the sandbox confines (files in the grading's writable folders, processes under its uid and
# limits): the grading observes what they do, so the lint reports them as leads
CONFINED: set[str] = set()


def _confined(klass: int, why: str, *names: str) -> None:
    _add(klass, "error", why, *names)
    CONFINED.update(names)


_confined(12, "deletes, moves or changes permissions of files",
     "os.remove", "os.unlink", "os.rmdir", "os.removedirs", "os.rename", "os.renames", "os.replace", "os.chmod",
     "os.truncate", "os.link", "os.symlink", "os.chown", "shutil.rmtree", "shutil.move", "shutil.copy",
     "shutil.copy2", "shutil.copyfile", "shutil.copytree", "shutil.chown", "os.utime")
_confined(12, "starts processes (inside the grading's sandbox, under its limits)",
     "os.system", "os.popen", "os.fork", "os.forkpty", "os.execv", "os.execve", "os.execvp", "os.execvpe",
     "os.execl", "os.execle", "os.execlp", "os.execlpe", "os.spawnv", "os.spawnl", "os.posix_spawn",
     "os.posix_spawnp", "os.setsid", "os.setpgrp", "pty.spawn", "pty.fork",
     "subprocess.run", "subprocess.Popen", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
     "subprocess.getoutput", "subprocess.getstatusoutput", "multiprocessing.Process", "multiprocessing.Pool",
     "concurrent.futures.ProcessPoolExecutor", "multiprocessing.get_context", "os.setpgid", "os.forkpty",
     "torch.multiprocessing.Process", "torch.multiprocessing.Pool", "torch.multiprocessing.spawn",
     "torch.multiprocessing.start_processes", "torch.multiprocessing.get_context", "multiprocessing.pool.Pool",
     "os.register_at_fork")
_add(12, "error", "redirects the process's standard streams (forges or hides the grader's output)",
     "os.dup2", "os.close", "os.closerange", "contextlib.redirect_stdout", "contextlib.redirect_stderr")
_add(9, "error", "runs work on another thread, outside the timed call",
     "threading.Thread", "threading.Timer", "_thread.start_new_thread", "_thread.start_new",
     "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.thread.ThreadPoolExecutor",
     "multiprocessing.pool.ThreadPool", "multiprocessing.dummy.Pool", "multiprocessing.dummy.Process",
     "torch.jit.fork", "torch.jit._fork", "asyncio.run",
     "asyncio.get_event_loop", "asyncio.new_event_loop")
_add(9, "warning", "uses a side stream (the grader synchronises the whole device, but say so)",
     "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.set_stream", "torch.cuda.ExternalStream",
     "torch.Stream", "torch.cuda.streams.Stream", "torch.cuda.StreamContext")
_add(14, "error", "switches on reduced precision globally or through autocast",
     "torch.autocast", "torch.cuda.amp.autocast", "torch.amp.autocast", "torch.cpu.amp.autocast",
     "torch.set_default_dtype", "torch.set_autocast_enabled", "torch.set_autocast_gpu_dtype",
     "torch.set_autocast_dtype", "torch.amp.autocast_mode.autocast")
_add(14, "warning", "changes floating-point mode globally", "torch.set_flush_denormal",
     "torch.set_default_tensor_type")
_add(6, "error", "loads stored tensors or pickled data (answers replayed from disk)",
     "torch.load", "numpy.load", "numpy.fromfile", "pickle.load", "pickle.loads", "marshal.loads",
     "marshal.load", "dill.load", "dill.loads", "joblib.load", "safetensors.torch.load_file",
     "safetensors.safe_open", "torch.jit.load", "shelve.open", "torch.from_file")
_add(6, "error", "reads the grader's random state (recognises the seed)",
     "torch.initial_seed", "torch.random.initial_seed", "torch.get_rng_state", "torch.random.get_rng_state",
     "torch.cuda.get_rng_state", "torch.cuda.initial_seed", "torch.cuda.get_rng_state_all",
     "torch.default_generator", "torch.cuda.default_generators", "numpy.random.get_state", "random.getstate")
_add(6, "warning", "re-seeds a global generator", "torch.manual_seed", "torch.cuda.manual_seed",
     "torch.cuda.manual_seed_all", "torch.random.manual_seed", "numpy.random.seed", "random.seed",
     "torch.random.set_rng_state", "torch.set_rng_state", "torch.cuda.set_rng_state")
_add(6, "warning", "decodes an embedded blob", "base64.b64decode", "base64.b85decode", "base64.a85decode",
     "zlib.decompress", "lzma.decompress", "bz2.decompress", "gzip.decompress", "codecs.decode")
_add(10, "error", "builds a Tensor subclass or wrapper (work that happens after the call)",
     "torch.Tensor._make_subclass", "torch.Tensor._make_wrapper_subclass", "torch._C._disabled_torch_function_impl",
     "torch.utils._python_dispatch.TorchDispatchMode", "torch.overrides.TorchFunctionMode",
     "torch.utils._python_dispatch._push_mode", "torch._C._set_torch_function_mode")
_add(2, "error", "replaces or reconfigures the CUDA allocator (defeats allocator poisoning)",
     "torch.cuda.memory.change_current_allocator", "torch.cuda.memory.CUDAPluggableAllocator",
     "torch.cuda.change_current_allocator", "torch.cuda.CUDAPluggableAllocator",
     "torch.cuda.memory._set_allocator_settings", "torch.cuda.caching_allocator_alloc",
     "torch._C._cuda_cudaCachingAllocator_raw_alloc", "torch.cuda.memory.caching_allocator_alloc")
_add(11, "error", "patches modules or functions of the process",
     "unittest.mock.patch", "unittest.mock.patch.object", "mock.patch", "importlib.reload",
     "builtins.object.__setattr__", "builtins.type.__setattr__", "builtins.object.__delattr__",
     "builtins.type.__delattr__")
_add(13, "error", "sets an L2 access-policy / persisting-cache window (operands survive the L2 flush)",
     "torch.cuda.set_per_process_l2_persisting", "cuda.cudart.cudaStreamSetAttribute",
     "cuda.bindings.runtime.cudaStreamSetAttribute", "cuda.cudart.cudaCtxResetPersistingL2Cache")
_add(1, "error", "executes code the lint cannot read", "builtins.eval", "builtins.exec", "builtins.compile",
     "types.FunctionType", "types.CodeType", "builtins.breakpoint")

# Attributes of frames and tracebacks: only code that walks the stack touches these.
FRAME_ATTRIBUTES = {"f_back", "f_locals", "f_globals", "f_code", "f_lineno", "tb_frame", "gi_frame",
                    "cr_frame", "f_builtins", "ag_frame", "tb_next"}
# the same names inside a string (a getattr with a name taken apart from a neutral string); f_code and f_lineno
# are left out there, being common words in honest strings
FRAME_NAME_RE = re.compile(r"(?<![A-Za-z0-9])(f_back|f_locals|f_globals|tb_frame|gi_frame|cr_frame|ag_frame|"
                           r"f_builtins|tb_next|__traceback__)(?![A-Za-z0-9])")

# Attributes that reach objects the solution was never handed: every class of a hierarchy (the grader's
# reference Model is one of torch.nn.Module's subclasses once loaded) or another module's globals.
REACH_ATTRIBUTES = {"__subclasses__": "lists every subclass loaded in the process (finds the grader's reference "
                                      "Model without naming it)",
                    "__globals__": "reads another function's module globals (reaches the grader's modules)"}

# torch's profiler: the launch audit records every checked call under it, so code that asks whether it records
# (by any of torch's several spellings) can behave only while audited. Annotating ranges stays allowed.
PROFILER_NAME_RE = re.compile(r"profil|kineto", re.IGNORECASE)
PROFILER_ALLOWED_LEAVES = {"record_function", "RecordScope", "nvtx"}

# Files a grading run writes beside the candidate (inputs, checked outputs, stage markers, signed results):
# naming them is reading stored answers or telling the timed stage from the checked one.
GRADING_ARTEFACT_RE = re.compile(r"\.kbt\b|\bcheck\.done\b|\.done$|worker_result|\b(?:in|out|end|expected)_s\d+_")

# Modules whose mere import is worth a note.
IMPORT_NOTES: dict[str, tuple[int, str, str]] = {
    "inspect": (8, "warning", "imports inspect (stack introspection is only a warning on its own)"),
    "unittest.mock": (11, "error", "imports a monkeypatching library"),
    "mock": (11, "error", "imports a monkeypatching library"),
    "psutil": (8, "warning", "imports psutil (process introspection)"),
    "kernelbench": (8, "error", "imports the grader's own package"),
    "__main__": (8, "error", "imports the grader's __main__ module"),
    "check": (8, "error", "imports the workspace's check.py"),
    "benchmark": (8, "error", "imports the workspace's benchmark.py"),
    "pytest": (8, "error", "imports the test runner"),
    "ctypes": (16, "info", "imports ctypes (native calls escape the lint; runtime guards still apply)"),
}

# Environment variables that steer the grader's own machinery.
TAMPER_ENV: dict[str, tuple[int, str]] = {
    "TRITON_CACHE_DIR": (11, "moves compiled kernels out of the grader's build directory (hides them from the SASS check)"),
    "TORCH_EXTENSIONS_DIR": (11, "moves compiled extensions out of the grader's build directory"),
    "CUDA_CACHE_PATH": (11, "moves the driver's JIT cache"),
    "CUDA_CACHE_DISABLE": (11, "changes the driver's JIT cache"),
    "NVIDIA_TF32_OVERRIDE": (14, "forces TF32 math in libraries"),
    "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": (14, "forces TF32 in cuBLAS"),
    "PYTORCH_CUDA_ALLOC_CONF": (2, "reconfigures the CUDA caching allocator (allocator poisoning)"),
    "PYTORCH_NO_CUDA_MEMORY_CACHING": (2, "reconfigures the CUDA caching allocator (allocator poisoning)"),
    "CUDA_LAUNCH_BLOCKING": (9, "changes launch ordering the timing relies on"),
    "CUDA_VISIBLE_DEVICES": (11, "changes which GPU the grader sees"),
    "LD_PRELOAD": (11, "injects a shared library into processes"),
    "PYTHONPATH": (11, "changes what the grader imports"),
    "TORCHINDUCTOR_CACHE_DIR": (11, "moves compiled kernels out of the grader's build directory"),
}
# build caches: the grader reads the machine code of whatever the solution built in any folder it may write
BUILD_CACHE_ENV = {"TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR", "CUDA_CACHE_PATH",
                   "CUDA_CACHE_DISABLE"}
GRADER_MODULE_RE = re.compile(r"kernelbench|_kb_|__main__|\bcheck\b|\bbenchmark\b|pytest|worker|grade", re.IGNORECASE)
GRADER_ENV_RE = re.compile(r"KERNELBENCH|GRAD(E|ER|ING)|CHECK|BENCH|SEED|PYTEST|_TIMED|WARMUP", re.IGNORECASE)

# Text that names CUDA's persisting-L2 machinery, in Python strings or C++ sources.
L2_PERSIST_RE = re.compile(r"accessPolicyWindow|AccessPolicyWindow|cudaLimitPersistingL2CacheSize|"
                           r"persistingL2CacheMaxSize|cudaAccessPropertyPersisting|CU_ACCESS_PROPERTY_PERSISTING|"
                           r"CU_LIMIT_PERSISTING_L2_CACHE_SIZE|hitProp\b|missProp\b|"
                           r"CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW|cudaLaunchAttributeAccessPolicyWindow")

# An access-policy window is class 13 when it can keep lines resident: a persisting property or set-aside named, or
# no property named that shows otherwise. A window whose every named property is streaming or normal (evict-first
# hints over a weight stream) keeps nothing through the flush: a lead, not a verdict (the grader also resets
# persisting lines before every timed call).
L2_PERSISTING_RE = re.compile(r"cudaAccessPropertyPersisting|CU_ACCESS_PROPERTY_PERSISTING|cudaLimitPersistingL2CacheSize|"
                              r"CU_LIMIT_PERSISTING_L2_CACHE_SIZE|persistingL2CacheMaxSize|set_per_process_l2_persisting")
L2_NOT_PERSISTING_RE = re.compile(r"cudaAccessPropertyStreaming|cudaAccessPropertyNormal|CU_ACCESS_PROPERTY_STREAMING|"
                                  r"CU_ACCESS_PROPERTY_NORMAL")


def l2_window_is_streaming(text: str) -> bool:
    """The code names only streaming or normal access properties for its windows, and nothing persisting."""
    return bool(L2_NOT_PERSISTING_RE.search(text)) and not L2_PERSISTING_RE.search(text)


# Files of the grading template a solution has no business naming.
TEMPLATE_FILES_RE = re.compile(r"(?:^|[/\\])(check\.py|benchmark\.py|problem\.yaml|reference\.py|sota\.py|"
                               r"grade\.json|result\.json|check\.log|benchmark\.log)\b")

# Method names that write or delete files whatever object they are called on (pathlib and friends).
WRITE_METHODS = {"write_text", "write_bytes", "unlink", "rmdir", "chmod", "touch", "symlink_to", "hardlink_to",
                 "lchmod"}

# Printed text that imitates a grader's verdict.
VERDICT_TEXT_RE = re.compile(r"\bPASS(ED)?\b|all checks passed|\bcorrect\b.*\btrue\b|peak_fraction", re.IGNORECASE)
