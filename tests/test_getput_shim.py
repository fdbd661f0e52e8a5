"""capture.rgw.getput_cli (CBT's getput ``cmd_path`` here) and capture.rgw.cbt without a cluster: getput's
command line as CBT 9d6480f builds it mapped onto the load generator, every option it cannot honour refused
by name, the credentials CBT writes mapped onto S3, the Swift auth check against a local fake server, the YAML
CBT is given, and the archive check.

The CBT command line below is ``benchmark/getput.py``'s ``mkgetputcmd`` worked by hand for the shipped
campaign (container_prefix and object_prefix CBT's default ``cbt-getput``, byproc, gateway 0, host ``vm``);
the credential file is what its ``mkcredfiles`` writes through Debian's ``sh`` (``echo -e`` prints ``-e``)."""

from __future__ import annotations

import http.server
import time
import threading
from pathlib import Path

import pytest
import yaml

from capture.ceph.campaign import CampaignError
from capture.rgw import cbt as rcbt
from capture.rgw import getput_cli as gc
from capture.rgw.runner import RgwError
from conftest import ROOT

CRED = ("-e export ST_AUTH=http://127.0.0.1:7480/auth/v1.0\nexport ST_USER=cbt:swift\n"
        "export ST_KEY=vzCEkuryfn060dfee4fgQPqFrncKEIkh3ZcdOANY\n")
CBT_ARGV = ["-ccbt-getput-gw0", "-ocbt-getput-vm-gw0", "-s4194304", "-tp", "--procs", "8", "--runtime", "60",
            "--ctype", "byproc"]


@pytest.fixture
def cred(tmp_path):
    p = tmp_path / "gw00.cred"
    p.write_text(CRED)
    return p


def test_cbts_command_line_maps_onto_the_generator(cred):
    argv, facts = gc.mapping(CBT_ARGV + ["--cred", str(cred)], {})
    assert argv == ["--endpoint", "http://127.0.0.1:7480", "--access", "cbt:swift",
                    "--secret", "vzCEkuryfn060dfee4fgQPqFrncKEIkh3ZcdOANY", "--cname", "cbt-getput-gw0",
                    "--oname", "cbt-getput-vm-gw0", "--rank", "0", "--ctype", "byproc", "--procs", "8",
                    "--osize", "4194304", "--runtime", "60", "--tests", "p", "--errmax", "5"]
    assert facts["auth_url"] == "http://127.0.0.1:7480/auth/v1.0" and facts["user"] == "cbt:swift"
    # the generator's own parser takes it, with getput's names for buckets and keys
    from capture.rgw import loadgen
    a = loadgen.parser().parse_args(argv)
    assert loadgen.parse_size(a.osize) == 4 << 20
    assert [loadgen.bucket(a, i) for i in (0, 7)] == ["cbt-getput-gw0-0-0", "cbt-getput-gw0-0-7"]
    assert loadgen.key(a, 3, 0) == "cbt-getput-vm-gw0-0-3-1"  # getput numbers objects from 1
    assert a.errmax == 5 and a.rank == "0"


def test_getputs_defaults_and_spellings(cred):
    """getput's defaults (ctype byproc, errmax 5, rank 0, procs 1) and its option spellings: long names,
    separate values, k/m/g sizes, optparse-style unique abbreviations (CBT's --cred)."""
    argv, _ = gc.mapping(["--cname", "c", "--obj", "o", "--size", "4M", "--tests", "p", "--runtime", "5",
                          "--cre", str(cred), "--psum", "--errmax", "2", "--rank", "3", "--ctype", "shared",
                          "-d", "0", "--logops", "0", "--retries", "0", "--quiet", "--cont-nodelete"], {})
    d = dict(zip(argv[::2], argv[1::2]))
    assert argv[-1] == "--psum" and d["--osize"] == "4m" and d["--procs"] == "1" and d["--errmax"] == "2"
    assert d["--rank"] == "3" and d["--ctype"] == "shared"
    argv, _ = gc.mapping(["-cc", "-oo", "-s1k", "-tp", "-r", "5", "--cred", str(cred)], {})
    assert dict(zip(argv[::2], argv[1::2]))["--ctype"] == "byproc"


def test_credentials_from_the_environment_and_the_file_overrides():
    env = {"ST_AUTH": "http://gw:8080/auth/1.0", "ST_USER": "u:swift", "ST_KEY": "k"}
    argv, facts = gc.mapping(["-cc", "-oo", "-s1k", "-tp", "-r5"], env)
    assert argv[:6] == ["--endpoint", "http://gw:8080", "--access", "u:swift", "--secret", "k"]
    with pytest.raises(gc.ShimError, match=r"ST_USER, ST_KEY not set"):
        gc.credentials(None, {"ST_AUTH": "http://gw/auth"})
    with pytest.raises(gc.ShimError, match=r"OS_\* \(Keystone\) variables \(OS_AUTH_URL, OS_PASSWORD"):
        gc.credentials(None, {"OS_AUTH_URL": "http://ks", "OS_PASSWORD": "p"})
    with pytest.raises(gc.ShimError, match="both ST_ and OS_"):
        gc.credentials(None, {**env, "OS_AUTH_URL": "http://ks"})


def test_the_file_overrides_the_environment(tmp_path, cred):
    c = gc.credentials(str(cred), {"ST_AUTH": "http://other:1/auth", "ST_USER": "x", "ST_KEY": "y"})
    assert c == {"ST_AUTH": "http://127.0.0.1:7480/auth/v1.0", "ST_USER": "cbt:swift",
                 "ST_KEY": "vzCEkuryfn060dfee4fgQPqFrncKEIkh3ZcdOANY"}
    with pytest.raises(gc.ShimError, match=r"--creds .*nope: cannot read it"):
        gc.credentials(str(tmp_path / "nope"), {})


@pytest.mark.parametrize("url, msg", [
    ("http://127.0.0.1:7480/v1/AUTH_x", "is not a radosgw Swift auth URL"),
    ("ftp://127.0.0.1/auth/v1.0", "is not a radosgw Swift auth URL"),
    ("https://127.0.0.1:443/auth/v1.0", "is https; the generator is run over http only"),
])
def test_an_auth_url_that_is_not_radosgws_is_refused(url, msg):
    with pytest.raises(gc.ShimError, match=msg):
        gc.s3_endpoint(url)


@pytest.mark.parametrize("extra, msg", [
    (["-n", "100"], r"-n/--nobjects 100: not supported \(a number of objects per process"),
    (["--grace", "30"], r"--grace 30: not supported \(not an option of getput 8df6328"),
    (["--debug", "1"], r"-d/--debug 1: not supported"),
    (["--logops", "1"], r"--logops 1: not supported"),
    (["--ldist", "1"], r"--ldist 1: not supported"),
    (["--utc"], r"--utc: not supported"),
    (["--s3"], r"--s3: not supported \(getput's S3 mode"),
    (["--retries", "5"], r"--retries 5: not supported \(the generator never retries"),
    (["-p", "gold"], r"-p/--policy gold: not supported \(a Swift storage policy"),
    (["--objopts", "r"], r"--objopts r: not supported"),
    (["--putsperproc"], r"--putsperproc: not supported"),
    (["--repeat", "2"], r"--repeat 2: not supported"),
    (["--sync", "1700000000"], r"--sync 1700000000: not supported"),
    (["--bogus"], r"command line: unrecognized arguments: --bogus"),
    (["stray"], r"extra command argument\(s\) \['stray'\]"),
    (["-t", "p,g"], r"-t/--tests p,g: only 'p' \(PUT\) is run by this program; 'g' is not"),
    (["-t", "d"], r"-t/--tests d: only 'p'"),
    (["-s", "4m,1m"], r"-s/--size 4m,1m: expected one size"),
    (["-s", "4x"], r"-s/--size 4x: expected one size"),
    (["--procs", "8,16"], r"--procs 8,16: expected one process count"),
    (["--runtime", "1.5"], r"-r/--runtime 1.5: expected whole seconds"),
    (["--ctype", "bynodegw"], r"--ctype bynodegw: expected shared, bynode or byproc"),
    (["--rank", ""], r"--rank '': expected an integer"),
])
def test_options_it_cannot_honour_fail_naming_the_option(cred, extra, msg):
    base = dict(zip(["-c", "-o", "-s", "-t", "--procs", "--runtime"], ["c", "o", "4m", "p", "8", "60"]))
    argv = [x for k, v in base.items() if not any(e == k for e in extra) for x in (k, v)]
    with pytest.raises(gc.ShimError, match=msg):
        gc.mapping(argv + extra + ["--cred", str(cred)], {})


@pytest.mark.parametrize("drop, msg", [("-c", r"-c/--cname: required"), ("-o", r"-o/--obj: required"),
                                       ("-s", r"-s/--size: required"), ("-t", r"-t/--tests: required"),
                                       ("--runtime", r"-r/--runtime: required")])
def test_required_options_are_named(cred, drop, msg):
    base = {"-c": "c", "-o": "o", "-s": "4m", "-t": "p", "--runtime": "60"}
    argv = [x for k, v in base.items() if k != drop for x in (k, v)]
    with pytest.raises(gc.ShimError, match=msg):
        gc.mapping(argv + ["--cred", str(cred)], {})


def test_main_refuses_with_exit_2_and_logs_the_invocation(cred, tmp_path, capsys):
    log = tmp_path / "shim.jsonl"
    rc = gc.main(CBT_ARGV + ["--grace", "5", "--cred", str(cred)], {gc.LOG_ENV: str(log)})
    assert rc == 2
    assert "getput (capture.rgw.getput_cli): --grace 5: not supported" in capsys.readouterr().err
    import json
    rec = json.loads(log.read_text())
    assert rec["exit"] == 2 and rec["getput_argv"][-1] == str(cred) and "--grace 5" in rec["error"]


def test_printheader_is_getputs_header_with_its_rank_column(capsys):
    assert gc.main(["--printheader"], {}) == 0
    out = capsys.readouterr().out
    assert out.startswith("Rank Test  Clts Proc  OSize  Start     End        MB/Sec   Ops   Ops/Sec Errs")
    assert out.rstrip().endswith("LatRange   %CPU Ret")


class _FakeSwift(http.server.BaseHTTPRequestHandler):
    """radosgw's Swift auth v1 answer (204, X-Storage-Url, X-Auth-Token) for one user and key."""
    def do_GET(self):  # noqa: N802
        if self.path == "/auth/v1.0" and self.headers.get("X-Auth-User") == "cbt:swift" \
                and self.headers.get("X-Auth-Key") == "k":
            self.send_response(204)
            self.send_header("X-Storage-Url", f"http://127.0.0.1:{self.server.server_port}/swift/v1")
            self.send_header("X-Auth-Token", "AUTH_rgwtk0")
        else:
            self.send_response(403 if self.path.startswith("/auth") else 404)
        self.end_headers()

    def log_message(self, *a):
        pass


@pytest.fixture
def fake_swift():
    srv = http.server.HTTPServer(("127.0.0.1", 0), _FakeSwift)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()


def test_swift_auth_gives_the_storage_url_or_names_the_refused_user(fake_swift):
    assert gc.swift_auth(fake_swift + "/auth/v1.0", "cbt:swift", "k") == fake_swift + "/swift/v1"
    with pytest.raises(gc.ShimError, match=r"refused ST_USER 'cbt:swift' \(HTTP 403\)"):
        gc.swift_auth(fake_swift + "/auth/v1.0", "cbt:swift", "wrong")


# --- the CBT side: the YAML CBT is given and the archive check --------------------------------------------

CAMPAIGN = ROOT / "capture" / "campaigns" / "rgw-cbt-2026.yaml"


def test_the_shipped_campaign_is_rgw_2026s_regime_and_gives_cbt_the_shim():
    doc = rcbt.load(CAMPAIGN)
    ref = yaml.safe_load((ROOT / "capture" / "campaigns" / "rgw-2026.yaml").read_text())
    assert doc["cluster"] == ref["cluster"]
    assert {k: doc["load"][k] for k in ("procs", "osize", "put_s")} == {"procs": 8, "osize": "4m", "put_s": 60}
    assert doc["repeats"] >= 3 and [a["name"] for a in doc["arms"]] == ["cbt-bucket-per-proc"]
    arm = doc["arms"][0]
    assert (arm["shards"], arm["ctype"]) == (1, "byproc")  # rgw-2026's bucket-per-proc arm
    cfg = rcbt.cbt_config(doc, arm, conf_file="/c/ceph.conf", mon_addr="127.0.0.1:6789", tmp_dir="/t", port=7480)
    g = cfg["benchmarks"]["getput"]
    assert g["cmd_path"] == str(ROOT / "capture" / "rgw" / "getput-shim") and Path(g["cmd_path"]).stat().st_mode & 0o111
    assert g["auth"] == [["http://127.0.0.1:7480/auth/v1.0"]]  # nested: CBT permutes top-level lists
    assert (g["procs"], g["op_size"], g["runtime"], g["test"], g["ctype"]) == (8, 4194304, 60, "p", "byproc")
    assert (g["user"], g["key"]) == ("cbt", rcbt.CBT_KEY)
    c = cfg["cluster"]
    assert c["use_existing"] is True and c["is_teuthology"] is True and c["iterations"] == doc["repeats"]
    assert c["head"] == "localhost" and c["clients"] == ["localhost"] and c["conf_file"] == "/c/ceph.conf"
    # iterations 1… need their getput run folder made beforehand: the path CBT 9d6480f's getput.py builds
    # (the one named in the first campaign attempt's failure: "…/00000001/Getput/…/gw00.cred: cannot read it")
    dirs = [str(d) for d in rcbt.getput_run_dirs(cfg, "/t")]
    assert dirs == [f"/t/0000000{i}/Getput/osd_ra-00000000/op_size-04194304/procs-00000008/p/byproc"
                    for i in range(1, doc["repeats"])]


def test_cbts_permutation_would_turn_a_flat_auth_list_into_a_string():
    """Why auth is nested: benchmarkfactory.all_configs (CBT 9d6480f) worked by hand — each top-level list is
    a permutation axis, so a one-element list reaches getput.py as its element."""
    import itertools
    for auth, want in ((["http://gw/auth/v1.0"], "http://gw/auth/v1.0"), ([["http://gw/auth/v1.0"]],
                                                                           ["http://gw/auth/v1.0"])):
        got = [dict(zip(["auth"], p)) for p in itertools.product(auth)]
        assert got == [{"auth": want}]


@pytest.mark.parametrize("change, msg", [
    (lambda d: d["load"].update(get_s=20), "load.get_s must be 0"),
    (lambda d: d["load"].update(put_s=10.5), "load.put_s must be whole seconds"),
    (lambda d: d["arms"].append({"name": "rados", "rados": True}), r"arms \['rados'\]: rados bench arms"),
    (lambda d: d.update(cbt={"getput": {"grace": 5}}), r"cbt.getput sets \['grace'\]"),
    (lambda d: d.update(repeats=2), r"'repeats' must be an integer ≥ min_repeats \(3\)"),
])
def test_a_campaign_cbts_getput_cannot_run_is_refused_naming_the_key(change, msg):
    d = yaml.safe_load(CAMPAIGN.read_text())
    change(d)
    with pytest.raises(CampaignError, match=msg):
        rcbt.validate(d)


def _archive(tmp, iters, text, ctype="byproc"):
    for i in iters:
        d = tmp / "results" / f"{i:08d}" / "id-f40aab80" / "osd_ra-00000128" / "op_size-04194304" / \
            "procs-00000008" / "p" / ctype
        d.mkdir(parents=True)
        (d / "output.gw0.localhost").write_text(text)


TOTAL = ("Rank Test  Clts Proc  OSize  Start     End        MB/Sec   Ops   Ops/Sec Errs Latency  Median    LatRange"
         "   %CPU Ret\n0    put      1    8     4m  05:40:40  05:41:40     8.40   126      2.10    0   3.800   3.700"
         "  1.00-09.00  12.00   0\n")


def test_the_archive_check_wants_one_put_total_per_iteration_and_a_clean_shim(tmp_path):
    doc = rcbt.load(CAMPAIGN)
    arm = doc["arms"][0]
    ok = [{"exit": 0}] * 3
    _archive(tmp_path / "a", range(3), TOTAL)
    got = rcbt.check_archive(tmp_path / "a", doc, arm, ok)
    assert [g["iteration"] for g in got] == [0, 1, 2] and {g["mib_s"] for g in got} == {8.4}
    assert got[0]["ops"] == 126 and got[0]["procs"] == 8
    _archive(tmp_path / "b", range(2), TOTAL)
    with pytest.raises(RgwError, match=r"holds 2 getput outputs \(iterations \['00000000', '00000001'\]\), expected"):
        rcbt.check_archive(tmp_path / "b", doc, arm, ok)
    with pytest.raises(RgwError, match="the shim ran 3 times for 3 iterations; failed: boom"):
        rcbt.check_archive(tmp_path / "a", doc, arm, [{"exit": 0}, {"exit": 2, "error": "boom"}, {"exit": 0}])
    _archive(tmp_path / "c", range(3), TOTAL.split("\n")[0] + "\n")  # header only: getput stopped
    with pytest.raises(RgwError, match=r"output.gw0.localhost: no put total line of 8 processes"):
        rcbt.check_archive(tmp_path / "c", doc, arm, ok)


# --- ingest of a CBT getput archive in the layout CBT wrote in the smoke run here -------------------------
#
# FAKE GENERATOR, LABELLED AS SUCH: the output.gw0 files below are what the shim prints (capture.rgw.getput_cli.main,
# the real option mapping, Swift auth against the local fake server above, loadgen's real main and getput_format)
# when loadgen's S3 part is replaced (no buckets made; run_test returns chosen per-process results).  The archive
# around them copies the names and folders CBT 9d6480f wrote on this machine in the smoke run of 2026-11-27
# (`make capture-rgw-cbt-smoke`): results/cbt_config.yaml, results/<iteration>/id-<hash>/osd_ra-…/op_size-…/
# procs-…/p/byproc/{output.gw0,ceph_settings.out,historic_ops.out (empty)}.localhost, gzipped file by file, no
# benchmark_config.yaml (CBT's Getput.run never writes one).  A test on the shipped real archive comes with it.

def _fake_shim_output(monkeypatch, capsys, fake_swift, tmp_path, ops: int) -> str:
    from capture.rgw import getput_format as gf
    from capture.rgw import loadgen
    t0 = time.mktime((2026, 11, 27, 6, 0, 0, 0, 0, -1))

    def run_test(a, test):  # 8 processes, each `ops` PUTs of a.osize_b in exactly 60 s, latency 3.2 s
        return [gf.ProcResult(ops=ops, errs=0, latencies=[3.2] * ops, t0=t0, tf=t0 + 60, xfer=a.osize_b)
                for _ in range(a.procs)], 41.5, {}
    monkeypatch.setattr(loadgen, "run_test", run_test)
    monkeypatch.setattr(loadgen, "create_buckets", lambda a: None)
    cred = tmp_path / f"gw00-{ops}.cred"
    cred.write_text(CRED.replace("http://127.0.0.1:7480", fake_swift).replace(rcbt.CBT_KEY, "k"))
    capsys.readouterr()
    assert gc.main(CBT_ARGV + ["--cred", str(cred)], {}) == 0
    return capsys.readouterr().out


def test_ingest_reads_a_cbt_getput_archive_with_its_iterations_as_repeats(monkeypatch, capsys, fake_swift,
                                                                          tmp_path):
    import gzip
    import json
    from analysis.ingest.manifest import write_manifest
    from analysis.ingest.walk import ingest
    from capture.cbt.__main__ import gzip_tree
    doc = rcbt.load(CAMPAIGN)
    arm = doc["arms"][0]
    top = tmp_path / "data" / "rgw-cbt-2026"
    archive = top / "cbt-bucket-per-proc"
    cfg = rcbt.cbt_config(doc, arm, conf_file="/c/ceph.conf", mon_addr="127.0.0.1:6789", tmp_dir="/t", port=7480)
    (archive / "results").mkdir(parents=True)
    (archive / "results" / "cbt_config.yaml").write_text(yaml.safe_dump({**cfg,
                                                                        "monitoring_profiles": {"collectl": {}}}))
    ops = {0: 15, 1: 18, 2: 12}  # MiB/s: 8 × ops × 4 / 60 = 8.00, 9.60, 6.40
    for it, n in ops.items():
        out = archive / "results" / f"{it:08d}" / "id-f40aab80" / "osd_ra-00000000" / "op_size-04194304" / \
            "procs-00000008" / "p" / "byproc"
        out.mkdir(parents=True)
        text = _fake_shim_output(monkeypatch, capsys, fake_swift, tmp_path, n)
        assert text.startswith("Rank Test  Clts Proc") and len(text.splitlines()) == 2  # CBT passes no --psum
        (out / "output.gw0.localhost").write_text(text)
        (out / "ceph_settings.out.localhost").write_text(json.dumps({"osd_op_queue": "wpq",
                                                                      "osd_mclock_profile": "high_client_ops"}))
        (out / "historic_ops.out.localhost").write_text("")
    assert gzip_tree(archive) == 7  # cbt_config.yaml, 3 × (output, settings); the empty historic_ops stays
    h = top / "harness" / "cbt-bucket-per-proc"  # the harness record (run.json written last, not gzipped)
    h.mkdir(parents=True)
    (h / "run.json").write_text(json.dumps({"campaign": "rgw-cbt-2026", "arm": arm["name"], "origin": "measured"}))
    write_manifest(tmp_path / "data")
    r = ingest(tmp_path / "data")  # strict: every file listed, none unrecognised
    failed = r.files[r.files["status"] == "failed"]
    assert set(r.files["status"]) == {"ok", "context"}, failed[["path", "error"]].to_string()
    assert (r.files["kind"] == "getput").sum() == 3
    s = r.summary
    bw = s[(s["kind"] == "getput") & (s["metric"] == "bw")].sort_values("repeat")
    assert list(bw["repeat"]) == [0, 1, 2]
    assert list(bw["value"] / (1 << 20)) == pytest.approx([8.00, 9.60, 6.40])
    assert set(bw["procs"]) == {8} and set(bw["ctype"].astype(str)) == {"byproc"}
    assert set(bw["op_size"]) == {4194304} and set(bw["benchmark"].astype(str)) == {"getput"}
    assert set(bw["archive"].astype(str)) == {"rgw-cbt-2026/cbt-bucket-per-proc"}
    assert set(bw["op_queue"].astype(str)) == {"wpq"} and bw["profile"].isna().all()  # what the OSD ran
    lat = s[(s["kind"] == "getput") & (s["metric"] == "lat_mean")]
    assert set(lat["value"]) == {3.2e9}
    meta = json.loads(r.files[r.files["kind"] == "getput"]["meta_json"].iloc[0])
    assert meta["cbt"] == {"osd_ra": 0, "op_size": 4194304, "procs": 8, "test": "p", "ctype": "byproc",
                           "gateway": 0}
    assert meta["checks"]["cbt_op_size"] == "ok" and meta["checks"]["cbt_procs"] == "ok"
    with gzip.open(sorted(archive.rglob("output.gw0.localhost.gz"))[0], "rt") as f:  # iteration 0
        assert f.read().splitlines()[1].startswith("0    put      1    8     4m  06:00:00  06:01:00     8.00   120")


def test_the_generators_own_names_and_lines_are_unchanged_without_a_rank():
    """rgw-2026's runs (no --rank): buckets <cname>-<proc>, keys <proc>-<n> from 0, no Rank column; with getput's
    rank the Rank column leads and the harness's total_line still finds the total."""
    from capture.rgw import getput_format as gf
    from capture.rgw import loadgen
    from capture.rgw.runner import total_line
    a = loadgen.parser().parse_args(["--endpoint", "http://h:1", "--access", "a", "--secret", "s", "--cname", "gp",
                                     "--ctype", "byproc"])
    assert (loadgen.bucket(a, 3), loadgen.key(a, 3, 0), a.errmax) == ("gp-3", "3-0", None)
    a.ctype = "bynode"
    assert loadgen.bucket(a, 3) == "gp"  # bynode is shared on one node
    b = loadgen.parser().parse_args(["--endpoint", "http://h:1", "--access", "a", "--secret", "s", "--cname", "gp",
                                     "--ctype", "bynode", "--rank", "2", "--oname", "ob"])
    assert (loadgen.bucket(b, 3), loadgen.key(b, 3, 9)) == ("gp-2", "ob-2-3-10")
    assert gf.header("0") == "Rank " + gf.header()
    t0 = 1_800_000_000.0
    r = gf.ProcResult(ops=12, errs=1, latencies=[2.5] * 12, t0=t0, tf=t0 + 60, xfer=4 << 20)
    lines = gf.test_lines("p", [r, r], 30.0, rank="0")
    assert lines == ["0    " + ln for ln in gf.test_lines("p", [r, r], 30.0)]
    assert total_line("\n".join([gf.header("0")] + lines), "put") == {"procs": 2, "mib_s": 1.6, "ops": 24,
                                                                       "ops_s": 0.4, "errs": 2, "lat_s": 2.5}


def test_cbt_layout_context_takes_keys_from_getputs_folders_only(tmp_path):
    from analysis.ingest.context import cbt_layout_context
    top = tmp_path / "rgw-cbt-2026" / "arm" / "results" / "00000002" / "id-0abc"
    leaf = top / "osd_ra-00000128" / "op_size-01048576" / "procs-00000016" / "p" / "shared"
    assert cbt_layout_context(top, tmp_path) == {"repeat": 2, "run": "rgw-cbt-2026/arm/results/00000002/id-0abc",
                                                 "archive": "rgw-cbt-2026/arm", "context_source": "cbt"}
    assert cbt_layout_context(leaf, tmp_path) == {"benchmark": "getput", "osd_ra": 128, "op_size": 1048576,
                                                  "procs": 16, "ctype": "shared"}
    rados = top / "osd_ra-00000128" / "op_size-01048576" / "concurrent_ops-00000016" / "write" / "x"
    for d in (rados, leaf.parent, top.parent, tmp_path / "results" / "0002" / "id-0abc"):
        assert cbt_layout_context(d, tmp_path) == {}
