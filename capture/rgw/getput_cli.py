"""getput's command line on :mod:`capture.rgw.loadgen`: what CBT's ``getput`` benchmark runs as its ``cmd_path``
(``capture/rgw/getput-shim`` execs this under Debian's ``/usr/bin/python3``, where boto3 is).

getput (Mark Seger, commit 8df6328, ``../shared/tools/getput``) is Python 2 and does not run here; CBT 9d6480f
(``benchmark/getput.py``, ``mkgetputcmd``) runs it on each client as::

    <cmd_path> -c<container_prefix>[-gwN] -o<object_prefix>-`hostname -f`-gwN -s<op_size> -t<test>
        --procs <procs> [-n<ops_per_proc>] [--runtime <s>] [--ctype <ctype>] [--debug <d>] [--logops <l>]
        [--grace <g>] --cred <run_dir>/gwNN.cred > <run_dir>/output.gwN

This program takes every option getput 8df6328 defines (``main``'s OptionParser; unique abbreviations as
optparse allows, so CBT's ``--cred`` is getput's ``--creds``) and either maps it onto the load generator or
stops with exit 2 and a message naming the option — never ignores one:

* mapped: ``-c`` → ``--cname``; ``-o`` → ``--oname`` with getput's names (``--rank``, ``'0'`` unless given:
  buckets ``<cname>-<rank>-<proc>`` for ``byproc``, ``<cname>-<rank>`` for ``bynode``, keys
  ``<oname>-<rank>-<proc>-<n>``, n from 1, the ``Rank`` column on every line); ``-s`` (one size, bytes or
  k/m/g) → ``--osize``; ``-t p`` → ``--tests p``; ``--procs`` (one count); ``--runtime`` (required: no ``-n``);
  ``--ctype`` (getput's default ``byproc``); ``--errmax`` (getput's default 5); ``--psum``; ``--rank``;
  ``--echo`` and ``--printheader`` as getput prints them; ``-d 0``, ``--logops 0`` and empty or zero
  defaults of the others (``-p``, ``--objopts``, ``--objoffset``, ``--objseed``, …) are getput's defaults;
  ``--cont-nodelete`` and ``--quiet`` change nothing when no delete test runs and no API error is printed;
* refused: ``-n`` (the generator runs for a time, not a count), ``-t`` other than ``p`` (getput's GET reads
  each object the PUT wrote once within twice the runtime; the generator's GET is time-bound round robin:
  another test, so not given getput's name), several sizes or process counts, ``--ldist``, ``--putsperproc``,
  ``--nohead``, ``--utc``, ``--sync``, ``--repeat``, ``--retries`` other than 0, ``--latexc``/``--exclog``,
  ``--range``, Swift-only switches (``-p``, ``--headers``, ``--extra``, ``--preauthtoken``, ``--proxies``, ``--insecure``, ``--scheme``),
  ``--s3`` (getput's S3 mode talks HTTPS to RGW_HOST:RGW_PORT; CBT never passes it), non-zero ``-d``/``--logops``,
  and ``--grace``, which CBT passes when its YAML sets ``grace`` but getput 8df6328 has no such option (getput
  itself stops: "invalid command").

Credentials, as getput's ``parse_creds``: ``ST_AUTH``/``ST_USER``/``ST_KEY`` (or ``OS_*``) from the environment,
the ``--creds`` file's ``ST_…=`` lines overriding them (CBT writes ``export ST_AUTH=…`` lines through ``echo -e``,
which Debian's ``sh`` prints as ``-e export ST_AUTH=…``: getput's regex search finds them all the same).  getput
speaks Swift with them; the generator speaks S3, so the same radosgw identity is used through S3, mapped so:

* the Swift credentials are checked first against ``ST_AUTH`` (Swift auth v1: ``GET`` with ``X-Auth-User`` /
  ``X-Auth-Key``; radosgw answers 204 with ``X-Storage-Url``): a refused user or key stops here, named;
* S3 endpoint = ``ST_AUTH``'s scheme, host and port (radosgw serves Swift under ``/auth``, ``/swift`` and S3
  at ``/`` on one frontend); ``ST_AUTH`` must be a radosgw Swift auth URL (path ``/auth…``);
* S3 access key = ``ST_USER`` (the Swift subuser, e.g. ``cbt:swift``), secret = ``ST_KEY``: the gateway must hold
  an S3 key for that subuser with exactly these values.  CBT makes only the Swift key (and under
  ``use_existing`` not even that: its ``add_swift_user`` needs the cluster's ``auth_urls``, which only its own
  ``start_rgw`` fills); :mod:`capture.rgw.cbt` makes the user, subuser, Swift key and this S3 key.  ``OS_*``
  (Keystone) credentials are refused.

Behaviour getput has by default that the generator does not: getput's Swift client retries a failed call
(``--retries`` 5) and prints the retries in ``Ret``; the generator never retries (``Ret`` 0).  With
``CEPHQOS_GETPUT_LOG`` set, each invocation appends a JSON line there (getput's argv, the mapped generator
argv with the secret left out, the Swift storage URL, the exit status and any error): CBT keeps only stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from capture.rgw import loadgen  # noqa: E402
from capture.rgw.getput_format import header  # noqa: E402

PROG = "getput (capture.rgw.getput_cli)"
LOG_ENV = "CEPHQOS_GETPUT_LOG"


class ShimError(Exception):
    """An option or credential this program cannot honour; the message names it."""


#: getput 8df6328's options: (flags, dest, takes a value, default); in getput's order
OPTIONS: list[tuple[tuple[str, ...], str, bool, Any]] = [
    (("-c", "--cname"), "cname", True, None), (("-d", "--debug"), "debug", True, "0"),
    (("-n", "--nobjects"), "nobjects", True, None), (("-o", "--obj"), "oname", True, None),
    (("-p", "--policy"), "policy", True, ""), (("-r", "--runtime"), "runtime", True, None),
    (("-s", "--size"), "sizeset", True, None), (("-t", "--tests"), "tests", True, None),
    (("-h", "--help"), "help", False, False), (("-v", "--version"), "version", False, False),
    (("--echo",), "echo", False, False), (("--ldist",), "ldist", True, None),
    (("--nohead",), "nohead", False, False), (("--psum",), "psum", False, False),
    (("--putsperproc",), "putsperproc", False, False), (("--cont-nodelete",), "cont_nodelete", False, False),
    (("--ctype",), "ctype", True, "byproc"), (("--errmax",), "errmax", True, "5"),
    (("--exclog",), "exclog", True, None), (("--extra",), "extra", True, None),
    (("--headers",), "headers", True, None), (("--insecure",), "insecure", False, False),
    (("--latexc",), "latexc", True, None), (("--logops",), "logops", True, "0"),
    (("--mixopts",), "mixopts", True, ""), (("--objopts",), "objopts", True, ""),
    (("--objoffset",), "objoffset", True, "0"), (("--objseed",), "objseed", True, "0"),
    (("--printheader",), "printheader", False, False), (("--preauthtoken",), "preauthtoken", True, ""),
    (("--procs",), "procset", True, None), (("--proxies",), "proxies", True, ""),
    (("--quiet",), "quiet", False, False), (("--quiton404",), "quiton404", False, False),
    (("--range",), "range", True, ""), (("--repeat",), "repeats", True, None),
    (("--retries",), "retries", True, None), (("--retry-on-ratelimit",), "retry_on_ratelimit", False, False),
    (("--sleeps",), "sleeps", True, None), (("--s3",), "s3", False, False), (("--scheme",), "scheme", True, ""),
    (("--warnexit",), "warnexit", False, False), (("--creds",), "creds", True, None),
    (("--rank",), "rank", True, "0"), (("--sync",), "synctime", True, None), (("--utc",), "utc", False, False),
    # not getput's: CBT's mkgetputcmd passes it when its YAML sets `grace`
    (("--grace",), "grace", True, None),
]

#: options whose use (a value other than getput's default) cannot be honoured, and why
REFUSED = {
    "nobjects": "a number of objects per process: the generator runs each test for --runtime seconds",
    "ldist": "latency histogram columns are not printed by the generator",
    "nohead": "the generator always prints getput's header",
    "putsperproc": "PutsPerProc lines are not printed by the generator",
    "exclog": "latency exception logs are not written by the generator",
    "latexc": "stopping on a latency exception is not implemented by the generator",
    "extra": "X-Trans-Id-Extra is a Swift header; the generator speaks S3",
    "headers": "extra Swift headers; the generator speaks S3",
    "insecure": "TLS is not used here (http endpoints only)",
    "preauthtoken": "a Swift token; the generator speaks S3",
    "proxies": "direct proxy-server addressing is Swift's; the generator talks to ST_AUTH's host",
    "quiton404": "GET tests are not run by this program",
    "range": "ranged GETs are not run by this program",
    "repeats": "--repeat is not implemented: CBT's iterations repeat a test",
    "retry_on_ratelimit": "the generator never retries a failed call",
    "sleeps": "getput's test-point sleeps are not implemented",
    "s3": "getput's S3 mode (RGW_* credentials, HTTPS to RGW_HOST:RGW_PORT) is not what CBT runs; give Swift "
          "credentials (ST_AUTH/ST_USER/ST_KEY), mapped onto S3 as the module doc says",
    "scheme": "the scheme is ST_AUTH's",
    "warnexit": "the generator prints no warnings to exit on",
    "synctime": "a synchronised start time across clients is not implemented (one client here)",
    "utc": "UTC-suffixed container names and the Timestamp column are not implemented",
    "policy": "a Swift storage policy; the generator speaks S3",
    "mixopts": "mixed tests are not run by this program",
    "objopts": "object naming options (a, c, f, m, r, u) are not implemented",
    "objoffset": "object number offsets are not implemented",
    "objseed": "random object names are not implemented",
    "grace": "not an option of getput 8df6328 (CBT passes it when its YAML sets `grace`; getput itself stops "
             "with 'invalid command')",
}


def _flag(dest: str) -> str:
    return "/".join(next(f for f, d, _, _ in OPTIONS if d == dest))


def option_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="getput", add_help=False, allow_abbrev=True,
                                 description="getput 8df6328's command line on capture.rgw.loadgen (S3)")
    for flags, dest, value, default in OPTIONS:
        if value:
            ap.add_argument(*flags, dest=dest, default=default)
        else:
            ap.add_argument(*flags, dest=dest, action="store_true", default=default)
    ap.add_argument("extra_args", nargs="*")
    return ap


def parse(argv: list[str]) -> argparse.Namespace:
    """getput's options; an unknown option or a missing value is a :class:`ShimError` naming it."""
    ap = option_parser()
    ap.error = lambda msg: (_ for _ in ()).throw(ShimError(f"command line: {msg}"))  # type: ignore[method-assign]
    return ap.parse_args(argv)


_CRED = re.compile(r"(ST|OS|RGW|SWIFTCLIENT)_(.*)=(.*)")


def credentials(creds_file: str | None, environ: Mapping[str, str]) -> dict[str, str]:
    """getput's ``parse_creds`` (not ``--s3``): ST_*/OS_* from ``environ``, the creds file's lines overriding;
    returns ``{"ST_AUTH", "ST_USER", "ST_KEY"}`` or raises naming what is missing or unsupported."""
    st = {k: environ.get(k, "") for k in ("ST_AUTH", "ST_USER", "ST_KEY")}
    os_ = {k: v for k, v in environ.items() if k.startswith("OS_") and v}
    if creds_file:
        try:
            text = Path(creds_file).read_text()
        except OSError as e:
            raise ShimError(f"--creds {creds_file}: cannot read it ({e.strerror})") from None
        for ln in text.splitlines():
            if re.match(r"#|\s*$", ln):
                continue
            m = _CRED.search(ln)
            if m:
                value = m.group(3).strip(";'\"")
                if m.group(1) == "ST":
                    st["ST_" + m.group(2)] = value
                elif m.group(1) in ("OS", "SWIFTCLIENT"):
                    os_[f"{m.group(1)}_{m.group(2)}"] = value
    have = [k for k in ("ST_AUTH", "ST_USER", "ST_KEY") if st.get(k)]
    if os_ and have:
        raise ShimError("credentials: both ST_ and OS_ style variables are set (getput allows one kind)")
    if os_:
        raise ShimError(f"credentials: OS_* (Keystone) variables ({', '.join(sorted(os_))}) are not supported: "
                        "give ST_AUTH, ST_USER and ST_KEY (radosgw's Swift auth v1), as CBT writes them")
    if len(have) != 3:
        missing = [k for k in ("ST_AUTH", "ST_USER", "ST_KEY") if not st.get(k)]
        raise ShimError(f"credentials: {', '.join(missing)} not set (expected ST_AUTH, ST_USER and ST_KEY in the "
                        "environment or the --creds file, as getput reads them)")
    return {k: st[k] for k in ("ST_AUTH", "ST_USER", "ST_KEY")}


def s3_endpoint(st_auth: str) -> str:
    """radosgw's Swift auth URL → its S3 endpoint (scheme://host:port)."""
    u = urlsplit(st_auth)
    if u.scheme not in ("http", "https") or not u.netloc or not u.path.startswith("/auth"):
        raise ShimError(f"credentials: ST_AUTH {st_auth!r} is not a radosgw Swift auth URL "
                        "(expected http(s)://host:port/auth/v1.0): the S3 endpoint is taken from it")
    if u.scheme == "https":
        raise ShimError(f"credentials: ST_AUTH {st_auth!r} is https; the generator is run over http only here")
    return f"{u.scheme}://{u.netloc}"


def _size_ok(s: str) -> bool:
    return re.fullmatch(r"\d+[kmg]?", s, re.I) is not None


def mapping(argv: list[str], environ: Mapping[str, str]) -> tuple[list[str], dict[str, Any]]:
    """getput's argv → (capture.rgw.loadgen's argv, facts: credentials, endpoint, …); :class:`ShimError` when
    an option or credential cannot be honoured (module doc)."""
    o = parse(argv)
    if o.extra_args:
        raise ShimError(f"extra command argument(s) {o.extra_args}: getput takes none")
    defaults = {d: default for _, d, _, default in OPTIONS}
    for dest, why in REFUSED.items():
        if getattr(o, dest) != defaults[dest]:
            raise ShimError(f"{_flag(dest)} {getattr(o, dest) if getattr(o, dest) is not True else ''}".rstrip()
                            + f": not supported ({why})")
    if o.retries is not None and o.retries != "0":
        raise ShimError(f"--retries {o.retries}: not supported (the generator never retries a failed call: "
                        "botocore retries off, Ret 0; only --retries 0 is what it does)")
    for dest, what in (("debug", "debugging output masks"), ("logops", "per-operation logs")):
        if str(getattr(o, dest)) != "0":
            raise ShimError(f"{_flag(dest)} {getattr(o, dest)}: not supported ({what} are not implemented; "
                            "only 0, getput's default)")
    if not o.tests:
        raise ShimError("-t/--tests: required (getput: 'define test list with -t')")
    tests = o.tests.split(",")
    if tests != ["p"]:
        other = [t for t in tests if t != "p"] or tests
        raise ShimError(f"-t/--tests {o.tests}: only 'p' (PUT) is run by this program; {other[0]!r} is not "
                        "(getput's GET reads each object written once within twice the runtime, its deletes and "
                        "random or mixed tests are not implemented)")
    if not o.cname:
        raise ShimError("-c/--cname: required (getput: 'specify container name with -c')")
    if not o.oname:
        raise ShimError("-o/--obj: required for a put test (getput: 'get, put and delete tests require object "
                        "name')")
    if not o.sizeset:
        raise ShimError("-s/--size: required (getput: 'object size required')")
    if "," in o.sizeset or not _size_ok(o.sizeset):
        raise ShimError(f"-s/--size {o.sizeset}: expected one size, a number or a number + k/m/g "
                        "(several sizes are not supported)")
    procs = o.procset or "1"
    if not re.fullmatch(r"\d+", procs) or int(procs) < 1:
        raise ShimError(f"--procs {procs}: expected one process count ≥ 1 (a list of counts is not supported)")
    if o.runtime is None:
        raise ShimError("-r/--runtime: required (this program runs a test for a time; -n is not supported)")
    if not re.fullmatch(r"\d+", o.runtime) or int(o.runtime) < 1:
        raise ShimError(f"-r/--runtime {o.runtime}: expected whole seconds ≥ 1 (getput: an integer)")
    if o.ctype not in ("shared", "bynode", "byproc"):
        raise ShimError(f"--ctype {o.ctype}: expected shared, bynode or byproc")
    if not re.fullmatch(r"\d+", str(o.errmax)):
        raise ShimError(f"--errmax {o.errmax}: expected an integer")
    if not re.fullmatch(r"\d+", str(o.rank)):
        raise ShimError(f"--rank {o.rank!r}: expected an integer (an empty rank is not supported)")
    cred = credentials(o.creds, environ)
    endpoint = s3_endpoint(cred["ST_AUTH"])
    out = ["--endpoint", endpoint, "--access", cred["ST_USER"], "--secret", cred["ST_KEY"],
           "--cname", o.cname, "--oname", o.oname, "--rank", str(o.rank), "--ctype", o.ctype,
           "--procs", str(int(procs)), "--osize", o.sizeset.lower(), "--runtime", str(int(o.runtime)),
           "--tests", "p", "--errmax", str(int(o.errmax))] + (["--psum"] if o.psum else [])
    facts = {"auth_url": cred["ST_AUTH"], "user": cred["ST_USER"], "key": cred["ST_KEY"], "endpoint": endpoint,
             "echo": o.echo, "printheader": o.printheader, "help": o.help, "version": o.version,
             "rank": str(o.rank)}
    return out, facts


def swift_auth(url: str, user: str, key: str, timeout: float = 30) -> str:
    """Swift auth v1 against radosgw: the storage URL, or :class:`ShimError` naming the user and the answer."""
    req = urllib.request.Request(url, headers={"X-Auth-User": user, "X-Auth-Key": key})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            storage = r.headers.get("X-Storage-Url")
            token = r.headers.get("X-Auth-Token")
    except urllib.error.HTTPError as e:
        raise ShimError(f"credentials: Swift auth at {url} refused ST_USER {user!r} (HTTP {e.code}): the gateway "
                        "has no such Swift user or key") from None
    except OSError as e:
        raise ShimError(f"credentials: Swift auth at {url}: no answer ({e})") from None
    if not storage or not token:
        raise ShimError(f"credentials: Swift auth at {url} answered without X-Storage-Url/X-Auth-Token: not "
                        "radosgw's Swift auth")
    return storage


def _log(record: dict[str, Any], environ: Mapping[str, str]) -> None:
    path = environ.get(LOG_ENV)
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(record) + "\n")


def _redacted(argv: list[str]) -> list[str]:
    return [("…" if i and argv[i - 1] == "--secret" else a) for i, a in enumerate(argv)]


def main(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    environ = os.environ if environ is None else environ
    rec: dict[str, Any] = {"time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "pid": os.getpid(), "getput_argv": argv}
    try:
        o = parse(argv)
        if o.help:
            option_parser().print_help()
            return 0
        if o.version:
            print("getput 8df6328's command line on capture.rgw.loadgen (S3; cephqos-lab)")
            return 0
        if o.printheader:
            print(header(o.rank or None))
            return 0
        largv, facts = mapping(argv, environ)
        rec.update(loadgen_argv=_redacted(largv), endpoint=facts["endpoint"], auth_url=facts["auth_url"],
                   user=facts["user"])
        rec["swift_storage_url"] = swift_auth(facts["auth_url"], facts["user"], facts["key"])
        if facts["echo"]:
            print("# " + " ".join([sys.argv[0]] + argv), flush=True)
        try:
            rc = loadgen.main(largv)
        except Exception as e:  # botocore's ClientError and friends: name what the gateway said
            code = getattr(e, "response", {}).get("Error", {}).get("Code")
            if code in ("InvalidAccessKeyId", "SignatureDoesNotMatch"):
                raise ShimError(f"credentials: S3 at {facts['endpoint']} refused access key {facts['user']!r} "
                                f"({code}): the gateway needs an S3 key for the Swift subuser with access key = "
                                "ST_USER and secret = ST_KEY (capture.rgw.cbt makes it)") from None
            raise
    except ShimError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        rec.update(exit=2, error=str(e))
        _log(rec, environ)
        return 2
    except BaseException as e:
        rec.update(exit=1, error=f"{type(e).__name__}: {e}"[:2000])
        _log(rec, environ)
        raise
    rec["exit"] = rc
    _log(rec, environ)
    return rc


if __name__ == "__main__":
    sys.exit(main())
