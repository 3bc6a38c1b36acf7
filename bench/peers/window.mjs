// What the job-queue peers share: their flags, the measured window and the
// `name value unit` lines bench/run reads (as every bench program prints).
import { fork } from "node:child_process";

// Flags: --name value pairs, with defaults for the ones not given.
export function flags(defaults) {
  const out = { ...defaults };
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, "");
    if (!(key in defaults)) throw new Error(`unknown flag ${argv[i]}`);
    out[key] = typeof defaults[key] === "number" ? Number(argv[i + 1]) : argv[i + 1];
  }
  return out;
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
export const print = (name, value, unit) => console.log(`${name} ${value} ${unit}`);

// A worker process: this same file run with --role worker. Each answers "count"
// with the jobs it has processed, so that the window counts finished jobs only.
export function spawnWorker(file, args) {
  const child = fork(file, [...args, "--role", "worker"], { stdio: "inherit" });
  const replies = [];
  child.on("message", (m) => replies.shift()?.(m));
  const ready = new Promise((resolve) => replies.push(resolve));
  return {
    ready,
    count() {
      return new Promise((resolve) => {
        replies.push(resolve);
        child.send("count");
      });
    },
    stop() {
      child.kill("SIGTERM");
      return new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

// In a worker process: says it is ready, then answers each "count"; ends
// with its parent (whose exit, even a crash, closes the channel), so that no
// worker is left polling.
export function serveCount(getCount) {
  process.send("ready");
  process.on("message", () => process.send(getCount()));
  process.on("disconnect", () => process.exit(0));
}

// Jobs finished a second, summed over the workers, between warmup and
// warmup + seconds; the jobs added in the same window, from the producer.
export async function measure({ workers, warmup, seconds, added }) {
  const total = async () => (await Promise.all(workers.map((w) => w.count()))).reduce((a, b) => a + b, 0);
  await sleep(warmup * 1000);
  const t0 = performance.now(), done0 = await total(), added0 = added();
  await sleep(seconds * 1000);
  const t1 = performance.now(), done1 = await total(), added1 = added();
  const s = (t1 - t0) / 1000;
  return { donePerS: (done1 - done0) / s, addedPerS: (added1 - added0) / s, done: done1 - done0 };
}
