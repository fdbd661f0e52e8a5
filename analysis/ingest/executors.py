"""Where the ingest's batches run: in this process, in a pool of processes, or as Dask tasks.

One shape for all three (:func:`ordered`): ``fn`` applied to each work item, results handed back in work
order as they come (the caller merges a batch's parts while the workers read the next ones), and a worker
that dies stops the run at once with :class:`WorkerDied`, naming the files not read.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from . import _native


class WorkerDied(RuntimeError):
    """A worker process of the ingest died (killed by a signal, the OOM killer, a crash in C code): the
    ingest stops at once, naming the files not read; no table is written."""


def die_with_parent() -> None:
    """In a pool worker (the pools' initialiser): SIGTERM ends it whatever handler the parent had
    (a forked worker inherits Python's handlers — a harness or notebook may catch SIGTERM — and a broken
    pool ends its other workers with SIGTERM); and, on Linux, the kernel SIGKILLs it when the process that
    started it dies (``prctl(PR_SET_PDEATHSIG)``), so killing an ingest never leaves its workers running."""
    import ctypes
    import signal
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before prctl took effect: already orphaned
        os._exit(1)


def start_method() -> str | None:
    """fork is fastest (nothing to re-import), but forking a process with other threads running (a Dask
    client, a kernel) can copy a held lock into the child: start clean workers (forkserver) then."""
    import multiprocessing as mp
    import threading
    methods = mp.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return "fork"
    return "forkserver" if "forkserver" in methods else None


def worker_died(root: Any, error: BaseException, left: list[str], total: int) -> WorkerDied:
    """The error that ends an ingest whose worker died: ``left`` the files (relative paths) not read."""
    return WorkerDied(f"{root}: an ingest worker process died ({error}); {len(left)} of {total} files not read, "
                      f"first {', '.join(left[:3])}{' …' if len(left) > 3 else ''}; no table written "
                      "(rerun, with --jobs 1 to find a file that kills its reader)")


class Processes:
    """``jobs`` worker processes (``start_method()``: fork when this process has no other thread), each
    started with ``initializer(*initargs)`` after :func:`die_with_parent`; ``jobs=1``: this process."""

    def __init__(self, jobs: int, initializer: Callable[..., None] | None = None, initargs: tuple = ()):
        self.jobs, self.workers = jobs, jobs
        self.initializer, self.initargs = initializer, initargs

    def ordered(self, fn: Callable[..., Any], work: Sequence[tuple],
                files_of: Callable[[tuple], list[str]], root: Any, total: int) -> Iterator[Any]:
        """``fn(*w)`` for each tuple ``w`` of ``work``, yielded in work order.  ``files_of(w)``: the files
        of a work item, to name those not read when a worker dies (``root``, ``total``: for the message)."""
        if self.jobs == 1 or not work:
            for w in work:
                yield fn(*w)
            return
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor
        from concurrent.futures.process import BrokenProcessPool
        _native.prepare()  # built or given up once, here: forked workers inherit it
        done = 0
        with ProcessPoolExecutor(self.jobs, mp_context=mp.get_context(start_method()), initializer=init_worker,
                                 initargs=(self.initializer, self.initargs)) as pool:
            try:
                for r in pool.map(fn, *zip(*work)):
                    done += 1
                    yield r
            except BaseException as e:
                # the caller's error (a merge: disk full, read-only) must not wait for the batches not yet
                # started, which leaving the `with` would; the running ones (one per worker) finish first,
                # so that none writes into a staging folder once it is removed
                pool.shutdown(wait=True, cancel_futures=True)
                if not isinstance(e, BrokenProcessPool):
                    raise
                raise worker_died(root, e, [f for w in work[done:] for f in files_of(w)], total) from None


def init_worker(initializer: Callable[..., None] | None, initargs: tuple) -> None:
    """What every pool worker runs first (:class:`Processes`): :func:`die_with_parent`, then ``initializer``."""
    die_with_parent()
    if initializer is not None:
        initializer(*initargs)


class DaskTasks:
    """Dask tasks on ``client``, else on a cluster at ``address``, else on a ``LocalCluster`` of
    ``workers`` processes (default: one per core), one thread each; a cluster it started is closed by
    :meth:`close`.  The workers must import this package and see the same paths (a shared filesystem)."""

    def __init__(self, client=None, address: str | None = None, workers: int | None = None):
        self.own = client is None
        self.cluster = None
        self.client = client
        if self.own:
            self.client, self.cluster = _dask_client(address, workers)
        self.workers = len(self.client.scheduler_info().get("workers", {}))

    def ordered(self, fn: Callable[..., Any], work: Sequence[tuple], files_of=None, root=None,
                total: int = 0) -> Iterator[Any]:
        """``fn(*w)`` for each tuple ``w`` of ``work``, all submitted at once, yielded in work order (a
        task's error is raised as it comes; ``files_of``, ``root``, ``total``: as :meth:`Processes.ordered`'s)."""
        futures = [self.client.submit(fn, *w, key=f"ingest-batch-{i}-{os.getpid()}", pure=False)
                   for i, w in enumerate(work)]
        for f in futures:
            yield f.result()

    def close(self) -> None:
        if self.own and self.client is not None:
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()


def _dask_client(address: str | None, workers: int | None):
    from distributed import Client, LocalCluster
    if address:
        return Client(address), None
    # the workers' statistical profiler samples every thread's frames every 10 ms: CPU we would rather
    # parse with, and a held frame keeps a memory map's buffer exported (BufferError on close)
    import dask
    with dask.config.set({"distributed.worker.profile.enabled": False}):  # the nannies pass it to the workers
        cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1, processes=True,
                               dashboard_address=":0", silence_logs=40)  # any free port: no clash
    return Client(cluster), cluster


@contextmanager
def dask_tasks(client=None, address: str | None = None, workers: int | None = None) -> Iterator[DaskTasks]:
    """A :class:`DaskTasks` for the ``with`` block, its own cluster closed at the end."""
    ex = DaskTasks(client, address, workers)
    try:
        yield ex
    finally:
        ex.close()
