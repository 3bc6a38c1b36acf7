// plainjob on better-sqlite3: jobs added and processed a second, one
// producer adding one job at a time (better-sqlite3 is synchronous: one
// process adds one job after another) and --clients worker processes, each
// its own connection and one plainjob worker, as plainjob's README scales
// out ("Multi-process Workers"): a plainjob worker takes one job at a time.
// The backlog is kept under --backlog so that adds and completions run at the
// same rate. A job's processor does nothing.
//
//   node plainjob.mjs --db PATH [--clients 16] [--seconds 10] [--warmup 1]
import Database from "better-sqlite3";
import { better, defineQueue, defineWorker, JobStatus } from "plainjob";
import { fileURLToPath } from "node:url";
import { flags, measure, print, serveCount, sleep, spawnWorker } from "./window.mjs";

const opts = flags({ db: "", clients: 16, seconds: 10, warmup: 1, backlog: 1000, role: "producer" });
if (!opts.db) throw new Error("--db PATH is required");
const quiet = { error: console.error, warn: console.error, info() {}, debug() {} };
// plainjob sets journal_mode WAL and synchronous NORMAL itself.
const queue = defineQueue({ connection: better(new Database(opts.db)), logger: quiet });

if (opts.role === "worker") {
  let done = 0;
  // Polls every 5 ms when it finds nothing (plainjob's default is 1 s).
  const worker = defineWorker("job", () => { done++; }, { queue, logger: quiet, pollIntervall: 5 });
  serveCount(() => done);
  process.on("SIGTERM", async () => { await worker.stop(); queue.close(); process.exit(0); });
  await worker.start();
} else {
  const self = fileURLToPath(import.meta.url);
  const workers = Array.from({ length: opts.clients }, () => spawnWorker(self, process.argv.slice(2)));
  await Promise.all(workers.map((w) => w.ready));

  let added = 0, running = true;
  const producer = (async () => {
    while (running) {
      if (queue.countJobs({ status: JobStatus.Pending }) < opts.backlog) {
        for (let i = 0; i < 50; i++) { queue.add("job", { n: added }); added++; }
      }
      await sleep(0); // lets the timers and the workers' answers in
    }
  })();
  const r = await measure({ workers, warmup: opts.warmup, seconds: opts.seconds, added: () => added });
  running = false;
  await producer;
  await Promise.all(workers.map((w) => w.stop()));
  queue.close();
  print("peer_plainjob_jobs_per_s", r.donePerS.toFixed(0), "1/s");
  print("peer_plainjob_adds_per_s", r.addedPerS.toFixed(0), "1/s");
  print("peer_plainjob_jobs_measured", r.done, "count");
  process.exit(0);
}
