// BullMQ on Redis: jobs added and processed a second, 16 producers adding
// one job at a time and one Worker of concurrency 16 (in its own process)
// processing them; the queue's backlog is kept under --backlog so that adds
// and completions run at the same rate. A job's processor does nothing: what
// is measured is the queue's own cost of a job, its "cycle".
//
//   node bullmq.mjs --port REDIS_PORT [--clients 16] [--seconds 10] [--warmup 1]
import { Queue, Worker } from "bullmq";
import { fileURLToPath } from "node:url";
import { flags, measure, print, serveCount, sleep, spawnWorker } from "./window.mjs";

const opts = flags({ port: 6379, clients: 16, seconds: 10, warmup: 1, backlog: 1000, role: "producer" });
const connection = { host: "127.0.0.1", port: opts.port, maxRetriesPerRequest: null };
const QUEUE = "bench";

if (opts.role === "worker") {
  let done = 0;
  // Finished jobs are removed at once (as a queue that keeps no history):
  // the least work Redis can do per job.
  const worker = new Worker(QUEUE, async () => { done++; },
    { connection, concurrency: opts.clients, removeOnComplete: { count: 0 }, removeOnFail: { count: 0 } });
  await worker.waitUntilReady();
  serveCount(() => done);
  process.on("SIGTERM", async () => { await worker.close(); process.exit(0); });
} else {
  const queue = new Queue(QUEUE, { connection });
  await queue.obliterate({ force: true });
  const worker = spawnWorker(fileURLToPath(import.meta.url), process.argv.slice(2));
  await worker.ready;

  let added = 0, running = true, waiting = 0;
  const poll = (async () => {
    while (running) { waiting = await queue.getWaitingCount(); await sleep(20); }
  })();
  const producer = async () => {
    while (running) {
      if (waiting >= opts.backlog) { await sleep(1); continue; }
      await queue.add("job", { n: added });
      added++;
    }
  };
  const producers = Array.from({ length: opts.clients }, producer);
  const r = await measure({ workers: [worker], warmup: opts.warmup, seconds: opts.seconds, added: () => added });
  running = false;
  await Promise.all([...producers, poll]);
  await worker.stop();
  await queue.close();
  print("peer_bullmq_jobs_per_s", r.donePerS.toFixed(0), "1/s");
  print("peer_bullmq_adds_per_s", r.addedPerS.toFixed(0), "1/s");
  print("peer_bullmq_jobs_measured", r.done, "count");
  process.exit(0);
}
