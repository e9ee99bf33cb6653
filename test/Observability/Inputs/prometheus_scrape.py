"""A real Prometheus server scrapes a running 2-rank program.

    prometheus_scrape.py WORKDIR -- rtx-launch -n 2 ... -- PROGRAM ARGS...

Starts Debian's prometheus on a free loopback port with a generated config
that scrapes http://127.0.0.1:P/metrics and P+1 every 200 ms, runs the
launch command with `--metrics-port P --metrics-linger 10 --metrics
WORKDIR/metrics.jsonl --steps 20` appended to the program's arguments,
and, while the ranks linger after their last step, reads the series back
through Prometheus' HTTP query API (/api/v1/query) and compares them with
rank 0's JSON metrics lines, within the rounding of those lines (0.1 token/s,
1 us per step). Prints one line per agreement; fails with the numbers
otherwise. Prometheus is stopped in every case.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

STEPS = 20


def free_port(pair=False):
    """A free loopback port (and the next one free too, with pair)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if not pair or port >= 65535:
            return port
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port + 1))
                return port
            except OSError:
                continue
    sys.exit("no free port pair")


def query(base, expression, at=None):
    """The latest scraped sample of each series of the selector `expression`,
    now or at the Unix time `at`.

    A scrape that fails (on a loaded machine one can take longer than the
    200 ms timeout) makes Prometheus mark every series of that target stale,
    and a plain instant query then returns nothing for it. last_over_time
    over a range skips the staleness markers and answers with the last real
    sample, which is what this test compares."""
    args = {"query": f"last_over_time({expression}[1m])"}
    if at is not None:
        args["time"] = repr(at)
    url = base + "/api/v1/query?" + urllib.parse.urlencode(args)
    with urllib.request.urlopen(url, timeout=30) as response:
        answer = json.load(response)
    assert answer["status"] == "success", answer
    return answer["data"]["result"]


def main():
    work = sys.argv[1]
    assert sys.argv[2] == "--"
    command = sys.argv[3:]
    metrics_port, prometheus_port = free_port(pair=True), free_port()
    config = os.path.join(work, "prometheus.yml")
    with open(config, "w") as f:
        f.write(f"""global:
  scrape_interval: 200ms
  scrape_timeout: 200ms
scrape_configs:
  - job_name: rtx
    static_configs:
      - targets: ['127.0.0.1:{metrics_port}', '127.0.0.1:{metrics_port + 1}']
""")
    log = open(os.path.join(work, "prometheus.log"), "w")
    server = subprocess.Popen(
        ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={work}/tsdb",
         f"--web.listen-address=127.0.0.1:{prometheus_port}"],
        stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{prometheus_port}"
    run = None
    try:
        deadline = time.time() + 60
        while True:
            try:
                with urllib.request.urlopen(base + "/-/ready", timeout=1) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.time() > deadline:
                sys.exit("prometheus did not become ready: see " + log.name)
            time.sleep(0.2)
        print("prometheus: ready")

        jsonl = os.path.join(work, "metrics.jsonl")
        run = subprocess.Popen(command + [
            "--steps", str(STEPS), "--metrics", jsonl, "--metrics-port", str(metrics_port),
            "--metrics-linger", "10"], stdout=subprocess.DEVNULL)
        # Every step of both ranks scraped: each count reaches STEPS while
        # the ranks linger. Prometheus may scrape a target for the first time
        # only seconds after another (seen on a loaded machine), so this
        # waits for both rather than for rank 0.
        deadline = time.time() + 120
        while True:
            counts = query(base, 'step_time_ms_count{job="rtx"}')
            done = sorted(c["metric"]["rank"] for c in counts if float(c["value"][1]) == STEPS)
            if done == ["0", "1"]:
                # Every later query is evaluated at this instant: on a
                # loaded machine the queries below may run after the ranks
                # stopped lingering.
                seen_at = counts[0]["value"][0]
                break
            if run.poll() is not None or time.time() > deadline:
                sys.exit(f"prometheus never saw step {STEPS} of both ranks (last: {counts})")
            time.sleep(0.2)
        # The program flushes a step's JSON line before /metrics shows the
        # step, so every line is there now.
        rows = [json.loads(line) for line in open(jsonl)]
        assert [r["step"] for r in rows] == list(range(1, STEPS + 1)), rows

        def value(expression):
            result = query(base, expression, seen_at)
            assert len(result) == 1, (expression, result)
            return result[0]["metric"], float(result[0]["value"][1])

        labels, tokens = value('tokens_per_s{job="rtx",rank="0"}')
        assert labels["mesh"] == "dp:2" and labels["run"], labels
        # The JSON lines round tokens_per_s to 0.1 and step times to 1 us.
        assert abs(tokens - rows[-1]["tokens_per_s"]) <= 0.05 + 1e-6 * tokens, (tokens, rows[-1])
        print(f"tokens_per_s: agree (prometheus {tokens:.3f}, json {rows[-1]['tokens_per_s']})")
        _, total = value('step_time_ms_sum{job="rtx",rank="0"}')
        expected = sum(r["step_time_ms"] for r in rows)
        assert abs(total - expected) <= 0.0005 * STEPS + 1e-6, (total, expected)
        print(f"step_time_ms_sum: agree (prometheus {total:.4f}, json {expected:.4f})")
        times = sorted(r["step_time_ms"] for r in rows)
        for q, rank in ((0.5, 10), (0.99, 20)):  # nearest rank of 20 values
            _, quantile = value(f'step_time_ms{{job="rtx",rank="0",quantile="{q:g}"}}')
            assert abs(quantile - times[rank - 1]) <= 0.0005 + 1e-9, (q, quantile, times)
            print(f"step_time_ms p{int(q * 100)}: agree (prometheus {quantile:.4f}, json {times[rank - 1]:.3f})")
        ranks = sorted(r["metric"]["rank"] for r in query(base, 'step_time_ms_count{job="rtx"}', seen_at))
        assert ranks == ["0", "1"], ranks
        print(f"ranks scraped: {', '.join(ranks)}")
        if run.wait(timeout=60) != 0:
            sys.exit(f"the launch failed with status {run.returncode}")
    finally:
        if run and run.poll() is None:
            run.kill()
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as failure:
        # The reason first, on one line: a CI log that is cut keeps the start.
        print(f"prometheus_scrape: check failed: {failure}", file=sys.stderr, flush=True)
        raise
